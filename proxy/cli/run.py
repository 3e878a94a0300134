"""`recovery-proxy run [flags] -- CMD`: one agent command behind a proxy of its own.

The proxy runs in this process (uvicorn in a background thread with its own event loop) on a
loopback socket bound to port 0, so no other process can take the port between choosing and
binding it. The main thread owns the signals: uvicorn installs no handlers outside the main
thread, so SIGINT and SIGTERM reach our handlers, which pass them on to the child; the proxy is
stopped only after the child has exited (and the summary read), never by a signal.

CMD gets `OPENAI_BASE_URL` / `OPENAI_API_BASE` = `http://127.0.0.1:PORT/s/{session}/v1` and
`ANTHROPIC_BASE_URL` = `http://127.0.0.1:PORT/s/{session}` (a path-scoped session,
proxy/session/path.py); Codex, which reads no base-URL variable, gets `-c openai_base_url=...`
(proxy/cli/agent_routes.py). The caller's own `OPENAI_BASE_URL` (else `OPENAI_API_BASE`) and
`ANTHROPIC_BASE_URL` become the upstreams unless a flag or `RECOVERY_PROXY_*` variable names
one: `Settings.upstream` is an OpenAI base URL with its `/v1`, exactly what the SDKs read from
`OPENAI_BASE_URL`, and the Anthropic base is a root the SDK appends `/v1/messages` to.

The store defaults to `memory`: a run is one session, its summary is printed at the end, and the
state is gone with the proxy. `--store` (or `RECOVERY_PROXY_STORE`) keeps it, e.g. to resume a
`--session NAME` in a later run or to look at it with `sessions list`.

The summary counts what this proxy did, from three sources, each the most direct one:
- the rewrites it returned (a counting wrapper around the rewriter): requests, requests
  rewritten, texts injected for the first time / re-applied, requests refused by an escalation;
- its Prometheus counters (the proxy is dedicated to this run): failures by category,
  escalations, compactions;
- the session's `stats` in the store, as the difference from before this run touched it (so a
  resumed session counts this run only): tool results judged and loop notices. Until the tracker
  fills `stats.results`, the count of judged results falls back to the `seen` set.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvicorn

from recovery_proxy.cli.agent_routes import BASE_URL_VARIABLES, routed_command
from recovery_proxy.cli.fallbacks import run_fallbacks
from recovery_proxy.cli.run_summary import Summary, Tally, counting_factory, summarise
from recovery_proxy.cli.serve import StartupError, serve_settings, start_app
from recovery_proxy.config import Settings
from recovery_proxy.server.background import SERVER_OPTIONS
from recovery_proxy.server.protocol import with_head_timeout
from recovery_proxy.session import path as session_path

log = logging.getLogger("recovery_proxy")

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0


# ---- settings and the child's environment ------------------------------------------------


def run_settings(args: argparse.Namespace, environ: dict[str, str]) -> Settings:
    """Flags over `RECOVERY_PROXY_*` over the config file over run's own defaults (the caller's
    base URLs, the memory store, warnings only) over the defaults."""
    return serve_settings(args, run_fallbacks(environ))


def child_env(environ: dict[str, str], port: int, session: str) -> dict[str, str]:
    """The caller's environment with the base URLs pointing at this run's session path, and
    loopback exempted from any HTTP proxy the caller has configured."""
    base = f"http://127.0.0.1:{port}{session_path.PREFIX}{session}"
    env = dict(environ)
    env["OPENAI_BASE_URL"] = env["OPENAI_API_BASE"] = f"{base}/v1"
    # Gemini CLI (@google/genai) joins its base URL, the API version and the method, so the
    # session path survives: `{base}/v1beta/models/{model}:generateContent`.
    env["ANTHROPIC_BASE_URL"] = env["GOOGLE_GEMINI_BASE_URL"] = base
    for name in ("NO_PROXY", "no_proxy"):
        kept = [part for part in env.get(name, "").split(",") if part.strip()]
        if "127.0.0.1" not in kept:
            env[name] = ",".join([*kept, "127.0.0.1"])
    return env


def new_session_id() -> str:
    return f"run-{secrets.token_hex(6)}"


# ---- the proxy in a thread ---------------------------------------------------------------


class ProxyThread:
    """uvicorn serving `app` on a loopback socket it was handed, in a daemon thread, as `serve`
    runs it: its lines through the handler `logs.configure` set up, the head timeout set."""

    def __init__(self, app: Any, settings: Settings) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        config = uvicorn.Config(
            app,
            log_level=settings.log_level,
            log_config=None,  # not uvicorn's own format: the one `logs.configure` chose
            lifespan="on",
            **{**SERVER_OPTIONS, "http": with_head_timeout(settings.head_timeout)},
            timeout_graceful_shutdown=5,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run,
            kwargs={"sockets": [self.sock]},
            name="recovery-proxy",
            daemon=True,
        )

    def start(self, stop: Callable[[], bool]) -> bool:
        """Start and wait until /healthz answers 200; False if it died, timed out or `stop()`."""
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and not stop():
            if not self.thread.is_alive():
                return False
            if self.server.started and _healthy(self.port):
                return True
            time.sleep(0.02)
        return False

    def stop(self) -> None:
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(timeout=STOP_TIMEOUT)
        self.sock.close()


def _healthy(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


# ---- signals -----------------------------------------------------------------------------


class Forwarder:
    """Signal handlers for the main thread: a signal for the child is passed on to it; one that
    arrives before the child exists is held, and stops the run if the child never started.

    A SIGINT typed at the terminal already reached the child (it shares our process group,
    and must stay in the terminal's foreground group to read the terminal), so it is not sent
    a second time: it is passed on only when our group is not the terminal's foreground group
    (no terminal, or a `kill -INT` to the wrapper from elsewhere)."""

    def __init__(self) -> None:
        self.child: subprocess.Popen[bytes] | None = None
        self.held: list[int] = []  # signals that came while there was no child to pass them to
        self.previous: dict[int, Any] = {}

    def install(self) -> None:
        for sig in FORWARDED:
            self.previous[sig] = signal.signal(sig, self.handle)

    def restore(self) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.child is None:
            self.held.append(signum)
        else:
            self.send(signum)

    def adopt(self, child: subprocess.Popen[bytes]) -> None:
        """From now on signals go to `child`; those held while it was starting go first."""
        self.child = child
        while self.held:
            self.send(self.held.pop(0))

    def send(self, signum: int) -> None:
        child = self.child
        if child is None or child.returncode is not None:
            return
        if signum == signal.SIGINT and _terminal_sent_it():
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signum)


def _terminal_sent_it() -> bool:
    """Whether our process group is the foreground group of a terminal on stdin/out/err: then
    the terminal delivered the SIGINT to the whole group, the child included."""
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd):
                return os.tcgetpgrp(fd) == os.getpgrp()
        except OSError:
            continue
    return False


def exit_code(returncode: int) -> int:
    """A shell's convention: a child killed by signal N gives 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


# ---- the command -------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Run the proxy, then CMD against it; return CMD's exit code."""
    command = list(args.argv)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        print("recovery-proxy run: no command: run [flags] -- CMD [ARGS...]", file=sys.stderr)
        return 2
    session = args.session or new_session_id()
    if not session_path.valid_id(session):
        print(
            f"recovery-proxy run: --session {session!r}: use 1-128 of A-Z a-z 0-9 . _ : -",
            file=sys.stderr,
        )
        return 2
    environ = dict(os.environ)
    tally = Tally()
    try:
        settings = run_settings(args, environ)
        app = start_app(settings, counting_factory(tally))
    except StartupError as exc:
        print(f"recovery-proxy: {exc}", file=sys.stderr)
        return 2

    forwarder = Forwarder()
    forwarder.install()
    proxy = ProxyThread(app, settings)
    summary: Summary | None = None
    try:
        if not proxy.start(stop=lambda: bool(forwarder.held)):
            if forwarder.held:
                return 128 + forwarder.held[0]
            print("recovery-proxy: the proxy did not start (see the log above)", file=sys.stderr)
            return 2
        env = child_env(environ, proxy.port, session)
        command, switches = routed_command(command, env["OPENAI_BASE_URL"])
        code = _run_child(command, env, forwarder)
        if code is None:
            return 128 + forwarder.held[0]
        if not args.quiet:
            summary = summarise(tally, session, [*BASE_URL_VARIABLES, *switches])
    finally:
        proxy.stop()
        forwarder.restore()
    if summary is not None:
        print(summary.render(), file=sys.stderr, flush=True)
    return code


def _run_child(command: list[str], env: dict[str, str], forwarder: Forwarder) -> int | None:
    """Start CMD and wait for it; None if a signal came before it could start."""
    if forwarder.held:
        return None
    try:
        child = subprocess.Popen(command, env=env)
    except FileNotFoundError:
        print(f"recovery-proxy run: command not found: {command[0]}", file=sys.stderr)
        return 127
    except PermissionError:
        print(f"recovery-proxy run: permission denied: {command[0]}", file=sys.stderr)
        return 126
    forwarder.adopt(child)
    while True:
        try:
            return exit_code(child.wait())
        except KeyboardInterrupt:  # a handler installed by someone else: keep waiting
            continue
