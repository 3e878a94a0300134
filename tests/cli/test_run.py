"""`recovery-proxy run -- CMD` (issue 14), end to end: the wrapper is a real OS process, its
child a real agent command (tests/cli/run_child.py: the openai SDK, and httpx for Anthropic), the
provider the loopback mock of tests/upstream.py, which answers with the tool result it
received, so the child sees exactly what the model was shown."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from recovery_proxy.cli.main import build_parser
from recovery_proxy.cli.run import run_settings
from recovery_proxy.demo.mock_model import completion
from recovery_proxy.session.keys import scoped, tenant_of
from tests.upstream import ROOT, UpstreamMock, upstream_mock

REPO = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).resolve().parent / "run_child.py"
BLOCK = "[Error Recovery Context]"
SALT = "recovery-proxy"


def echo_chat(request: httpx.Request) -> httpx.Response:
    """The model's reply is the last tool result it was shown."""
    payload = orjson.loads(request.content)
    shown = payload["messages"][-1]["content"]
    return httpx.Response(200, json=completion({"role": "assistant", "content": shown}, "m"))


def echo_messages(request: httpx.Request) -> httpx.Response:
    payload = orjson.loads(request.content)
    result = payload["messages"][-1]["content"][0]
    shown = result["content"]
    text = shown if isinstance(shown, str) else "".join(b.get("text", "") for b in shown)
    body = {
        "id": "msg_01Echo",
        "type": "message",
        "role": "assistant",
        "model": payload["model"],
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return httpx.Response(200, json=body)


@pytest.fixture
def provider() -> Iterator[UpstreamMock]:
    with upstream_mock(assert_all_called=False) as mock:
        mock.post(f"{ROOT}/v1/chat/completions").mock(side_effect=echo_chat)
        mock.post(f"{ROOT}/v1/messages").mock(side_effect=echo_messages)
        yield mock


def wrapper_env(**extra: str) -> dict[str, str]:
    """The caller's shell: its own base URLs point at the provider (the mock)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "RECOVERY_PROXY_"))
    }
    env.update(
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=f"{ROOT}/v1",
        ANTHROPIC_BASE_URL=ROOT,
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        PYTHONUNBUFFERED="1",
        RECOVERY_PROXY_HOT_RELOAD="false",
    )
    env.update(extra)
    return env


def start(flags: list[str], child: list[str], **env: str) -> subprocess.Popen[str]:
    """`python -m recovery_proxy run FLAGS -- python run_child.py ...` in its own process group (no
    terminal: signals reach it only when a test sends them)."""
    command = [sys.executable, "-m", "recovery_proxy", "run", *flags, "--"]
    command += [sys.executable, str(CHILD), *child]
    return subprocess.Popen(
        command,
        cwd=REPO,
        env=wrapper_env(**env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish(wrapper: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = wrapper.communicate(timeout=60)
    return wrapper.returncode, out, err


def wait_for(path: Path, wrapper: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not path.exists() or not path.read_text():
        if wrapper.poll() is not None:
            raise AssertionError(f"wrapper exited early: {finish(wrapper)}")
        assert time.monotonic() < deadline, "the child never got ready"
        time.sleep(0.05)


def expected_key(session: str, credential: str) -> str:
    return scoped(tenant_of({"authorization": credential}, SALT), f"h:{session}")


# ---- the whole run -----------------------------------------------------------------------


def test_run_wraps_an_openai_sdk_agent_and_exits_with_its_code(
    provider: UpstreamMock, tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    code, out, err = finish(start(["--session", "fix-1234"], [str(report), "exit", "3"]))
    assert code == 3, err  # the child's exit code
    seen: dict[str, Any] = json.loads(report.read_text())

    # The child was pointed at the proxy, under the session path.
    base = seen["env"]["OPENAI_BASE_URL"]
    assert base.startswith("http://127.0.0.1:") and base.endswith("/s/fix-1234/v1")
    assert seen["env"]["OPENAI_API_BASE"] == base
    assert seen["env"]["ANTHROPIC_BASE_URL"] == base.removesuffix("/v1")
    assert f":{ROOT.rsplit(':', 1)[1]}/" not in base  # not the provider itself

    # The model was shown the recovery block after the failed result; the child saw it.
    assert seen["chat"]["reply"].startswith("Error: ENOENT: no such file or directory")
    assert BLOCK in seen["chat"]["reply"]
    assert seen["chat"]["injected"] == "1"
    assert BLOCK in seen["messages"]["reply"]

    # The caller's own OPENAI_BASE_URL / ANTHROPIC_BASE_URL were the upstreams, reached
    # without the session prefix; the session was the one the path named.
    chat = next(r for r in provider.routes if r.path == "/v1/chat/completions")
    messages = next(r for r in provider.routes if r.path == "/v1/messages")
    assert chat.call_count == 1 and messages.call_count == 1
    assert BLOCK in orjson.loads(chat.calls.last.request.content)["messages"][-1]["content"]
    assert seen["chat"]["session"] == expected_key("fix-1234", "Bearer sk-test")
    assert not provider.unmatched

    # The summary, on stderr only.
    assert "recovery-proxy: session fix-1234" in err
    assert seen["chat"]["session"] in err
    assert "model requests 2, rewritten 2" in err
    assert "failures 2 (not_found 1, permission_denied 1)" in err
    assert "blocks injected 2, re-applied 0" in err
    assert "escalations 0, compactions 0" in err
    # usage the provider reported (15 tokens a response), both answers to failed results
    assert "tokens 30, in failure streaks 30 (100%), added by the proxy " in err
    assert "recovery-proxy" not in out
    assert "Traceback" not in err


GEMINI_CHILD = """
import json, os, sys, httpx
body = {"contents": [
    {"role": "user", "parts": [{"text": "Read the config."}]},
    {"role": "model", "parts": [{"functionCall": {"name": "read_file",
        "args": {"file_path": "/repo/src/config.ts"}}}]},
    {"role": "user", "parts": [{"functionResponse": {"name": "read_file",
        "response": {"error": "File not found: /repo/src/config.ts"}}}]},
]}
url = os.environ["GOOGLE_GEMINI_BASE_URL"] + "/v1beta/models/gemini-2.5-pro:generateContent"
r = httpx.post(url, json=body, headers={"x-goog-api-key": "AIza-test"}, trust_env=False)
json.dump({"status": r.status_code, "base": os.environ["GOOGLE_GEMINI_BASE_URL"],
           "session": r.headers.get("x-recovery-proxy-session")}, open(sys.argv[1], "w"))
"""


def test_gemini_cli_is_pointed_at_the_session_path_too(tmp_path: Path) -> None:
    """GOOGLE_GEMINI_BASE_URL (Gemini CLI, @google/genai: base URL + API version + method) is
    the session path; the caller's own becomes the Gemini upstream."""
    report = tmp_path / "gemini.json"
    with upstream_mock() as mock:
        route = mock.post(f"{ROOT}/v1beta/models/gemini-2.5-pro:generateContent").mock(
            return_value=httpx.Response(200, json={"candidates": []})
        )
        command = [sys.executable, "-m", "recovery_proxy", "run", "--session", "gem-1", "--quiet"]
        command += ["--", sys.executable, "-c", GEMINI_CHILD, str(report)]
        env = wrapper_env(GOOGLE_GEMINI_BASE_URL=ROOT)
        done = subprocess.run(
            command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 0, done.stderr
    seen = json.loads(report.read_text())
    assert seen["status"] == 200 and seen["base"].endswith("/s/gem-1")
    assert seen["session"] == scoped(tenant_of({"x-goog-api-key": "AIza-test"}, SALT), "h:gem-1")
    sent = orjson.loads(route.calls.last.request.content)
    error = sent["contents"][-1]["parts"][0]["functionResponse"]["response"]["error"]
    assert BLOCK in error


def test_quiet_suppresses_the_summary_and_each_run_gets_a_fresh_session(
    provider: UpstreamMock, tmp_path: Path
) -> None:
    sessions = []
    for n in range(2):
        report = tmp_path / f"report-{n}.json"
        code, _, err = finish(start(["--quiet"], [str(report), "exit", "0"]))
        assert code == 0, err
        assert err == ""
        seen = json.loads(report.read_text())
        assert BLOCK in seen["chat"]["reply"]
        session = seen["env"]["OPENAI_BASE_URL"].split("/s/", 1)[1].removesuffix("/v1")
        assert seen["chat"]["session"] == expected_key(session, "Bearer sk-test")
        # A fresh session: nothing earlier in it, so the block lists no previous attempts.
        assert "Previous attempts" not in seen["chat"]["reply"]
        sessions.append(session)
    assert sessions[0] != sessions[1]
    assert all(s.startswith("run-") for s in sessions)


def test_a_resumed_session_on_a_stored_file_counts_this_run_only(
    provider: UpstreamMock, tmp_path: Path
) -> None:
    flags = ["--session", "resume-9", "--store", f"sqlite:{tmp_path / 'sessions.db'}"]
    errs = []
    for n in range(2):
        code, _, err = finish(start(flags, [str(tmp_path / f"r{n}.json"), "exit", "0"]))
        assert code == 0, err
        errs.append(err)
    assert "tool results seen 2, failures 2" in errs[0]
    assert "blocks injected 2, re-applied 0" in errs[0]
    # The same conversation again: the blocks come back byte for byte from the store, and the
    # results were judged in the first run, not in this one.
    second = json.loads((tmp_path / "r1.json").read_text())
    assert (
        second["chat"]["reply"] == json.loads((tmp_path / "r0.json").read_text())["chat"]["reply"]
    )
    assert "tool results seen 0, failures 0" in errs[1]
    assert "blocks injected 0, re-applied 2" in errs[1]


def test_the_upstream_flag_wins_over_the_callers_base_url(
    provider: UpstreamMock, tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    dead = "http://127.0.0.1:9/v1"  # discard port: nothing answers there
    flags = ["--quiet", "--upstream", f"{ROOT}/v1", "--anthropic-upstream", ROOT]
    code, _, err = finish(
        start(flags, [str(report), "exit", "0"], OPENAI_BASE_URL=dead, ANTHROPIC_BASE_URL=dead)
    )
    assert code == 0, err
    assert BLOCK in json.loads(report.read_text())["chat"]["reply"]


def test_settings_precedence_flags_then_proxy_env_then_callers_base_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("RECOVERY_PROXY_UPSTREAM", "RECOVERY_PROXY_STORE"):
        monkeypatch.delenv(name, raising=False)
    caller = {"OPENAI_BASE_URL": "http://10.0.0.7:4000/v1/", "ANTHROPIC_BASE_URL": "http://a:1"}
    args = build_parser().parse_args(["run", "--", "agent"])
    settings = run_settings(args, caller)
    assert settings.upstream == "http://10.0.0.7:4000/v1"  # used as is: /v1 included
    assert settings.anthropic_upstream == "http://a:1"
    assert settings.store.kind == "memory"  # a run is one session
    legacy = run_settings(args, {"OPENAI_API_BASE": "http://10.0.0.8/v1"})
    assert legacy.upstream == "http://10.0.0.8/v1"
    assert run_settings(args, {}).upstream == "https://api.openai.com/v1"
    monkeypatch.setenv("RECOVERY_PROXY_UPSTREAM", "http://gateway:8000/v1")
    monkeypatch.setenv("RECOVERY_PROXY_STORE", "sqlite")
    settings = run_settings(args, caller)
    assert settings.upstream == "http://gateway:8000/v1"
    assert settings.store.kind == "sqlite"
    flagged = build_parser().parse_args(["run", "--upstream", "http://f/v1", "--store", "memory"])
    settings = run_settings(flagged, caller)
    assert (settings.upstream, settings.store.kind) == ("http://f/v1", "memory")


# ---- signals -----------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_wrapper_reaches_the_child_that_traps_it(
    provider: UpstreamMock, tmp_path: Path, sig: signal.Signals
) -> None:
    report = tmp_path / "report.json"
    wrapper = start([], [str(report), "trap", "7"])
    wait_for(report, wrapper)
    wrapper.send_signal(sig)
    code, _, err = finish(wrapper)
    assert Path(f"{report}.signal").read_text() == sig.name  # the child got it, once
    assert code == 7, err  # and its own exit code came out of the wrapper
    assert "model requests 2, rewritten 2" in err  # the proxy lived until the child was done
    assert "Traceback" not in err


def test_a_child_killed_by_the_signal_gives_128_plus_the_signal(
    provider: UpstreamMock, tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    wrapper = start(["--quiet"], [str(report), "wait"])
    wait_for(report, wrapper)
    wrapper.send_signal(signal.SIGTERM)
    code, _, err = finish(wrapper)
    assert code == 128 + signal.SIGTERM, err
    assert err == ""


def test_a_ctrl_c_at_the_terminal_reaches_the_child_once(
    provider: UpstreamMock, tmp_path: Path
) -> None:
    """Ctrl-C on a real terminal (a pty the wrapper has as its controlling terminal) signals
    the whole foreground group, wrapper and child: the wrapper must not send a second one."""
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "recovery_proxy", "run", "--quiet", "--"]
    command += [sys.executable, str(CHILD), str(report), "count", "5"]
    env = wrapper_env()
    pid, terminal = pty.fork()  # the child: a new session, the pty its controlling terminal
    if pid == 0:
        try:
            os.chdir(REPO)
            os.execve(command[0], command, env)
        finally:
            os._exit(127)  # never go on running the test suite in the forked child
    output = bytearray()
    try:
        deadline = time.monotonic() + 60
        while not report.exists() or not report.read_text():
            assert time.monotonic() < deadline, output.decode(errors="replace")
            output += drain(terminal, 0.05)
        os.write(terminal, b"\x03")  # the terminal's interrupt character
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0:
            assert time.monotonic() < deadline, output.decode(errors="replace")
            output += drain(terminal, 0.05)
    finally:
        os.close(terminal)
    assert os.waitstatus_to_exitcode(done[1]) == 5, output.decode(errors="replace")
    assert Path(f"{report}.signal").read_text() == "1"


def drain(fd: int, wait: float) -> bytes:
    """What the pty has written (it must be read, or a full buffer blocks the writers)."""
    ready, _, _ = select.select([fd], [], [], wait)
    if not ready:
        return b""
    try:
        return os.read(fd, 65536)
    except OSError:  # the other side closed
        return b""


# ---- usage errors ------------------------------------------------------------------------


def test_a_missing_command_is_127_and_a_bad_session_or_no_command_is_2(tmp_path: Path) -> None:
    env = wrapper_env()
    base = [sys.executable, "-m", "recovery_proxy", "run"]
    cases = [
        ([*base, "--quiet", "--", str(tmp_path / "no-such-agent")], 127, "command not found"),
        ([*base, "--session", "bad id", "--", "true"], 2, "--session"),
        ([*base, "--"], 2, "no command"),
    ]
    for command, code, message in cases:
        done = subprocess.run(
            command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == code, done.stderr
        assert message in done.stderr


def test_a_run_that_saw_no_request_says_what_to_check(tmp_path: Path) -> None:
    """An agent that ignores the base URLs it was given: the summary says so instead of
    printing five lines of zeros."""
    command = [sys.executable, "-m", "recovery_proxy", "run", "--", sys.executable, "-c", "pass"]
    done = subprocess.run(
        command, cwd=REPO, env=wrapper_env(), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert "(no requests)" in done.stderr
    given = "OPENAI_BASE_URL, OPENAI_API_BASE, ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL"
    assert f"it was given {given} and never used them" in done.stderr
    assert "the agent sent nothing through the proxy: check that it reads OPENAI_BASE_URL" in (
        done.stderr
    )


# ---- settings the proxy of a run honours -------------------------------------------------

SILENT_CLIENT = """\
import os, socket, sys, time, urllib.parse
url = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"])
sock = socket.create_connection((url.hostname, url.port))
sock.settimeout(5)
started = time.monotonic()
closed = sock.recv(1) == b""  # sends nothing: the proxy must hang up
sys.exit(0 if closed and time.monotonic() - started < 3 else 1)
"""


def test_run_honours_the_head_timeout() -> None:
    """It served with uvicorn's settings and not the proxy's: --head-timeout did nothing."""
    command = [sys.executable, "-m", "recovery_proxy", "run", "--quiet", "--head-timeout", "0.5"]
    done = subprocess.run(
        [*command, "--", sys.executable, "-c", SILENT_CLIENT],
        cwd=REPO,
        env=wrapper_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_run_logs_in_the_chosen_format_uvicorn_included() -> None:
    """uvicorn's lines came in its own `INFO:     ...` format whatever the log format was."""
    command = [sys.executable, "-m", "recovery_proxy", "run", "--quiet", "--log-level", "info"]
    done = subprocess.run(
        [*command, "--log-format", "json", "--", sys.executable, "-c", "pass"],
        cwd=REPO,
        env=wrapper_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    entries = [json.loads(line) for line in done.stderr.splitlines()]  # every line is JSON
    loggers = {entry["logger"] for entry in entries}
    assert {"uvicorn", "recovery_proxy"} <= loggers and "uvicorn.error" not in loggers
