"""Direct vs recovery-proxy vs LiteLLM Proxy, side by side in one run and one process tree.

    python -m bench.compare [--quick] [--litellm PATH] [--proxy-tree DIR] [--model NAME]
                            [--duration SECONDS] [--output PREFIX]

Setup: `pip install -r bench/requirements.txt` into the project venv; `bash bench/setup-litellm.sh`
for LiteLLM Proxy (its own venv, .venv-litellm; skipped with a note when absent); `apt-get
install wrk` for the throughput load (a Python asyncio client is the fallback, and says so).

One mock upstream (bench.mock_upstream: raw ASGI on uvloop + httptools) serves every path:
direct (client -> mock), recovery-proxy (client -> `recovery-proxy serve`, sqlite store in a
throwaway file -> mock), a bare relay (bench.floor_relay: the same HTTP parts forwarding bytes
unchanged, the floor for this stack) and LiteLLM (client -> `litellm`, one worker, passthrough
config -> mock). Measured: (1) sequential latency, each server on its own: requests alternate
direct / that server while no other server takes requests, at 10 / 100 / 1,000 messages with
~10% failing tool results, a "growing session" row where every request adds one new tool call
and result, and an "after idle" row (the machine idle for 50 ms before each request, as between
an agent's turns); then the sizes once more with direct / recovery-proxy / LiteLLM interleaved
request by request; (2) throughput at 32 keep-alive connections with 100-message bodies (wrk);
(3) start-up, spawn to first 200 on the health endpoint. Writes bench/results.md and
bench/results.png (--quick: bench/results-quick.*).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import gc
import hashlib
import http.client
import importlib.util
import json
import os
import platform
import re
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson

from bench.common import ROOT, conversation, percentiles
from recovery_proxy.server.background import free_port

# A 1M-token window: even 1,000 messages (~100k tokens) stay far from it. Near a model's window
# the proxy counts tokens exactly, a different (slower) path: try --model gpt-4o-mini (128k).
MODEL = "gpt-4.1"
LITELLM_VERSION = "1.102.4"
SIZES = (10, 100, 1000)
CONNECTIONS = 32
SETTLE = 0.005  # seconds after each LiteLLM request, so its background work is not counted
GROW_BASE, GROW_TURNS = 80, 20  # growing sessions: 80 messages + 20 new turns -> 82..120
TARGETS = ("direct", "recovery-proxy", "litellm")
HEALTH = {"recovery-proxy": "/healthz", "litellm": "/health/liveliness", "floor": "/v1/models"}
IDLE = 0.05  # seconds the machine is left idle before each request in the "after idle" row
# No outside connections from LiteLLM: bundled cost map and templates, no DB, no telemetry.
LITELLM_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_LOCAL_BLOG_POSTS": "True",
    "LITELLM_LOCAL_POLICY_TEMPLATES": "True",
    "LITELLM_LOCAL_AUTOROUTER_PRESETS": "True",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
    "LITELLM_LOG": "ERROR",
    "LITELLM_TELEMETRY": "False",
    "DO_NOT_TRACK": "1",
    "HF_HUB_OFFLINE": "1",
}
LITELLM_ENV_DROP = ("DATABASE_URL", "LITELLM_MASTER_KEY", "STORE_MODEL_IN_DB", "REDIS_HOST")
LITELLM_CONFIG = """\
model_list:
  - model_name: {model}
    litellm_params:
      model: openai/{model}
      api_base: {api_base}
      api_key: sk-dummy-upstream
litellm_settings:
  telemetry: false
  set_verbose: false
  turn_off_message_logging: true
general_settings:
  disable_spend_logs: true
  disable_error_logs: true
  background_health_checks: false
"""
# uvicorn access log off, warnings only: LiteLLM gets no per-request logging cost.
LITELLM_LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(levelname)s %(name)s %(message)s"}},
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "stream": "ext://sys.stderr",
        }
    },
    "loggers": {
        "uvicorn": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        "uvicorn.error": {"level": "WARNING"},
        "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
    },
}
WRK_SCRIPT = """\
local f = assert(io.open("{body}", "rb"))
local body = f:read("*a")
f:close()
local reqs = {{}}
local n = 0
init = function(args)
  for i = 0, {sessions} - 1 do
    reqs[i + 1] = wrk.format("POST", nil, {{
      ["content-type"] = "application/json",
      ["authorization"] = "Bearer sk-bench",
      ["x-session-id"] = "tp-" .. i,
    }}, body)
  end
end
request = function()
  n = n + 1
  return reqs[(n % {sessions}) + 1]
