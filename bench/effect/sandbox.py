"""The toy environment an episode's tools act on: virtual files, a fake shell with a package
manager and a test runner, a fake HTTP API. Nothing leaves the process; every error is printed
the way the real tool prints it (shell, pip, pytest, requests, Node, Claude Code's file tools).
"""

from __future__ import annotations

import json
import posixpath
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

API = "http://api.internal:8000"
Route = Callable[["Sandbox", dict[str, Any]], tuple[int, Any]]


@dataclass(frozen=True, slots=True)
class Result:
    """What a tool printed, and whether it failed (the harness's truth, never shown)."""

    text: str
    failed: bool


@dataclass(frozen=True, slots=True)
class Test:
    """A pytest test: it passes once `needle` is in `path`; `failure` is its assertion line."""

    node: str
    path: str
    needle: str
    failure: str


@dataclass
class Sandbox:
    """The world of one episode; tasks build it, tools change it, checks read it."""

    files: dict[str, str] = field(default_factory=dict)
    readonly: tuple[str, ...] = ("/etc/", "/usr/")
    binaries: set[str] = field(
        default_factory=lambda: {"ls", "cat", "grep", "python3", "pip3", "pytest"}
    )
    scripts: dict[str, tuple[str, ...]] = field(default_factory=dict)  # script -> modules
    index: dict[str, str] = field(default_factory=dict)  # pip name -> module it provides
    installed: set[str] = field(default_factory=set)
    commands: dict[str, str] = field(default_factory=dict)  # whole command line -> output
    tests: list[Test] = field(default_factory=list)
    routes: dict[tuple[str, str], Route] = field(default_factory=dict)
    flaky: dict[str, int] = field(default_factory=dict)  # url -> failures left
    events: list[str] = field(default_factory=list)  # what happened: "ran:...", "tests_passed"

    # -- files ------------------------------------------------------------------------------

    def norm(self, path: str) -> str:
        """A path as the sandbox keys it: relative to the repository, no ./ or trailing /."""
        path = posixpath.normpath(path.strip() or ".")
        return path[2:] if path.startswith("./") else path

    def is_dir(self, path: str) -> bool:
        """True when some file lies under `path` (the root always exists)."""
        path = self.norm(path)
        return path == "." or any(name.startswith(path + "/") for name in self.files)

    def listing(self, path: str) -> list[str]:
        """The entries right under directory `path`, directories with a trailing /."""
        path = self.norm(path)
        prefix = "" if path == "." else path + "/"
        entries: set[str] = set()
        for name in self.files:
            if name.startswith(prefix):
                head, _, rest = name[len(prefix) :].partition("/")
                entries.add(head + "/" if rest else head)
        return sorted(entries)

    def read_file(self, path: str) -> Result:
        """Claude Code's Read: the file with line numbers, or its refusal."""
        key = self.norm(path)
        if key in self.files:
            lines = self.files[key].splitlines()
            return Result("\n".join(f"{i:>6}\t{line}" for i, line in enumerate(lines, 1)), False)
        if self.is_dir(key):
            return Result(f"EISDIR: illegal operation on a directory, read '{path}'", True)
        cwd = "/home/user/repo"
        return Result(
            f"<tool_use_error>File does not exist. Note: your current working directory is {cwd}."
            "</tool_use_error>",
            True,
        )

    def list_dir(self, path: str) -> Result:
        """An `ls -p`-like listing, or Node's ENOENT."""
        if not self.is_dir(path):
            if self.norm(path) in self.files:
                return Result(f"ENOTDIR: not a directory, scandir '{path}'", True)
            return Result(f"ENOENT: no such file or directory, scandir '{path}'", True)
        return Result("\n".join(self.listing(path)), False)

    def writable(self, path: str) -> bool:
        """Paths under /etc and /usr belong to root."""
        return not any(path.startswith(prefix) for prefix in self.readonly)

    def write_file(self, path: str, content: str) -> Result:
        """Write a whole file (its directory is created), or Node's EACCES."""
        if not self.writable(path):
            return Result(f"EACCES: permission denied, open '{path}'", True)
        self.files[self.norm(path)] = content
        return Result(f"File created successfully at: {path}", False)

    def edit_file(self, path: str, old: str, new: str) -> Result:
        """Claude Code's Edit: replace one exact occurrence of `old`."""
        key = self.norm(path)
        if not self.writable(path):
            return Result(f"EACCES: permission denied, open '{path}'", True)
        if key not in self.files:
            return self.read_file(path)
        text = self.files[key]
        count = text.count(old) if old else 0
        if count == 0:
            return Result(
                f"<tool_use_error>String to replace not found in file.\nString: {old}"
                "</tool_use_error>",
                True,
            )
        if count > 1:
            return Result(
                f"<tool_use_error>Found {count} matches of the string to replace, but "
                "replace_all is false. To replace all occurrences, set replace_all to true. To "
                "replace only one occurrence, please provide more context to uniquely identify "
                f"the instance.\nString: {old}</tool_use_error>",
                True,
            )
        self.files[key] = text.replace(old, new, 1)
        return Result(f"The file {path} has been updated.", False)

    # -- shell ------------------------------------------------------------------------------

    def run_shell(self, command: str) -> Result:
        """One command line, as Claude Code's Bash reports it (`Exit code N` on failure)."""
        command = command.strip()
        if command in self.commands:
            self.events.append(f"ran:{command}")
            return Result(self.commands[command], False)
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            return Result(f"Exit code 2\nbash: syntax error: {exc}", True)
        if not argv:
            return Result("Exit code 2\nbash: empty command", True)
        if argv[0] not in self.binaries:
            return Result(f"Exit code 127\nbash: line 1: {argv[0]}: command not found", True)
        code, out = self.shell(argv)
        if code:
            return Result(f"Exit code {code}\n{out}", True)
        self.events.append(f"ran:{command}")
        return Result(out or "(no output)", False)

    def shell(self, argv: list[str]) -> tuple[int, str]:
        """Exit status and output of a known binary."""
        name, args = argv[0], argv[1:]
        if name == "ls":
            target = next((a for a in args if not a.startswith("-")), ".")
            if not self.is_dir(target):
                return 2, f"ls: cannot access '{target}': No such file or directory"
            return 0, "\n".join(self.listing(target))
        if name == "cat":
            out = []
            for target in args:
                if self.norm(target) not in self.files:
                    return 1, f"cat: {target}: No such file or directory"
                out.append(self.files[self.norm(target)])
            return 0, "\n".join(out)
        if name == "grep":
            return self.grep(args)
        if name in ("pip", "pip3") or argv[:3] in (
            ["python3", "-m", "pip"],
            ["python", "-m", "pip"],
        ):
            rest = args if name in ("pip", "pip3") else argv[3:]
            return self.pip(rest)
        if name in ("pytest",) or argv[:3] in (
            ["python3", "-m", "pytest"],
            ["python", "-m", "pytest"],
        ):
            return self.pytest()
        if name in ("python", "python3") and args:
            return self.python(args[0])
        return 1, f"{name}: unsupported arguments: {' '.join(args)}"

    def grep(self, args: list[str]) -> tuple[int, str]:
        """`grep -rn PATTERN [PATH]`: fixed-string search of the virtual files."""
        words = [a for a in args if not a.startswith("-")]
        if not words:
            return 2, "Usage: grep [OPTION]... PATTERNS [FILE]..."
        pattern, where = words[0], self.norm(words[1] if len(words) > 1 else ".")
        hits = [
            f"{name}:{i}:{line}"
            for name, text in sorted(self.files.items())
            if where == "." or name == where or name.startswith(where + "/")
            for i, line in enumerate(text.splitlines(), 1)
            if pattern in line
        ]
        return (0, "\n".join(hits)) if hits else (1, "")

    def pip(self, args: list[str]) -> tuple[int, str]:
        """`pip install NAME`: names in the index install their module; others are not found."""
        if not args or args[0] != "install" or len(args) < 2:
            return 1, "ERROR: You must give at least one requirement to install"
        out = []
        for req in args[1:]:
            if req.startswith("-"):
                continue
            if req not in self.index:
                return 1, (
                    f"ERROR: Could not find a version that satisfies the requirement {req} "
                    f"(from versions: none)\nERROR: No matching distribution found for {req}"
                )
            self.installed.add(self.index[req])
            out.append(f"Successfully installed {req}-1.0.0")
        return 0, "\n".join(out)

    def python(self, script: str) -> tuple[int, str]:
        """Run a script: its imports must be installed."""
        if self.norm(script) not in self.files:
            return 2, (
                f"python3: can't open file '/home/user/repo/{script}': "
                "[Errno 2] No such file or directory"
            )
        for module in self.scripts.get(self.norm(script), ()):
            if module not in self.installed:
                return 1, (
                    "Traceback (most recent call last):\n"
                    f'  File "/home/user/repo/{script}", line 3, in <module>\n'
                    f"    import {module}\n"
                    f"ModuleNotFoundError: No module named '{module}'"
                )
        return 0, f"{script}: done, report written"

    def pytest(self) -> tuple[int, str]:
        """The test suite, in pytest's short summary shape."""
        failed = [t for t in self.tests if t.needle not in self.files.get(t.path, "")]
        n = len(self.tests)
        if not failed:
            self.events.append("tests_passed")
            return 0, f"{'.' * n}\n{n} passed in 0.04s"
        lines = [
            "============================= test session starts ==============================",
            f"collected {n} items",
            "",
            "=========================== short test summary info ============================",
            *(f"FAILED {t.node} - {t.failure}" for t in failed),
            f"{len(failed)} failed, {n - len(failed)} passed in 0.05s",
        ]
        return 1, "\n".join(lines)

    # -- HTTP -------------------------------------------------------------------------------

    def http_request(self, method: str, url: str, body: Any = None) -> Result:
        """A request to the fake API, reported like `requests` (`raise_for_status`) does."""
        method = method.upper()
        if self.flaky.get(url, 0) > 0:
            self.flaky[url] -= 1
            return Result(
                f"503 Server Error: Service Unavailable for url: {url}\n"
                '{"error": "upstream temporarily unavailable, retry later"}',
                True,
            )
        path = url.removeprefix(API)
        route = self.routes.get((method, path))
        if route is None:
            return Result(f"404 Client Error: Not Found for url: {url}", True)
        payload = body if isinstance(body, dict) else self._decode(body)
        status, answer = route(self, payload)
        text = json.dumps(answer)
        if status >= 400:
            reason = {400: "Bad Request", 403: "Forbidden", 422: "Unprocessable Entity"}
            kind = "Client" if status < 500 else "Server"
            return Result(
                f"{status} {kind} Error: {reason.get(status, 'Error')} for url: {url}\n{text}", True
            )
        self.events.append(f"http:{method} {path}")
        return Result(text, False)

    @staticmethod
    def _decode(body: Any) -> dict[str, Any]:
        if isinstance(body, str) and body.strip():
            try:
                data = json.loads(body)
            except ValueError:
                return {}
            return data if isinstance(data, dict) else {}
        return {}

    # -- dispatch ---------------------------------------------------------------------------

    def call(self, name: str, args: dict[str, Any]) -> Result:
        """Run tool `name`; bad arguments get the JSON-schema style refusal agents print."""
        try:
            if name == "read_file":
                return self.read_file(str(args["path"]))
            if name == "list_dir":
                return self.list_dir(str(args.get("path", ".")))
            if name == "write_file":
                return self.write_file(str(args["path"]), str(args["content"]))
            if name == "edit_file":
                return self.edit_file(str(args["path"]), str(args["old"]), str(args["new"]))
            if name == "run_shell":
                return self.run_shell(str(args["command"]))
            if name == "http_request":
                return self.http_request(
                    str(args.get("method", "GET")), str(args["url"]), args.get("body")
                )
        except KeyError as exc:
            return Result(
                f"<tool_use_error>InputValidationError: {name} failed due to the following "
                f"issue:\nThe required parameter `{exc.args[0]}` is missing</tool_use_error>",
                True,
            )
        return Result(
            f"<tool_use_error>Error: No such tool available: {name}</tool_use_error>", True
        )
