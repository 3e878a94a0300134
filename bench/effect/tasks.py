"""The task suite: 45 toy tasks in 9 families where the obvious first call fails.

Each task builds its sandbox, names the obvious call (`naive`, the one a model makes first and
that fails) and a known way through (`solution`, calls that succeed in order from the start),
and checks the sandbox at the end. The compaction family has the harness compact the history
after `compact_at` model turns, as agents do (summary marker, old turns dropped).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.effect.sandbox import API, Route, Sandbox, Test


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call by name and arguments."""

    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Task:
    """One task: what the user asks, its world, the obvious failing call, a way through."""

    id: str
    family: str
    prompt: str
    build: Callable[[], Sandbox]
    naive: Call
    solution: tuple[Call, ...]
    check: Callable[[Sandbox], bool]
    compact_at: int | None = None  # model turns before the harness compacts
    tags: tuple[str, ...] = field(default=())


def _noise(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Files every repository has, decoys included."""
    base = {
        "README.md": "# service\n\nSee docs/ for setup.\n",
        "package.json": '{"name": "service", "scripts": {"build": "tsc"}}\n',
        "docs/setup.md": "Run the tests with pytest.\n",
        "src/index.ts": "export {}\n",
        "src/app/main.ts": "import './config'\n",
        "tests/README": "unit tests\n",
    }
    return {**base, **(extra or {})}


def path_moved() -> list[Task]:
    """The file is not where the user said (deeper, renamed), with decoys beside it."""
    cases = [
        ("src/config.ts", "src/app/config/server.ts", "port: 3000", "port: 8080"),
        ("settings.py", "app/core/settings/base.py", "DEBUG = True", "DEBUG = False"),
        ("config/database.yml", "deploy/k8s/config/database.yml", "pool: 5", "pool: 20"),
        ("docs/CHANGELOG.md", "packages/api/CHANGELOG.md", "## Unreleased", "## 2.4.0"),
        ("lib/dates.js", "src/lib/time/dates.js", "const TZ = 'UTC'", "const TZ = 'Europe/Paris'"),
    ]
    tasks = []
    for i, (named, real, old, new) in enumerate(cases):
        decoy = posixpath.join(posixpath.dirname(real), "README.md")
        files = _noise({real: f"// {real}\n{old}\n", decoy: "moved here in the refactor\n"})
        files[named + ".example"] = f"# example, not used\n{old}\n"
        top = real.split("/")[0]
        tasks.append(
            Task(
                id=f"path_moved-{i}",
                family="path_moved",
                prompt=f"In {named}, change `{old}` to `{new}`.",
                build=lambda files=files: Sandbox(files=dict(files)),
                naive=Call("edit_file", {"path": named, "old": old, "new": new}),
                solution=(
                    Call("run_shell", {"command": f'grep -rn "{old}" {top}'}),
                    Call("edit_file", {"path": real, "old": old, "new": new}),
                ),
                check=lambda s, real=real, new=new: new in s.files.get(real, ""),
            )
        )
    return tasks


def _validated(check: Callable[[dict[str, Any]], dict[str, Any] | None]) -> Route:
    """A route answering 422 with pydantic's error list when `check` returns one."""

    def route(sandbox: Sandbox, body: dict[str, Any]) -> tuple[int, Any]:
        error = check(body)
        return (422, {"detail": [error]}) if error else (200, {"ok": True, **body})

    return route


def _enum(field_name: str, allowed: tuple[str, ...]) -> Route:
    quoted = ", ".join(f"'{a}'" for a in allowed[:-1]) + f" or '{allowed[-1]}'"
    return _validated(
        lambda b: (
            None
            if b.get(field_name) in allowed
            else {
                "type": "enum",
                "loc": ["body", field_name],
                "msg": f"Input should be {quoted}",
                "input": b.get(field_name),
            }
        )
    )


def _is_date(value: Any) -> bool:
    text = str(value)
    return len(text) == 10 and text[4] == "-" and text[7] == "-" and text.replace("-", "").isdigit()


def _date(field_name: str) -> Route:
    return _validated(
        lambda b: (
            None
            if _is_date(b.get(field_name))
            else {
                "type": "date_from_datetime_parsing",
                "loc": ["body", field_name],
                "msg": "Input should be a valid date or datetime, invalid character in year",
                "input": b.get(field_name),
            }
        )
    )


def _integer(field_name: str) -> Route:
    return _validated(
        lambda b: (
            None
            if isinstance(b.get(field_name), int)
            else {
                "type": "int_parsing",
                "loc": ["body", field_name],
                "msg": "Input should be a valid integer, unable to parse string as an integer",
                "input": b.get(field_name),
            }
        )
    )


def bad_argument() -> list[Task]:
    """The API rejects an argument: an enum spelled as the user said it, a date, a unit."""
    cases = [
        (
            "/v1/logging",
            "Set the billing service's log level to warn",
            {"service": "billing", "level": "warn"},
            {"service": "billing", "level": "warning"},
            _enum("level", ("debug", "info", "warning", "error")),
        ),
        (
            "/v1/events",
            "Create a calendar event 'Release review' on 24/11/2026",
            {"title": "Release review", "date": "24/11/2026"},
            {"title": "Release review", "date": "2026-11-24"},
            _date("date"),
        ),
        (
            "/v1/services/search/timeout",
            "Set the search service timeout to 30s",
            {"timeout_ms": "30s"},
            {"timeout_ms": 30000},
            _integer("timeout_ms"),
        ),
        (
            "/v1/buckets",
            "Create a storage bucket named audit-logs in the EU",
            {"name": "audit-logs", "region": "EU"},
            {"name": "audit-logs", "region": "eu-west-1"},
            _enum("region", ("us-east-1", "eu-west-1", "ap-south-1")),
        ),
        (
            "/v1/alerts",
            "Create an alert for disk usage with high priority",
            {"metric": "disk_usage", "priority": "high"},
            {"metric": "disk_usage", "priority": "P1"},
            _enum("priority", ("P1", "P2", "P3")),
        ),
    ]
    tasks = []
    for i, (path, ask, bad, good, route) in enumerate(cases):
        url = API + path
        fields = ", ".join(bad)
        tasks.append(
            Task(
                id=f"bad_argument-{i}",
                family="bad_argument",
                prompt=f"{ask}: POST {url} with a JSON body ({fields}).",
                build=lambda path=path, route=route: Sandbox(
                    files=_noise(), routes={("POST", path): route}
                ),
                naive=Call("http_request", {"method": "POST", "url": url, "body": bad}),
                solution=(Call("http_request", {"method": "POST", "url": url, "body": good}),),
                check=lambda s, path=path: f"http:POST {path}" in s.events,
            )
        )
    return tasks


def missing_dependency() -> list[Task]:
    """A script imports a module that is not installed; its pip name differs."""
    cases = [
        ("scripts/report.py", "yaml", "pyyaml"),
        ("tools/thumbnails.py", "cv2", "opencv-python"),
        ("scripts/train.py", "sklearn", "scikit-learn"),
        ("bin/schedule.py", "dateutil", "python-dateutil"),
        ("scripts/scrape.py", "bs4", "beautifulsoup4"),
    ]
    tasks = []
    for i, (script, module, package) in enumerate(cases):
        command = f"python3 {script}"
        tasks.append(
            Task(
                id=f"missing_dependency-{i}",
                family="missing_dependency",
                prompt=f"Run `{command}` and make sure it completes.",
                build=lambda script=script, module=module, package=package: Sandbox(
                    files=_noise({script: f"#!/usr/bin/env python3\n\nimport {module}\n"}),
                    scripts={script: (module,)},
                    index={package: module, "requests": "requests"},
                ),
                naive=Call("run_shell", {"command": command}),
                solution=(
                    Call("run_shell", {"command": f"pip3 install {package}"}),
                    Call("run_shell", {"command": command}),
                ),
                check=lambda s, command=command: f"ran:{command}" in s.events,
            )
        )
    return tasks


def command_not_found() -> list[Task]:
    """The command the user named is not installed; an equivalent one is."""
    cases = [
        ("python manage.py migrate", "python3 manage.py migrate", "Applying 12 migrations... OK"),
        ("yarn build", "npm run build", "> service@1.0.0 build\n> tsc\n"),
        ("docker-compose up -d", "docker compose up -d", "Container service-db-1  Started"),
        (
            "pip install -r requirements.txt",
            "pip3 install -r requirements.txt",
            "Successfully installed flask-3.0.0",
        ),
        ("node scripts/gen.js", "nodejs scripts/gen.js", "generated 14 files"),
    ]
    tasks = []
    for i, (named, alt, out) in enumerate(cases):
        tasks.append(
            Task(
                id=f"command_not_found-{i}",
                family="command_not_found",
                prompt=f"Run `{named}` in the repository and tell me when it succeeded.",
                build=lambda alt=alt, out=out: Sandbox(
                    files=_noise({"manage.py": "", "scripts/gen.js": "", "requirements.txt": ""}),
                    commands={alt: out},
                    binaries={
                        "ls",
                        "cat",
                        "grep",
                        "python3",
                        "pip3",
                        "pytest",
                        "npm",
                        "docker",
                        "nodejs",
                    },
                ),
                naive=Call("run_shell", {"command": named}),
                solution=(Call("run_shell", {"command": alt}),),
                check=lambda s, alt=alt: f"ran:{alt}" in s.events,
            )
        )
    return tasks


def edit_mismatch() -> list[Task]:
    """The text the user quoted is not in the file as written (spacing, quotes, types)."""
    cases = [
        ("config.toml", "port: 3000", "port: 8080", "port = 3000", "port = 8080"),
        ("app/client.py", "timeout=30", "timeout=60", "timeout = 30", "timeout = 60"),
        (
            "src/api.js",
            "const VERSION = 'v1'",
            "const VERSION = 'v2'",
            'const VERSION = "v1"',
            'const VERSION = "v2"',
        ),
        (
            "lib/retry.py",
            "MAX_RETRIES = 3",
            "MAX_RETRIES = 5",
            "MAX_RETRIES: int = 3",
            "MAX_RETRIES: int = 5",
        ),
        ("Makefile", "CFLAGS = -O2", "CFLAGS = -O3", "CFLAGS := -O2", "CFLAGS := -O3"),
    ]
    tasks = []
    for i, (path, said_old, said_new, real_old, real_new) in enumerate(cases):
        tasks.append(
            Task(
                id=f"edit_mismatch-{i}",
                family="edit_mismatch",
                prompt=f"In {path}, replace `{said_old}` with `{said_new}`.",
                build=lambda path=path, real_old=real_old: Sandbox(
                    files=_noise({path: f"# settings\n{real_old}\n"})
                ),
                naive=Call("edit_file", {"path": path, "old": said_old, "new": said_new}),
                solution=(
                    Call("read_file", {"path": path}),
                    Call("edit_file", {"path": path, "old": real_old, "new": real_new}),
                ),
                check=lambda s, path=path, real_new=real_new: real_new in s.files.get(path, ""),
            )
        )
    return tasks


def failing_test() -> list[Task]:
    """The tests fail until the code changes; running them again changes nothing."""
    cases = [
        (
            "src/calc.py",
            "def add(a, b):\n    return a - b\n",
            "return a - b",
            "return a + b",
            "tests/test_calc.py::test_add",
            "assert -1 == 5",
        ),
        (
            "src/slug.py",
            "def slug(s):\n    return s.replace(' ', '-')\n",
            "return s.replace(' ', '-')",
            "return s.replace(' ', '-').lower()",
            "tests/test_slug.py::test_lowercase",
            "AssertionError: assert 'Hello-World' == 'hello-world'",
        ),
        (
            "src/greet.py",
            "def greet(name):\n    return 'Helo, ' + name\n",
            "'Helo, '",
            "'Hello, '",
            "tests/test_greet.py::test_greet",
            "AssertionError: assert 'Helo, Ada' == 'Hello, Ada'",
        ),
        (
            "src/pages.py",
            "def pages(n, size):\n    return n // size\n",
            "return n // size",
            "return -(-n // size)",
            "tests/test_pages.py::test_partial_page",
            "assert 2 == 3",
        ),
        (
            "src/price.py",
            "def total(items):\n    return sum(items) * 1.2\n",
            "* 1.2",
            "* 1.21",
            "tests/test_price.py::test_vat",
            "assert 120.0 == 121.0",
        ),
    ]
    tasks = []
    for i, (path, code, bug, fix, node, failure) in enumerate(cases):
        test = Test(node, path, fix, failure)
        tasks.append(
            Task(
                id=f"failing_test-{i}",
                family="failing_test",
                prompt=f"`{node}` fails. Make the test suite pass; run it with `pytest`.",
                build=lambda path=path, code=code, test=test: Sandbox(
                    files=_noise(
                        {
                            path: code,
                            test.node.split("::")[
                                0
                            ]: f"from {path[:-3].replace('/', '.')} import *\n",
                        }
                    ),
                    tests=[test],
                ),
                naive=Call("run_shell", {"command": "pytest"}),
                solution=(
                    Call("read_file", {"path": path}),
                    Call("edit_file", {"path": path, "old": bug, "new": fix}),
                    Call("run_shell", {"command": "pytest"}),
                ),
                check=lambda s: "tests_passed" in s.events,
            )
        )
    return tasks


def permission_denied() -> list[Task]:
    """A system file cannot be written; the repository documents the allowed route."""
    cases = [
        ("myapp", "log_level", "debug"),
        ("billing", "max_workers", "8"),
        ("search", "cache_size_mb", "512"),
        ("gateway", "rate_limit", "100"),
        ("worker", "queue", "high"),
    ]
    tasks = []
    for i, (app, key, value) in enumerate(cases):
        system = f"/etc/{app}/{app}.conf"
        local = f"config/{app}.local.conf"
        readme = (
            f"# {app}\n\n{system} is owned by root and read-only here. Put overrides in "
            f"{local} (same `key = value` format); it is read after the system file.\n"
        )
        line = f"{key} = {value}\n"
        tasks.append(
            Task(
                id=f"permission_denied-{i}",
                family="permission_denied",
                prompt=f"Set `{key} = {value}` for {app} by writing {system}.",
                build=lambda readme=readme: Sandbox(files=_noise({"README.md": readme})),
                naive=Call("write_file", {"path": system, "content": line}),
                solution=(
                    Call("read_file", {"path": "README.md"}),
                    Call("write_file", {"path": local, "content": line}),
                ),
                check=lambda s, local=local, line=line: line.strip() in s.files.get(local, ""),
            )
        )
    return tasks


def transient_network() -> list[Task]:
    """The API answers 503 once; the same request succeeds when repeated."""
    names = ["daily", "weekly", "errors", "latency", "signups"]
    tasks = []
    for i, name in enumerate(names):
        path = f"/v1/reports/{name}"
        url = API + path
        out = f"reports/{name}.json"
        report: Route = lambda s, b, name=name: (200, {"report": name, "rows": 42})  # noqa: E731
        tasks.append(
            Task(
                id=f"transient_network-{i}",
                family="transient_network",
                prompt=f"Fetch the {name} report (GET {url}) and save its JSON to {out}.",
                build=lambda path=path, url=url, report=report: Sandbox(
                    files=_noise(), routes={("GET", path): report}, flaky={url: 1}
                ),
                naive=Call("http_request", {"method": "GET", "url": url}),
                solution=(
                    Call("http_request", {"method": "GET", "url": url}),
                    Call(
                        "write_file",
                        {"path": out, "content": f'{{"report": "{name}", "rows": 42}}'},
                    ),
                ),
                check=lambda s, out=out, name=name: name in s.files.get(out, ""),
            )
        )
    return tasks


def compaction() -> list[Task]:
    """Tasks of the other families with the history compacted after two model turns: does
    the model go back to the approach that failed before the summary?"""
    picks = [*path_moved()[:2], missing_dependency()[0], edit_mismatch()[0], bad_argument()[0]]
    tasks = []
    for i, task in enumerate(picks):
        tasks.append(
            Task(
                id=f"compaction-{i}",
                family="compaction",
                prompt=task.prompt,
                build=task.build,
                naive=task.naive,
                solution=task.solution,
                check=task.check,
                compact_at=2,
                tags=(task.family,),
            )
        )
    return tasks


FAMILIES = (
    path_moved,
    bad_argument,
    missing_dependency,
    command_not_found,
    edit_mismatch,
    failing_test,
    permission_denied,
    transient_network,
    compaction,
)


def all_tasks() -> list[Task]:
    """Every task of every family, in a fixed order."""
    return [task for family in FAMILIES for task in family()]