end
done = function(s, latency, requests)
  io.write(string.format("RESULT %d %d %d %d %d %d %d %d %d %d\\n",
    s.requests, s.duration, s.errors.connect, s.errors.read, s.errors.write,
    s.errors.status, s.errors.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
"""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- processes


def _proc_stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds used) of a live process, from /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / ticks


def machine_busy() -> float:
    """CPU seconds the whole machine has spent busy (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def cpu_probe() -> float:
    """Milliseconds a fixed pure-Python loop takes, best of 5: how fast the (shared) machine
    is right now, so runs can be compared; lower is faster."""
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        sum(i * i for i in range(1_000_000))
        best = min(best, time.perf_counter() - start)
    return best * 1000


def self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def own_cpu() -> float:
    """CPU seconds of this process and its reaped children."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def tree_cpu(pid: int) -> float:
    """CPU seconds used so far by `pid` and all its live descendants."""
    stats: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _proc_stat(int(entry))):
            stats[int(entry)] = stat
    total, todo, seen = 0.0, [pid], set()
    while todo:
        current = todo.pop()
        if current in seen or current not in stats:
            continue
        seen.add(current)
        total += stats[current][1]
        todo.extend(child for child, (parent, _) in stats.items() if parent == current)
    return total


class Server:
    """A server process in its own process group, output to a log file, stopped for sure."""

    def __init__(
        self,
        name: str,
        args: list[str],
        port: int,
        health: str,
        logdir: str,
        env: dict[str, str] | None = None,
        cwd: str = ROOT,
    ) -> None:
        self.name, self.args, self.port, self.health, self.cwd = name, args, port, health, cwd
        self.env = env if env is not None else dict(os.environ)
        self.log_path = os.path.join(logdir, f"{name}-{port}.log")
        self.proc: subprocess.Popen[bytes] | None = None
        self.spawned_at = 0.0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        with open(self.log_path, "wb") as out:
            self.spawned_at = time.perf_counter()
            self.proc = subprocess.Popen(
                self.args,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def wait_ready(self, timeout: float = 120.0) -> float:
        """Seconds from spawn to the first 200 on the health path."""
        assert self.proc is not None
        deadline = self.spawned_at + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self.proc.returncode} before it was ready; "
                    f"command: {shlex.join(self.args)}\n{self.log_tail()}"
                )
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
            try:
                conn.request("GET", self.health)
                response = conn.getresponse()
                response.read()
                if response.status == 200:
                    return time.perf_counter() - self.spawned_at
            except (OSError, http.client.HTTPException):
                pass
            finally:
                conn.close()
            if time.perf_counter() > deadline:
                raise RuntimeError(
                    f"{self.name} not ready after {timeout:.0f} s: {shlex.join(self.args)}\n"
                    f"{self.log_tail()}"
                )
            time.sleep(0.005)

    def cpu(self) -> float:
        return tree_cpu(self.proc.pid) if self.proc and self.proc.poll() is None else 0.0

    def wait_idle(self, timeout: float = 60.0, window: float = 0.5) -> float:
        """Seconds from spawn until the process tree goes quiet (< 4% of a core for `window`),
        so background start-up work (imports, warm-ups) is over before anything is timed."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            start, used = time.perf_counter(), self.cpu()
            time.sleep(window)
            if self.cpu() - used < 0.04 * window:
                return start - self.spawned_at
        log(f"warning: {self.name} still busy {timeout:.0f} s after start-up")
        return float("nan")

    def log_tail(self, lines: int = 25) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                tail = f.readlines()[-lines:]
        except OSError:
            return "(no log)"
        return f"--- last lines of {self.log_path}:\n" + "".join(tail)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@contextlib.contextmanager
def running(server: Server, timeout: float = 120.0) -> Iterator[Server]:
    try:
        server.start()
        server.wait_ready(timeout)
        yield server
    finally:
        server.stop()


def mock_server(logdir: str) -> Server:
    port = free_port()
    args = [sys.executable, "-m", "bench.mock_upstream", str(port)]
    return Server("mock", args, port, "/v1/models", logdir)


def proxy_server(upstream: str, store: str, logdir: str, tree: str) -> Server:
    port = free_port()
    args = [sys.executable, "-m", cli_module(tree), "serve", "--port", str(port)]
    args += ["--upstream", upstream, "--store", store, "--log-level", "warning"]
    env = {**os.environ, "PYTHONPATH": import_path(tree)}
    return Server("recovery-proxy", args, port, HEALTH["recovery-proxy"], logdir, env, cwd=tree)


def floor_server(upstream: str, logdir: str) -> Server:
    port = free_port()
    args = [sys.executable, "-m", "bench.floor_relay", str(port), upstream]
    return Server("floor", args, port, HEALTH["floor"], logdir)


def litellm_server(binary: str, upstream: str, workdir: str) -> Server:
    port = free_port()
    config = os.path.join(workdir, "litellm-config.yaml")
    with open(config, "w") as f:
        f.write(LITELLM_CONFIG.format(model=MODEL, api_base=upstream))
    log_config = os.path.join(workdir, "litellm-logging.json")
    with open(log_config, "w") as f:
        json.dump(LITELLM_LOG_CONFIG, f)
    args = [binary, "--config", config, "--host", "127.0.0.1", "--port", str(port)]
    args += ["--num_workers", "1", "--telemetry", "False", "--log_config", log_config]
    env = {k: v for k, v in os.environ.items() if k not in LITELLM_ENV_DROP}
    env.update(LITELLM_ENV)
    return Server("litellm", args, port, HEALTH["litellm"], workdir, env, cwd=workdir)


def find_litellm(explicit: str | None) -> str | None:
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise SystemExit(f"--litellm {explicit}: not an executable file")
        return explicit
    candidate = os.path.join(ROOT, ".venv-litellm", "bin", "litellm")
    return candidate if os.access(candidate, os.X_OK) else None


def litellm_version(binary: str) -> str:
    """ "VERSION (Python X.Y.Z)" of the litellm next to `binary`."""
    python = os.path.join(os.path.dirname(binary), "python")
    code = (
        "import importlib.metadata as m, sys; print(m.version('litellm'), sys.version.split()[0])"
    )
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
        version, python_version = out.stdout.split()
        return f"{version} (Python {python_version})"
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return "unknown"


# --------------------------------------------------------------------------- clients


class Client:
    """One keep-alive connection; `post` returns seconds, status and response headers."""

    def __init__(self, name: str, url: str) -> None:
        parts = urlsplit(url)
        self.name, self.path = name, parts.path
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)

    def post(self, body: bytes, session: str) -> tuple[float, http.client.HTTPResponse]:
        headers = {
            "content-type": "application/json",
            "authorization": "Bearer sk-bench",
            "x-session-id": session,
        }
        start = time.perf_counter()
        try:
            self.conn.request("POST", self.path, body, headers)
            response = self.conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as exc:
            self.conn.close()
            raise RuntimeError(f"{self.name}: POST {self.path} failed: {exc!r}") from exc
        elapsed = time.perf_counter() - start
        if response.status != 200:
            raise RuntimeError(f"{self.name}: HTTP {response.status}: {data[:500]!r}")
        return elapsed, response

    def close(self) -> None:
        self.conn.close()


@dataclass
class Samples:
    times: list[float] = field(default_factory=list)
    overhead_ms: list[float] = field(default_factory=list)  # the proxy's own header
    injected: list[int] = field(default_factory=list)
    cpu_s: float = 0.0
    requests: int = 0  # warm-up included, for CPU per request


def run_rounds(
    clients: dict[str, Client],
    servers: dict[str, Server],
    items: list[tuple[bytes, str, bool]],
    idle: float = 0.0,
) -> tuple[dict[str, Samples], float]:
    """Send each (body, session, timed) to every target in turn, rotating the order, the
    machine left `idle` seconds before each request.

    Returns the samples and the CPU other processes used meanwhile, in % of one core.
    """
    samples = {name: Samples() for name in clients}
    names = list(clients)
    cpu_before = {name: servers[name].cpu() for name in names if name in servers}
    busy, mine, wall = machine_busy(), self_cpu(), time.perf_counter()
    gc.collect()
    gc.disable()
    try:
        for i, (body, session, timed) in enumerate(items):
            k = i % len(names)
            for name in names[k:] + names[:k]:
                if idle:
                    time.sleep(idle)
                elapsed, response = clients[name].post(body, session)
                if name == "litellm":  # it keeps working after answering (logging, costs):
                    time.sleep(SETTLE)  # let that finish before the next target is timed
                sample = samples[name]
                sample.requests += 1
                if not timed:
                    continue
                sample.times.append(elapsed)
                if (overhead := response.getheader("x-recovery-proxy-overhead-ms")) is not None:
                    sample.overhead_ms.append(float(overhead))
                if (injected := response.getheader("x-recovery-proxy-injected")) is not None:
                    sample.injected.append(int(injected))
    finally:
        gc.enable()
    for name, before in cpu_before.items():
        samples[name].cpu_s = servers[name].cpu() - before
    ours = self_cpu() - mine + sum(sample.cpu_s for sample in samples.values())
    other = 100 * (machine_busy() - busy - ours) / (time.perf_counter() - wall)
    return samples, max(0.0, other)


def grow(client: Client, body: bytes, session: str) -> None:
    """Send `body`'s conversation the way an agent builds it, one tool turn per request, so
    each failure is annotated when it first arrives (a session first seen whole is only
    recorded: first sight annotates the newest batch alone). The timed requests then
    measure the steady state: every block re-applied byte for byte."""
    payload = orjson.loads(body)
    messages = payload["messages"]
    for end in range(4, len(messages), 2):
        client.post(orjson.dumps({**payload, "messages": messages[:end]}), session)


def steady_body(n: int) -> bytes:
    """`n` messages, every 10th tool result failing (at least one: 10 messages hold only 4)."""
    every = min(10, (n - 2) // 2)
    return orjson.dumps({"model": MODEL, "messages": conversation(n, failures_every=every)})


def steady_items(
    n: int, rounds: int, warmup: int, tag: str
) -> tuple[list[tuple[bytes, str, bool]], int]:
    body = steady_body(n)
    session = f"{tag}-steady-{n}"
    return [(body, session, False)] * warmup + [(body, session, True)] * rounds, len(body)


def new_turn(session: int, j: int) -> list[dict[str, Any]]:
    call_id = f"call_grow_{session:03d}_{j:03d}"
    failing = j % 3 == 0
    result = f"make: *** [Makefile:{j}: target{j}] Error 2" if failing else "built ok\n" * 8
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "bash", "arguments": f'{{"command": "make target{j}"}}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


def growing_items(rounds: int, tag: str) -> tuple[list[tuple[bytes, str, bool]], int]:
    """Sessions that start at 80 messages (seen once, untimed) and grow one turn per request."""
    items: list[tuple[bytes, str, bool]] = []
    sizes = []
    for s in range(max(1, -(-rounds // GROW_TURNS))):
        history = conversation(GROW_BASE, failures_every=10)
        session = f"{tag}-grow-{s}"
        items.append((orjson.dumps({"model": MODEL, "messages": history}), session, False))
        for j in range(GROW_TURNS):
            history = history + new_turn(s, j)
            body = orjson.dumps({"model": MODEL, "messages": history})
            items.append((body, session, True))
            sizes.append(len(body))
    return items, int(statistics.fmean(sizes))


IDLE_ROW = "100 after idle"


def pair_rows(
    target: str,
    servers: dict[str, Server],
    counts: dict[Any, int],
    warmup: int,
    body_sizes: dict[str, int],
) -> tuple[dict[str, dict[str, Samples]], dict[str, float]]:
    """Every sequential row for direct / `target`, interleaved request by request while no
    other server takes requests: samples per row, and other processes' CPU per row."""
    pair = ("direct", target)
    clients = {n: Client(n, f"{servers[n].base}/v1/chat/completions") for n in pair}
    plan: list[tuple[str, list[tuple[bytes, str, bool]], int, float]] = []
    for n in SIZES:
        items, size = steady_items(n, counts[n], warmup, target)
        plan.append((str(n), items, size, 0.0))
    items, size = growing_items(counts["grow"], target)
    plan.append(("100 growing", items, size, 0.0))
    items, size = steady_items(100, counts["idle"], 3, f"{target}-idle")
    plan.append((IDLE_ROW, items, size, IDLE))
    rows: dict[str, dict[str, Samples]] = {}
    other: dict[str, float] = {}
    try:
        for row, items, size, idle in plan:
            if target == "recovery-proxy" and "growing" not in row:
                grow(clients[target], items[0][0], items[0][1])  # built turn by turn
            rows[row], other[row] = run_rounds(clients, servers, items, idle)
            body_sizes[row] = size
            d, t = (percentiles(rows[row][n].times) for n in pair)
            log(
                f"{target} {row}: added p50 {t['p50'] - d['p50']:.2f} "
                f"p99 {t['p99'] - d['p99']:.2f} ms (direct p50 {d['p50']:.2f})"
            )
    finally:
        for client in clients.values():
            client.close()
    return rows, other


# --------------------------------------------------------------------------- load


@dataclass
class Load:
    requests: int
    seconds: float
    errors: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    cpu: dict[str, float]  # process -> % of one core

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def run_wrk(url: str, body_path: str, seconds: float, workdir: str) -> tuple[Load, float]:
    """wrk, one thread, 32 connections; returns the result and wrk's own CPU seconds."""
    script = os.path.join(workdir, "post.lua")
    with open(script, "w") as f:
        f.write(WRK_SCRIPT.format(body=body_path, sessions=CONNECTIONS))
    args = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds:g}s", "--timeout", "30s", "--latency"]
    args += ["-s", script, url]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(args, capture_output=True, text=True, timeout=seconds + 90)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wrk_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    match = re.search(r"^RESULT ([\d ]+)$", out.stdout, re.M)
    if out.returncode != 0 or not match:
        raise RuntimeError(f"wrk failed ({out.returncode}): {out.stdout}\n{out.stderr}")
    req, dur_us, e_conn, e_read, e_write, e_status, e_timeout, p50, p99, mx = map(
        int, match.group(1).split()
    )
    errors = e_conn + e_read + e_write + e_status + e_timeout
    load = Load(req, dur_us / 1e6, errors, p50 / 1000, p99 / 1000, mx / 1000, {})
    return load, wrk_cpu


async def _asyncio_load(url: str, body: bytes, seconds: float) -> Load:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    latencies: list[float] = []
    errors = 0
    stop_at = time.perf_counter() + seconds

    async def worker(i: int) -> None:
        nonlocal errors
        head = (
            f"POST {parts.path} HTTP/1.1\r\nhost: {host}:{port}\r\n"
            f"content-type: application/json\r\nauthorization: Bearer sk-bench\r\n"
            f"x-session-id: tp-{i}\r\ncontent-length: {len(body)}\r\n\r\n"
        ).encode()
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while time.perf_counter() < stop_at:
                start = time.perf_counter()
                writer.write(head + body)
                status_line = await reader.readline()
                length, chunked = 0, False
                while (line := await reader.readline()) not in (b"\r\n", b""):
                    key, _, value = line.decode("latin-1").partition(":")
                    if key.lower() == "content-length":
                        length = int(value)
                    elif key.lower() == "transfer-encoding" and "chunked" in value:
                        chunked = True
                if chunked:
                    while size := int((await reader.readline()).split(b";")[0], 16):
                        await reader.readexactly(size + 2)
                    await reader.readline()
                else:
                    await reader.readexactly(length)
                if b" 200 " not in status_line:
                    errors += 1
                latencies.append(time.perf_counter() - start)
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(CONNECTIONS)))
    elapsed = time.perf_counter() - started
    stats = percentiles(latencies or [0.0])
    return Load(len(latencies), elapsed, errors, stats["p50"], stats["p99"], 0.0, {})


def run_load(
    name: str,
    url: str,
    body: bytes,
    body_path: str,
    seconds: float,
    workdir: str,
    watch: dict[str, Server],
    use_wrk: bool,
) -> Load:
    before = {proc: server.cpu() for proc, server in watch.items()}
    busy = machine_busy()
    if use_wrk:
        load, client_cpu = run_wrk(url, body_path, seconds, workdir)
    else:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        load = asyncio.run(_asyncio_load(url, body, seconds))
        after = resource.getrusage(resource.RUSAGE_SELF)
        client_cpu = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
    load.cpu = {
        proc: 100 * (server.cpu() - before[proc]) / load.seconds for proc, server in watch.items()
    }
    load.cpu["load generator"] = 100 * client_cpu / load.seconds
    total = 100 * (machine_busy() - busy) / load.seconds
    load.cpu["other"] = max(0.0, total - sum(load.cpu.values()))
    if load.errors:
        log(f"  warning: {name}: {load.errors} errors under load")
    return load


# --------------------------------------------------------------------------- report


def fmt(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def machine() -> dict[str, str]:
    cpu = "unknown"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = ""
    with contextlib.suppress(OSError), open("/proc/meminfo") as f:
        mem = f"{int(f.readline().split()[1]) / 2**20:.0f} GiB"
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": mem,
        "kernel": platform.release(),
        "python": sys.version.split()[0],
    }


def old_layout(tree: str) -> bool:
    """A tree from before the import name `recovery_proxy` (its CLI was proxy/cli.py)."""
    return not os.path.isfile(os.path.join(tree, "proxy", "__main__.py"))


def cli_module(tree: str) -> str:
    return "proxy.cli" if old_layout(tree) else "recovery_proxy"


def import_path(tree: str) -> str:
    """A PYTHONPATH under which `recovery_proxy` is `tree`'s proxy/ folder (and the rules its
    rules/): links in a folder of their own, found before any installed copy. An older tree
    imports as `proxy` from the tree itself."""
    if old_layout(tree):
        return tree
    links = os.path.join(
        tempfile.gettempdir(), "bench-tree-" + hashlib.sha1(tree.encode()).hexdigest()[:12]
    )
    os.makedirs(links, exist_ok=True)
    for name, folder in (("recovery_proxy", "proxy"), ("recovery_proxy_rules", "rules")):
        link = os.path.join(links, name)
        if not os.path.islink(link):
            os.symlink(os.path.join(tree, folder), link)
    return os.pathsep.join([links, tree])


def proxy_source(tree: str) -> str:
    """Where `python -m recovery_proxy` run from `tree` imports the proxy package from."""
    package = "proxy" if old_layout(tree) else "recovery_proxy"
    code = f"import os, {package} as p; print(os.path.realpath(os.path.dirname(p.__file__)))"
    env = {**os.environ, "PYTHONPATH": import_path(tree)}
    try:
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() or "unknown"


def git_state(tree: str) -> str:
    try:
        commit = subprocess.run(
            ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", ROOT, "status", "--porcelain", "--", "proxy"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if os.path.realpath(tree) != os.path.realpath(ROOT):
        return f"proxy imported from {proxy_source(tree)} (--proxy-tree); repository at {commit}"
    changed = "uncommitted changes in proxy/" if dirty else "proxy/ clean"
    return f"work tree at {commit}, {changed}"


def added(samples: dict[str, Samples], name: str, q: str = "p50") -> float:
    """`name`'s latency minus the direct call's in the same rows, at percentile `q`, in ms."""
    return percentiles(samples[name].times)[q] - percentiles(samples["direct"].times)[q]


def chart(
    path: str, pairs: dict[str, dict[str, dict[str, Samples]]], loads: dict[str, Load], labels: dict
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(pairs["recovery-proxy"])
    colors = {
        "direct": "#9e9e9e",
        "floor": "#bcbd22",
        "recovery-proxy": "#1f77b4",
        "litellm": "#d62728",
    }
    series = ["direct", *(n for n in ("floor", "recovery-proxy", "litellm") if n in pairs)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [2, 1]})
    width = 0.8 / len(series)
    for k, name in enumerate(series):
        values, texts = [], []
        for row in rows:
            if name == "direct":
                value = percentiles(pairs["recovery-proxy"][row]["direct"].times)["p50"]
            else:
                value = added(pairs[name][row], name)
            values.append(max(value, 0.01))
            texts.append(fmt(value, 2 if value < 10 else 1))
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(rows))]
        label = "direct call (end-to-end p50)" if name == "direct" else f"{labels[name]} (added)"
        bars = left.bar(
            xs,
            values,
            width,
            label=label,
            color=colors[name],
            hatch="//" if name == "direct" else None,
        )
        for bar, text in zip(bars, texts, strict=True):
            left.annotate(
                text,
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=7,
            )
    left.set_yscale("log")
    left.set_xticks(range(len(rows)), rows)
    left.set_xlabel("messages in the request (~10% failing tool results)")
    left.set_ylabel("ms, log scale")
    left.set_title("Sequential latency added over a direct call, p50, each server on its own")
    left.legend(fontsize=8, loc="upper left")
    names = [n for n in TARGETS if n in loads]
    rps = [loads[n].rps for n in names]
    bars = right.bar([labels[n] for n in names], rps, color=[colors[n] for n in names])
    for bar, value in zip(bars, rps, strict=True):
        right.annotate(
            f"{value:,.0f}",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    right.set_yscale("log")
    right.set_ylabel("requests/s, log scale")
    right.set_title(f"Throughput, {CONNECTIONS} connections, 100 messages")
    right.tick_params(axis="x", labelsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- main


def main() -> None:
    global MODEL
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few requests, 3 s loads")
    parser.add_argument("--litellm", help="path of the litellm executable")
    parser.add_argument("--proxy-tree", default=ROOT, help="source tree to run the proxy from")
    parser.add_argument("--output", help="results prefix (default bench/results[-quick])")
    parser.add_argument("--duration", type=float, help="seconds per throughput run")
    parser.add_argument("--model", default=MODEL, help=f"model name sent (default {MODEL})")
    args = parser.parse_args()
    MODEL = args.model

    quick = args.quick
    counts = (
        {10: 60, 100: 60, 1000: 30, "grow": 60, "idle": 20}
        if quick
        else {10: 500, 100: 500, 1000: 200, "grow": 500, "idle": 100}
    )
    warmup = 5 if quick else 30
    duration = args.duration or (3.0 if quick else 10.0)
    starts = 3
    prefix = args.output or os.path.join(ROOT, "bench", "results-quick" if quick else "results")
    tree = os.path.abspath(args.proxy_tree)
    if not os.path.isfile(os.path.join(tree, "proxy", "__init__.py")):
        raise SystemExit(f"--proxy-tree {tree}: no proxy/ package there")
    litellm_bin = find_litellm(args.litellm)
    use_wrk = shutil.which("wrk") is not None
    command = "python -m bench.compare " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    began = datetime.datetime.now(datetime.UTC)
    busy_at_start, own_at_start, wall_at_start = machine_busy(), own_cpu(), time.perf_counter()
    info = machine()
    ll_version = litellm_version(litellm_bin) if litellm_bin else None
    if litellm_bin and ll_version and not ll_version.startswith(LITELLM_VERSION):
        log(f"warning: expected litellm {LITELLM_VERSION}, found {ll_version}")
    if not litellm_bin:
        log("LiteLLM Proxy not installed (bash bench/setup-litellm.sh): skipping that column")
    log(f"load generator: {'wrk' if use_wrk else 'Python asyncio client (wrk not found)'}")
    probe_at_start = cpu_probe()
    busy = machine_busy()
    time.sleep(1.0)
    if (idle_load := 100 * (machine_busy() - busy)) > 25:
        log(
            f"warning: the machine is busy ({idle_load:.0f}% of a core before start): noisy results"
        )

    labels = {
        "direct": "direct",
        "floor": "bare relay",
        "recovery-proxy": "recovery-proxy",
        "litellm": "LiteLLM Proxy",
    }
    names = [n for n in TARGETS if n != "litellm" or litellm_bin]
    pairs: dict[str, dict[str, dict[str, Samples]]] = {}
    pair_other: dict[str, dict[str, float]] = {}
    mixed: dict[str, dict[str, Samples]] = {}
    body_sizes: dict[str, int] = {}
    loads: dict[str, Load] = {}
    startup: dict[str, list[tuple[float, float]]] = {}

    def pair(target: str) -> None:
        """1. direct / `target` interleaved, no other server taking requests."""
        samples, other = pair_rows(target, servers, counts, warmup, body_sizes)
        pairs[target], pair_other[target] = samples, other

    workdir = tempfile.mkdtemp(prefix="bench-compare-")
    try:
        with running(mock_server(workdir), 30) as mock:
            upstream = f"{mock.base}/v1"

            # 3. start-up first, while the machine is otherwise idle
            for i in range(starts):
                store = f"sqlite:{workdir}/startup-{i}.db"
                candidates = [("recovery-proxy", proxy_server(upstream, store, workdir, tree))]
                if litellm_bin:
                    candidates.append(("litellm", litellm_server(litellm_bin, upstream, workdir)))
                for name, server in candidates:
                    try:
                        ready = server.start().wait_ready(180)
                        startup.setdefault(name, []).append((ready, server.wait_idle()))
                    finally:
                        server.stop()
                log(
                    f"start-up {i + 1}/{starts}: "
                    + ", ".join(
                        f"{k} ready {v[-1][0]:.2f} s, quiet {v[-1][1]:.2f} s"
                        for k, v in startup.items()
                    )
                )

            servers: dict[str, Server] = {"direct": mock}
            with contextlib.ExitStack() as stack:
                proxy = proxy_server(upstream, f"sqlite:{workdir}/sessions.db", workdir, tree)
                stack.callback(proxy.stop)
                servers["recovery-proxy"] = proxy.start()
                proxy.wait_ready(60)
                proxy.wait_idle()
                pair("recovery-proxy")

                with running(floor_server(mock.base, workdir)) as floor:
                    servers["floor"] = floor
                    floor.wait_idle()
                    pair("floor")
                del servers["floor"]

                litellm = litellm_server(litellm_bin, upstream, workdir) if litellm_bin else None
                if litellm:
                    stack.callback(litellm.stop)
                    servers["litellm"] = litellm.start()
                    litellm.wait_ready(180)
                    litellm.wait_idle()  # background start-up work must not land in a row
                    pair("litellm")
                urls = {n: f"{servers[n].base}/v1/chat/completions" for n in names}
                clients = {n: Client(n, urls[n]) for n in names}
                for client in clients.values():
                    stack.callback(client.close)

                # 1b. all three interleaved request by request
                if litellm:
                    for n in SIZES:
                        items, _ = steady_items(n, counts[n], warmup, "mixed")
                        grow(clients["recovery-proxy"], items[0][0], items[0][1])
                        log(f"interleaved {n}: direct / recovery-proxy / LiteLLM")
                        mixed[str(n)], _ = run_rounds(clients, servers, items)

                # 2. throughput
                body = steady_body(100)
                body_path = os.path.join(workdir, "body-100.json")
                with open(body_path, "wb") as f:
                    f.write(body)
                for i in range(CONNECTIONS):  # every session built turn by turn: steady state
                    grow(clients["recovery-proxy"], body, f"tp-{i}")
                    for client in clients.values():
                        client.post(body, f"tp-{i}")
                for name in names:
                    time.sleep(1.0)
                    watch = {"mock": mock}
                    if name != "direct":
                        watch[name] = servers[name]
                    log(f"throughput {name}: {CONNECTIONS} connections, {duration:g} s")
                    loads[name] = run_load(
                        name, urls[name], body, body_path, duration, workdir, watch, use_wrk
                    )
                    load = loads[name]
                    log(
                        f"  {load.rps:,.0f} req/s, p50 {load.p50_ms:.1f} p99 {load.p99_ms:.1f} ms, "
                        f"CPU % of a core: {', '.join(f'{k} {v:.0f}' for k, v in load.cpu.items())}"
                    )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    probes = (probe_at_start, cpu_probe())
    wall = time.perf_counter() - wall_at_start
    other = (machine_busy() - busy_at_start) - (own_cpu() - own_at_start)
    report = render(
        other_cpu=max(0.0, 100 * other / wall),
        probes=probes,
        wall=wall,
        command=command,
        began=began,
        info=info,
        quick=quick,
        tree=tree,
        names=names,
        labels=labels,
        pairs=pairs,
        pair_other=pair_other,
        mixed=mixed,
        body_sizes=body_sizes,
        loads=loads,
        startup=startup,
        duration=duration,
        use_wrk=use_wrk,
        ll_version=ll_version,
        litellm_bin=litellm_bin,
        prefix=prefix,
    )
    with open(prefix + ".md", "w") as f:
        f.write(report)
    chart(prefix + ".png", pairs, loads, labels)
    print(report)
    log(f"wrote {prefix}.md and {prefix}.png")
    if "**Noisy run**" in report:
        log("warning: other processes competed for the CPU during the run; see results")


SUMMARY_START = "<!-- bench.compare summary: start -->"
SUMMARY_END = "<!-- bench.compare summary: end -->"


def summary(k: dict[str, Any]) -> list[str]:
    """The headline table and figures, between markers: the README carries this block
    verbatim (tests/test_readme.py checks it against bench/results.md)."""
    pairs, loads, labels = k["pairs"], k["loads"], k["labels"]
    rows = list(pairs["recovery-proxy"])
    has_ll = "litellm" in pairs

    def cells(fn: Any) -> str:
        return " | ".join(fn(row) for row in rows)

    def p50_p99(name: str) -> Any:
        def cell(row: str) -> str:
            samples = pairs[name][row]
            ms = [added(samples, name, q) for q in ("p50", "p99")]
            digits = 2 if ms[0] < 10 else 1
            return f"{fmt(ms[0], digits)} / {fmt(ms[1], digits)}"

        return cell

    out = [SUMMARY_START, ""]
    out.append("| ms | " + " | ".join(rows) + " |")
    out.append("|---|" + "---:|" * len(rows))
    direct = cells(lambda r: fmt(percentiles(pairs["recovery-proxy"][r]["direct"].times)["p50"]))
    out.append(f"| direct call, p50 | {direct} |")
    if "floor" in pairs:
        out.append(
            f"| bare relay (the stack's floor), added p50 / p99 | {cells(p50_p99('floor'))} |"
        )
    ours = cells(lambda r: f"**{p50_p99('recovery-proxy')(r)}**")
    out.append(f"| **recovery-proxy**, added p50 / p99 | {ours} |")
    if has_ll:
        out.append(f"| LiteLLM Proxy, added p50 / p99 | {cells(p50_p99('litellm'))} |")

        def ratio(row: str) -> str:
            ll, us = (added(pairs[n][row], n) for n in ("litellm", "recovery-proxy"))
            return f"{ll / us:.0f}x" if us > 0 else "n/a"

        out.append(f"| LiteLLM ÷ recovery-proxy, p50 | {cells(ratio)} |")
    out.append("")
    if k["mixed"]:
        mixed = []
        for row, samples in k["mixed"].items():
            us, ll = added(samples, "recovery-proxy"), added(samples, "litellm")
            mixed.append(f"{row}: {us:.2f} vs {ll:.1f} ms ({ll / us:.0f}x)")
        out.append(
            "All three interleaved request by request instead (each request after another "
            "server's, caches cold), recovery-proxy vs LiteLLM added p50: " + "; ".join(mixed) + "."
        )
    tp = [
        f"{labels[n]} **{loads[n].rps:,.0f} req/s** (p99 {loads[n].p99_ms:,.0f} ms)"
        for n in ("recovery-proxy", "litellm")
        if n in loads
    ]
    line = f"Throughput, {CONNECTIONS} keep-alive connections, 100-message bodies: " + ", ".join(tp)
    if has_ll and loads["litellm"].rps:
        line += f": {loads['recovery-proxy'].rps / loads['litellm'].rps:.1f}x"
    ready = [
        f"{labels[n]} {statistics.median(r for r, _ in v):.2f} s" for n, v in k["startup"].items()
    ]
    out.append(line + ". Ready (first 200 on the health endpoint): " + ", ".join(ready) + ".")
    out += ["", SUMMARY_END]
    return out


def render(**k: Any) -> str:
    names, labels, pairs = k["names"], k["labels"], k["pairs"]
    has_ll = "litellm" in names
    info = k["info"]
    out: list[str] = []
    add = out.append
    add(
        "# recovery-proxy vs LiteLLM Proxy vs a direct call"
        + (" (quick run)" if k["quick"] else "")
    )
    add("")
    add(f"- Date: {k['began']:%Y-%m-%d %H:%M} UTC")
    add(f"- Command: `{k['command']}` (in the project venv)")
    add(
        f"- Machine: {info['nproc']} cores ({info['cpu']}), {info['memory']}, Linux "
        f"{info['kernel']}, Python {info['python']}"
    )
    add(
        f"- recovery-proxy: `recovery-proxy serve --store sqlite:<tmp>/sessions.db "
        f"--log-level warning` ({git_state(k['tree'])}); uvicorn auto-picks "
        f"{'uvloop' if importlib.util.find_spec('uvloop') else 'asyncio'} + "
        f"{'httptools' if importlib.util.find_spec('httptools') else 'h11'} in this venv"
    )
    if has_ll:
        add(
            f"- LiteLLM Proxy: litellm {k['ll_version']}, `{k['litellm_bin']}`, one "
            f"worker, passthrough config (`openai/{MODEL}` with api_base = the mock), no DB, no "
            "master key, telemetry off, local cost map, uvicorn access log off"
        )
    else:
        add("- LiteLLM Proxy: **not installed, column skipped** (`bash bench/setup-litellm.sh`)")
    add(f"- Model name in the requests: `{MODEL}`")
    add(
        "- Upstream: bench.mock_upstream (raw ASGI, uvicorn + uvloop + httptools, canned reply, "
        "its own process), shared by every path"
    )
    loader = "wrk (1 thread, Lua script)" if k["use_wrk"] else "Python asyncio client (wrk missing)"
    add(
        f"- Sequential client: http.client, one keep-alive connection per target; "
        f"load generator: {loader}"
    )
    add(
        f"- Run time {k['wall'] / 60:.1f} min; other processes on the machine used "
        f"{k['other_cpu']:.0f}% of one core on average meanwhile (from /proc/stat)"
    )
    add(
        f"- Machine speed: a fixed pure-Python loop (`cpu_probe`) took {k['probes'][0]:.0f} ms "
        f"at the start and {k['probes'][1]:.0f} ms at the end (lower is faster; on a shared VM "
        "it moves with the host's load, and every figure here with it)"
    )
    noisy = [
        f"{labels[target]} {row}"
        for target, rows in k["pair_other"].items()
        for row, pct in rows.items()
        if pct > 20
    ]
    noisy += [name for name, load in k["loads"].items() if load.cpu["other"] > 20]
    if noisy:
        add(
            f"- **Noisy run**: other processes used over 20% of a core during {', '.join(noisy)}"
            " (see the *other processes* columns); rerun on a quiet machine before citing"
        )
    add("")
    add("## Summary")
    add("")
    out += summary(k)
    add("")
    add("## 1. Sequential latency (ms)")
    add("")
    add(
        "Each server is measured on its own: requests alternate direct / that server, one at a "
        "time, while no other server takes requests (recovery-proxy first, then the bare relay, "
        "then LiteLLM), so each *added* figure is that server minus the direct call under the "
        "same machine state. Same body every request per size (steady state: the proxy's session "
        "was built turn by turn beforehand, as an agent builds it, so every failure's block is "
        "re-applied byte for byte). Bodies are `bench.common.conversation` agent transcripts "
        "with every 10th tool result failing (10 messages hold only 4 results: the 4th fails). "
        "*100 growing*: sessions of 80 messages, each request adds one new tool call + result "
        f"(every third failing), {GROW_TURNS} requests per session (82 to 120 messages), so the "
        f"store writes on every request. *{IDLE_ROW}*: the 100-message body with the machine "
        f"left idle for {IDLE * 1000:.0f} ms before every request, as between an agent's turns "
        "(sleeping CPUs and cold caches: every path slows, the direct call too). *Bare relay*: "
        "`bench.floor_relay`, raw ASGI + the same aiohttp pool forwarding bytes unchanged, the "
        "floor for any proxy built from these parts. A 5 ms pause after each LiteLLM request "
        "lets its after-answer work finish before the next request is timed."
    )
    add("")
    has_floor = "floor" in pairs
    head = "| messages | body KiB | n | direct p50 / p99 |"
    sep = "|---|---:|---:|---:|"
    if has_floor:
        head += " bare relay added p50 / p99 |"
        sep += "---:|"
    head += " recovery-proxy added p50 / p99 |"
    sep += "---:|"
    if has_ll:
        head += " LiteLLM added p50 / p99 | LiteLLM ÷ recovery-proxy (added) p50 / p99 |"
        sep += "---:|---:|"
    add(head)
    add(sep)
    ours = pairs["recovery-proxy"]
    for row, samples in ours.items():
        d = percentiles(samples["direct"].times)
        p = {q: added(samples, "recovery-proxy", q) for q in ("p50", "p99")}
        line = (
            f"| {row} | {k['body_sizes'][row] / 1024:.0f} | {len(samples['direct'].times)} | "
            f"{fmt(d['p50'])} / {fmt(d['p99'])} |"
        )
        if has_floor:
            f = pairs["floor"][row]
            line += f" {fmt(added(f, 'floor'))} / {fmt(added(f, 'floor', 'p99'))} |"
        line += f" **{fmt(p['p50'])}** / {fmt(p['p99'])} |"
        if has_ll:
            ll = {q: added(pairs["litellm"][row], "litellm", q) for q in ("p50", "p99")}
            ratio = [f"{ll[q] / p[q]:.0f}x" if p[q] > 0 else "n/a" for q in ("p50", "p99")]
            line += f" **{fmt(ll['p50'], 1)}** / {fmt(ll['p99'], 1)} | {ratio[0]} / {ratio[1]} |"
        add(line)
    add("")
    add(
        "End to end, and where the time goes: *proxy self* is the proxy's own "
        "`x-recovery-proxy-overhead-ms` header (request in to forward out), *CPU/req* the server "
        "process's CPU time per request over the whole row (warm-up included), in ms; *other "
        "processes' CPU*: what the rest of the machine used meanwhile, % of one core (the "
        "highest of the phases)."
    )
    add("")
    head = (
        "| messages | recovery-proxy p50 / p99 | proxy self p50 | proxy CPU/req | blocks injected |"
    )
    sep = "|---|---:|---:|---:|---:|"
    if has_ll:
        head += " LiteLLM p50 / p99 | LiteLLM CPU/req |"
        sep += "---:|---:|"
    head += " other processes' CPU |"
    sep += "---:|"
    add(head)
    add(sep)
    for row, samples in ours.items():
        s = samples["recovery-proxy"]
        total = percentiles(s.times)
        self_p50 = statistics.median(s.overhead_ms) if s.overhead_ms else None
        injected = str(s.injected[-1]) if s.injected else "-"
        cpu = 1000 * s.cpu_s / s.requests if s.requests else None
        line = (
            f"| {row} | {fmt(total['p50'])} / {fmt(total['p99'])} | "
            f"{fmt(self_p50)} | {fmt(cpu, 1)} | {injected} |"
        )
        if has_ll:
            s = pairs["litellm"][row]["litellm"]
            total = percentiles(s.times)
            cpu = 1000 * s.cpu_s / s.requests if s.requests else None
            line += f" {fmt(total['p50'], 1)} / {fmt(total['p99'], 1)} | {fmt(cpu, 1)} |"
        other = max(rows[row] for rows in k["pair_other"].values())
        line += f" {other:.0f}% |"
        add(line)
    if k["mixed"]:
        add("")
        add(
            "**All three interleaved** request by request (direct / recovery-proxy / LiteLLM, "
            "order rotated each round): each request runs right after another server's, with "
            "the caches that server just filled, so every path is slower than on its own, the "
            "direct call included:"
        )
        add("")
        add(
            "| messages | direct p50 / p99 | recovery-proxy added p50 / p99 "
            "| LiteLLM added p50 / p99 | LiteLLM ÷ recovery-proxy p50 |"
        )
        add("|---|---:|---:|---:|---:|")
        for row, samples in k["mixed"].items():
            d = percentiles(samples["direct"].times)
            p = {q: added(samples, "recovery-proxy", q) for q in ("p50", "p99")}
            ll = {q: added(samples, "litellm", q) for q in ("p50", "p99")}
            ratio = f"{ll['p50'] / p['p50']:.0f}x" if p["p50"] > 0 else "n/a"
            add(
                f"| {row} | {fmt(d['p50'])} / {fmt(d['p99'])} | {fmt(p['p50'])} / "
                f"{fmt(p['p99'])} | {fmt(ll['p50'], 1)} / {fmt(ll['p99'], 1)} | {ratio} |"
            )
    add("")
    add(
        f"## 2. Throughput: {CONNECTIONS} keep-alive connections, 100-message body, "
        f"{k['duration']:g} s each"
    )
    add("")
    add(
        f"{CONNECTIONS} sessions (`x-session-id: tp-0..{CONNECTIONS - 1}`), each seen once "
        "before the run. CPU is in % of one core (200% = the whole machine), measured from /proc "
        "over the run."
    )
    add("")
    add(
        "| target | req/s | p50 ms | p99 ms | max ms | errors "
        "| CPU: load gen / mock / server / other processes |"
    )
    add("|---|---:|---:|---:|---:|---:|---:|")
    loads = k["loads"]
    for name in names:
        load = loads[name]
        server = f"{load.cpu[name]:.0f}%" if name in load.cpu else "-"
        add(
            f"| {labels[name]} | **{load.rps:,.0f}** | {fmt(load.p50_ms, 1)} | "
            f"{fmt(load.p99_ms, 1)} | {fmt(load.max_ms, 1) if load.max_ms else '-'} | "
            f"{load.errors} | {load.cpu['load generator']:.0f}% / {load.cpu['mock']:.0f}% / "
            f"{server} / {load.cpu['other']:.0f}% |"
        )
    if has_ll and loads["litellm"].rps:
        add("")
        add(
            f"recovery-proxy ÷ LiteLLM throughput: "
            f"**{loads['recovery-proxy'].rps / loads['litellm'].rps:.1f}x**"
        )
    add("")
    add("## 3. Start-up: spawn to first 200 on the health endpoint (s)")
    add("")
    add(
        "*Quiet*: spawn until the process first uses < 4% of a core over half a second, i.e. "
        "when work started in the background after the health check turned 200 is done."
    )
    add("")
    add("| server | health path | ready, median | runs | quiet, median |")
    add("|---|---|---:|---|---:|")
    for name, values in k["startup"].items():
        ready = [r for r, _ in values]
        quiet = [q for _, q in values]
        add(
            f"| {labels[name]} | `{HEALTH[name]}` | **{statistics.median(ready):.2f}** | "
            f"{', '.join(f'{v:.2f}' for v in ready)} | {statistics.median(quiet):.2f} |"
        )
    add("")
    add(f"![latency and throughput]({os.path.basename(k['prefix'])}.png)")
    add("")
    return "\n".join(out)


def _terminate(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)  # unwind, so every `finally` stops its servers


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminate)
    try:
        main()
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        raise SystemExit(f"bench.compare failed: {exc}") from None
