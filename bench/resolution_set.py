# ruff: noqa: E501  (tool outputs are quoted whole, as agents send them)
"""The labelled transcript set for the resolution linker (issue 27), written before the linker.

Each transcript is a multi-turn agent session in one of four dialects (tool names, argument
names and error wording of a generic Chat Completions agent, Codex on Responses, Claude Code on
Messages, Gemini CLI on generateContent), one tool call per turn. Its `links` are the
resolutions a careful reader draws: which failed steps a later success resolved, and how
(`retry`: the same operation on the same target worked, perhaps after other steps or with other
arguments; `alternative`: the same kind of operation on another target worked after a
not-found/invalid-argument streak), with the steps that made it work (`via`: the listing that
found the file, the install, the mkdir). Sessions that give up, unrelated successes and
interleaved streaks are included; a success that only *might* be the replacement (no listing
named it, not an obvious variant of the failed name) is left unlinked, as a reader would.

Labels come from each scenario's own definition below, never from a linker's output.
The scenarios are written per dialect with varied projects; every third transcript (by a
stable digest of its id) goes to the unseen part, kept out of tuning:

    python -m bench.resolution_set   # writes tests/data/resolutions{,_unseen}.yaml
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

Step = dict[str, Any]
Link = dict[str, Any]
DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
FORMATS = {
    "generic": "openai_chat",
    "codex": "openai_responses",
    "claude": "anthropic_messages",
    "gemini": "gemini",
}

# Projects: (root, directory, name asked for, name that exists, sibling file, module, test cmd)
PROJECTS = [
    ("/repo", "src", "config.ts", "settings.ts", "index.ts", "lodash", "npm test"),
    (
        "/srv/billing",
        "app/models",
        "invoice.py",
        "invoices.py",
        "__init__.py",
        "requests",
        "pytest -q",
    ),
    ("/home/dev/shop", "lib", "cart.rb", "basket.rb", "order.rb", "nokogiri", "bundle exec rspec"),
    (
        "/work/api",
        "internal/handlers",
        "user.go",
        "users.go",
        "health.go",
        "github.com/gin-gonic/gin",
        "go test ./...",
    ),
    (
        "/repo/web",
        "src/components",
        "Header.tsx",
        "NavBar.tsx",
        "Footer.tsx",
        "react-router-dom",
        "npx vitest run",
    ),
    (
        "/opt/etl",
        "pipelines",
        "load_orders.py",
        "orders_load.py",
        "extract.py",
        "pandas",
        "python -m pytest",
    ),
]


class Dialect:
    """Tool calls and outputs in one agent's own words."""

    name = "generic"

    def __init__(self, root: str) -> None:
        self.root = root

    def read(self, path: str) -> tuple[str, dict[str, Any]]:
        return "read_file", {"path": path}

    def read_ok(self, path: str) -> str:
        return f"// {path}\nexport const value = 1;\n"

    def read_missing(self, path: str) -> tuple[str, bool]:
        return f"Error: ENOENT: no such file or directory, open '{path}'", True

    def ls(self, path: str) -> tuple[str, dict[str, Any]]:
        return "list_dir", {"path": path}

    def ls_ok(self, names: list[str]) -> str:
        return "\n".join(names)

    def find(self, pattern: str) -> tuple[str, dict[str, Any]]:
        return "grep", {"pattern": pattern, "path": "."}

    def find_ok(self, hits: list[str], pattern: str) -> str:
        return "\n".join(f"{h}:12:  {pattern}" for h in hits)

    def edit(self, path: str, old: str, new: str) -> tuple[str, dict[str, Any]]:
        return "edit_file", {"path": path, "old_string": old, "new_string": new}

    def edit_ok(self, path: str) -> str:
        return f"Edited {path}: 1 replacement."

    def edit_fail(self, path: str, old: str) -> tuple[str, bool]:
        return f"Error: old_string not found in {path}. String to replace not found in file.", True

    def write(self, path: str) -> tuple[str, dict[str, Any]]:
        return "write_file", {"path": path, "content": "{}\n"}

    def write_ok(self, path: str) -> str:
        return f"Wrote 3 bytes to {path}"

    def write_nodir(self, path: str) -> tuple[str, bool]:
        return f"Error: ENOENT: no such file or directory, open '{path}'", True

    def sh(self, command: str) -> tuple[str, dict[str, Any]]:
        return "bash", {"command": command}

    def sh_ok(self, command: str, out: str) -> str:
        return out

    def sh_fail(self, command: str, out: str, code: int = 1) -> tuple[str, bool]:
        return f"{out}\n[exit code {code}]", True


class Codex(Dialect):
    name = "codex"

    def _exec(self, code: int, out: str) -> str:
        return f"Exit code: {code}\nWall time: 0.2 seconds\nOutput:\n{out}"

    def read(self, path: str) -> tuple[str, dict[str, Any]]:
        return self.sh(f"sed -n '1,200p' {path}")

    def read_ok(self, path: str) -> str:
        return self._exec(0, f"# {path}\nVALUE = 1\n")

    def read_missing(self, path: str) -> tuple[str, bool]:
        return self._exec(2, f"sed: can't read {path}: No such file or directory"), True

    def ls(self, path: str) -> tuple[str, dict[str, Any]]:
        return self.sh(f"ls {path}")

    def ls_ok(self, names: list[str]) -> str:
        return self._exec(0, "\n".join(names))

    def find(self, pattern: str) -> tuple[str, dict[str, Any]]:
        return self.sh(f"rg -n '{pattern}'")

    def find_ok(self, hits: list[str], pattern: str) -> str:
        return self._exec(0, "\n".join(f"{h}:12:{pattern}" for h in hits))

    def edit(self, path: str, old: str, new: str) -> tuple[str, dict[str, Any]]:
        patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch"
        return "apply_patch", {"input": patch}

    def edit_ok(self, path: str) -> str:
        return f"Success. Updated the following files:\nM {path}"

    def edit_fail(self, path: str, old: str) -> tuple[str, bool]:
        return (
            f"apply_patch verification failed: Failed to find expected lines in {path}:\n{old}",
            True,
        )

    def write(self, path: str) -> tuple[str, dict[str, Any]]:
        return self.sh(f"printf '{{}}\\n' > {path}")

    def write_ok(self, path: str) -> str:
        return self._exec(0, "")

    def write_nodir(self, path: str) -> tuple[str, bool]:
        return self._exec(1, f"bash: line 1: {path}: No such file or directory"), True

    def sh(self, command: str) -> tuple[str, dict[str, Any]]:
        return "shell", {"command": ["bash", "-lc", command], "workdir": self.root}

    def sh_ok(self, command: str, out: str) -> str:
        return self._exec(0, out)

    def sh_fail(self, command: str, out: str, code: int = 1) -> tuple[str, bool]:
        return self._exec(code, out), True


class Claude(Dialect):
    name = "claude"

    def read(self, path: str) -> tuple[str, dict[str, Any]]:
        return "Read", {"file_path": f"{self.root}/{path}"}

    def read_ok(self, path: str) -> str:
        return f"     1\t// {path}\n     2\texport const value = 1;\n"

    def read_missing(self, path: str) -> tuple[str, bool]:
        return f"File does not exist. Note: your current working directory is {self.root}.", True

    def ls(self, path: str) -> tuple[str, dict[str, Any]]:
        return "Bash", {"command": f"ls {path}", "description": f"List {path}"}

    def find(self, pattern: str) -> tuple[str, dict[str, Any]]:
        return "Grep", {"pattern": pattern, "output_mode": "files_with_matches"}

    def find_ok(self, hits: list[str], pattern: str) -> str:
        return f"Found {len(hits)} files\n" + "\n".join(f"{self.root}/{h}" for h in hits)

    def edit(self, path: str, old: str, new: str) -> tuple[str, dict[str, Any]]:
        return "Edit", {"file_path": f"{self.root}/{path}", "old_string": old, "new_string": new}

    def edit_ok(self, path: str) -> str:
        return f"The file {self.root}/{path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n    12\t  value = 2"

    def edit_fail(self, path: str, old: str) -> tuple[str, bool]:
        return (
            f"<tool_use_error>String to replace not found in file.\nString: {old}</tool_use_error>",
            True,
        )

    def write(self, path: str) -> tuple[str, dict[str, Any]]:
        return "Write", {"file_path": f"{self.root}/{path}", "content": "{}\n"}

    def write_ok(self, path: str) -> str:
        return f"File created successfully at: {self.root}/{path}"

    def write_nodir(self, path: str) -> tuple[str, bool]:
        return f"ENOENT: no such file or directory, open '{self.root}/{path}'", True

    def sh(self, command: str) -> tuple[str, dict[str, Any]]:
        return "Bash", {"command": command, "description": "Run " + command.split()[0]}

    def sh_fail(self, command: str, out: str, code: int = 1) -> tuple[str, bool]:
        return f"Exit code {code}\n{out}", True


class Gemini(Dialect):
    name = "gemini"

    def read(self, path: str) -> tuple[str, dict[str, Any]]:
        return "read_file", {"file_path": f"{self.root}/{path}"}

    def read_missing(self, path: str) -> tuple[str, bool]:
        return f"File not found: {self.root}/{path}", True

    def ls(self, path: str) -> tuple[str, dict[str, Any]]:
        return "list_directory", {"path": f"{self.root}/{path}"}

    def ls_ok(self, names: list[str]) -> str:
        return f"Directory listing for {self.root}:\n" + "\n".join(names)

    def find(self, pattern: str) -> tuple[str, dict[str, Any]]:
        return "search_file_content", {"pattern": pattern}

    def find_ok(self, hits: list[str], pattern: str) -> str:
        body = "\n".join(f"File: {h}\nL12: {pattern}\n---" for h in hits)
        return f'Found {len(hits)} matches for pattern "{pattern}" in the workspace directory:\n---\n{body}'

    def edit(self, path: str, old: str, new: str) -> tuple[str, dict[str, Any]]:
        args = {"file_path": f"{self.root}/{path}", "old_string": old, "new_string": new}
        return "replace", args

    def edit_ok(self, path: str) -> str:
        return f"Successfully modified file: {self.root}/{path} (1 replacements)."

    def edit_fail(self, path: str, old: str) -> tuple[str, bool]:
        text = (
            f"Failed to edit, 0 occurrences found for old_string ({old}). Original old_string "
            f"was ({old}) in {self.root}/{path}. No edits made."
        )
        return text, True

    def write(self, path: str) -> tuple[str, dict[str, Any]]:
        return "write_file", {"file_path": f"{self.root}/{path}", "content": "{}\n"}

    def write_ok(self, path: str) -> str:
        return f"Successfully created and wrote to new file: {self.root}/{path}."

    def write_nodir(self, path: str) -> tuple[str, bool]:
        return (
            f"Error writing to file: ENOENT: no such file or directory, open '{self.root}/{path}'",
            True,
        )

    def sh(self, command: str) -> tuple[str, dict[str, Any]]:
        return "run_shell_command", {"command": command}

    def sh_ok(self, command: str, out: str) -> str:
        return f"Command: {command}\nDirectory: (root)\nOutput: {out}\nError: (none)\nExit Code: 0"

    def sh_fail(self, command: str, out: str, code: int = 1) -> tuple[str, bool]:
        text = f"Command: {command}\nDirectory: (root)\nOutput: {out}\nError: (none)\nExit Code: {code}"
        return text, True


class Script:
    """Steps of one transcript, with the links a reader draws."""

    def __init__(self, d: Dialect) -> None:
        self.d = d
        self.steps: list[Step] = []
        self.links: list[Link] = []

    def ok(self, call: tuple[str, dict[str, Any]], out: str) -> int:
        self.steps.append({"tool": call[0], "args": call[1], "out": out})
        return len(self.steps) - 1

    def fail(self, call: tuple[str, dict[str, Any]], out: tuple[str, bool]) -> int:
        self.steps.append({"tool": call[0], "args": call[1], "out": out[0], "err": out[1]})
        return len(self.steps) - 1

    def link(self, failed: list[int], by: int, kind: str, via: list[int] | None = None) -> None:
        self.links.append({"failed": failed, "by": by, "kind": kind, "via": via or []})


Scenario = Callable[[Script, tuple[str, ...]], str]


def read_then_list(s: Script, p: tuple[str, ...]) -> str:
    """Reads a file that is not there (twice), lists the directory, reads the right one."""
    _, folder, asked, real, sibling, *_ = p
    d = s.d
    a = s.fail(d.read(f"{folder}/{asked}"), d.read_missing(f"{folder}/{asked}"))
    b = s.fail(d.read(f"{folder}/{asked}"), d.read_missing(f"{folder}/{asked}"))
    via = s.ok(d.ls(folder), d.ls_ok([sibling, real]))
    by = s.ok(d.read(f"{folder}/{real}"), d.read_ok(f"{folder}/{real}"))
    s.link([a, b], by, "alternative", [via])
    return "not found twice, listing finds the file, read it"


def read_then_grep(s: Script, p: tuple[str, ...]) -> str:
    """A file that is not there; a content search names the right one."""
    _, folder, asked, real, *_ = p
    d = s.d
    a = s.fail(d.read(f"{folder}/{asked}"), d.read_missing(f"{folder}/{asked}"))
    via = s.ok(d.find("DEFAULT_PORT"), d.find_ok([f"{folder}/{real}"], "DEFAULT_PORT"))
    by = s.ok(d.read(f"{folder}/{real}"), d.read_ok(f"{folder}/{real}"))
    s.link([a], by, "alternative", [via])
    return "not found, grep names the file, read it"


def wrong_directory(s: Script, p: tuple[str, ...]) -> str:
    """The right file name in the wrong directory; the same name elsewhere works."""
    _, folder, asked, *_ = p
    d = s.d
    a = s.fail(d.read(asked), d.read_missing(asked))
    by = s.ok(d.read(f"{folder}/{asked}"), d.read_ok(f"{folder}/{asked}"))
    s.link([a], by, "alternative")
    return "read at the root fails, the same name under its folder works (no listing)"


def wrong_extension(s: Script, p: tuple[str, ...]) -> str:
    """A guessed extension; the same stem with the right extension works."""
    _, folder, asked, *_ = p
    d = s.d
    stem, _, ext = asked.rpartition(".")
    other = {"ts": "js", "py": "pyi", "rb": "rake", "go": "txt", "tsx": "jsx"}.get(ext, "txt")
    a = s.fail(d.read(f"{folder}/{stem}.{other}"), d.read_missing(f"{folder}/{stem}.{other}"))
    by = s.ok(d.read(f"{folder}/{asked}"), d.read_ok(f"{folder}/{asked}"))
    s.link([a], by, "alternative")
    return "wrong extension, the right one works"


def give_up_read(s: Script, p: tuple[str, ...]) -> str:
    """A missing file read twice, then the agent works on something else."""
    _, folder, asked, _, sibling, _, test = p
    d = s.d
    s.fail(d.read(f"{folder}/{asked}"), d.read_missing(f"{folder}/{asked}"))
    s.fail(d.read(f"{folder}/{asked}"), d.read_missing(f"{folder}/{asked}"))
    s.ok(d.sh("git status --short"), d.sh_ok("git status --short", f" M {folder}/{sibling}"))
    s.ok(d.sh(test), d.sh_ok(test, "12 passed in 1.3s"))
    return "gives up on the file; unrelated successes"


def unrelated_read(s: Script, p: tuple[str, ...]) -> str:
    """A missing file, then a different file that nothing found and that is not a variant:
    a reader cannot tell it replaced the missing one."""
    _, folder, asked, _, sibling, *_ = p
    d = s.d
    s.fail(d.read(f"{folder}/{asked}"), d.read_missing(f"{folder}/{asked}"))
    s.ok(d.read("README.md"), d.read_ok("README.md"))
    s.ok(d.read(f"{folder}/{sibling}"), d.read_ok(f"{folder}/{sibling}"))
    return "not found, then other files read with no evidence they replace it"


def unrelated_then_found(s: Script, p: tuple[str, ...]) -> str:
    """A missing file, an unrelated read, then a listing and the right file."""
    _, folder, asked, real, sibling, *_ = p
    d = s.d
    a = s.fail(d.read(f"{folder}/{asked}"), d.read_missing(f"{folder}/{asked}"))
    s.ok(d.read("package.json"), d.read_ok("package.json"))
    via = s.ok(d.ls(folder), d.ls_ok([real, sibling]))
    by = s.ok(d.read(f"{folder}/{real}"), d.read_ok(f"{folder}/{real}"))
    s.link([a], by, "alternative", [via])
    return "not found, unrelated read, listing, right file"


def install_then_retry(s: Script, p: tuple[str, ...]) -> str:
    """Tests fail on a missing module; installing it makes the same command pass."""
    *_, module, test = p
    d = s.d
    missing = {
        "lodash": f"Error: Cannot find module '{module}'\nRequire stack:\n- /repo/src/util.js",
        "requests": f"ModuleNotFoundError: No module named '{module}'",
        "nokogiri": f"cannot load such file -- {module} (LoadError)",
        "github.com/gin-gonic/gin": f"no required module provides package {module}; to add it:\n\tgo get {module}",
        "react-router-dom": f'Error: Failed to resolve import "{module}" from "src/App.tsx". Does the file exist?',
        "pandas": f"ModuleNotFoundError: No module named '{module}'",
    }[module]
    installer = {
        "lodash": "npm install lodash",
        "requests": "pip install requests",
        "nokogiri": "bundle add nokogiri",
        "github.com/gin-gonic/gin": f"go get {module}",
        "react-router-dom": "npm install react-router-dom",
        "pandas": "pip install pandas",
    }[module]
    a = s.fail(d.sh(test), d.sh_fail(test, missing))
    via = s.ok(d.sh(installer), d.sh_ok(installer, f"added 1 package: {module}"))
    by = s.ok(d.sh(test), d.sh_ok(test, "24 passed in 2.1s"))
    s.link([a], by, "retry", [via])
    return "missing module, install, same command passes"


def mkdir_then_write(s: Script, p: tuple[str, ...]) -> str:
    """Writing into a directory that does not exist; mkdir, then the same write works."""
    d = s.d
    path = "build/reports/summary.json"
    a = s.fail(d.write(path), d.write_nodir(path))
    via = s.ok(d.sh("mkdir -p build/reports"), d.sh_ok("mkdir -p build/reports", ""))
    by = s.ok(d.write(path), d.write_ok(path))
    s.link([a], by, "retry", [via])
    return "write fails (no directory), mkdir, same write works"


def chmod_then_run(s: Script, p: tuple[str, ...]) -> str:
    """A script without the execute bit; chmod +x, then it runs."""
    d = s.d
    a = s.fail(
        d.sh("./scripts/deploy.sh"),
        d.sh_fail("./scripts/deploy.sh", "bash: ./scripts/deploy.sh: Permission denied", 126),
    )
    via = s.ok(d.sh("chmod +x scripts/deploy.sh"), d.sh_ok("chmod +x scripts/deploy.sh", ""))
    by = s.ok(d.sh("./scripts/deploy.sh"), d.sh_ok("./scripts/deploy.sh", "deployed to staging"))
    s.link([a], by, "retry", [via])
    return "permission denied, chmod, same command works"


def edit_reread(s: Script, p: tuple[str, ...]) -> str:
    """An edit whose old text does not match; re-read the file, the edit with the right text
    works."""
    _, folder, _, real, *_ = p
    d = s.d
    path = f"{folder}/{real}"
    a = s.fail(d.edit(path, "port = 300", "port = 8080"), d.edit_fail(path, "port = 300"))
    via = s.ok(d.read(path), d.read_ok(path))
    by = s.ok(d.edit(path, "port: 3000", "port: 8080"), d.edit_ok(path))
    s.link([a], by, "retry", [via])
    return "edit mismatch, re-read, edit with other text works"


def edit_twice_then_ok(s: Script, p: tuple[str, ...]) -> str:
    """Two mismatched edits in a row, then one that matches (no re-read)."""
    _, folder, _, real, *_ = p
    d = s.d
    path = f"{folder}/{real}"
    a = s.fail(d.edit(path, "timeout=30", "timeout=60"), d.edit_fail(path, "timeout=30"))
    b = s.fail(d.edit(path, "timeout = 30", "timeout = 60"), d.edit_fail(path, "timeout = 30"))
    by = s.ok(d.edit(path, "TIMEOUT = 30", "TIMEOUT = 60"), d.edit_ok(path))
    s.link([a, b], by, "retry")
    return "two edit mismatches, third edit works"


def edit_give_up(s: Script, p: tuple[str, ...]) -> str:
    """Edits that never match; the agent edits another file instead (a different change)."""
    _, folder, _, real, sibling, *_ = p
    d = s.d
    path = f"{folder}/{real}"
    s.fail(d.edit(path, "retries = 3", "retries = 5"), d.edit_fail(path, "retries = 3"))
    s.fail(d.edit(path, "retries=3", "retries=5"), d.edit_fail(path, "retries=3"))
    s.ok(
        d.edit(f"{folder}/{sibling}", "debug = False", "debug = True"),
        d.edit_ok(f"{folder}/{sibling}"),
    )
    return "edit mismatches, then an unrelated edit elsewhere"


def build_fix_rebuild(s: Script, p: tuple[str, ...]) -> str:
    """A build error; the file is fixed; the same build passes."""
    _, folder, _, real, *_ = p
    d = s.d
    path = f"{folder}/{real}"
    build = "npm run build"
    a = s.fail(
        d.sh(build),
        d.sh_fail(
            build,
            f"{path}(14,7): error TS2322: Type 'string' is not assignable to type 'number'.\nFound 1 error.",
        ),
    )
    s.ok(d.read(path), d.read_ok(path))
    via = s.ok(d.edit(path, "port: string", "port: number"), d.edit_ok(path))
    by = s.ok(d.sh(build), d.sh_ok(build, "Build completed in 3.2s"))
    s.link([a], by, "retry", [via])
    return "build error, read and fix, same build passes"


def tests_fix_retest(s: Script, p: tuple[str, ...]) -> str:
    """Failing tests twice (two fixes); the third run passes."""
    _, folder, _, real, *_, test = p
    d = s.d
    path = f"{folder}/{real}"
    fail_text = "FAILED tests/test_totals.py::test_rounding - assert 10.01 == 10.0\n1 failed, 11 passed in 0.8s"
    a = s.fail(d.sh(test), d.sh_fail(test, fail_text))
    s.ok(d.edit(path, "round(x, 1)", "round(x, 2)"), d.edit_ok(path))
    b = s.fail(d.sh(test), d.sh_fail(test, fail_text))
    via = s.ok(d.edit(path, "round(x, 2)", "Decimal(x).quantize(CENT)"), d.edit_ok(path))
    by = s.ok(d.sh(test), d.sh_ok(test, "12 passed in 0.7s"))
    s.link([a, b], by, "retry", [via])
    return "tests fail twice with a fix between, pass after the second fix"


def db_down_retry(s: Script, p: tuple[str, ...]) -> str:
    """Connection refused; the database is started; the same migration works."""
    d = s.d
    cmd = "python manage.py migrate"
    a = s.fail(
        d.sh(cmd),
        d.sh_fail(
            cmd,
            'django.db.utils.OperationalError: connection to server at "127.0.0.1", port 5432 failed: Connection refused',
        ),
    )
    via = s.ok(
        d.sh("docker compose up -d db"),
        d.sh_ok("docker compose up -d db", "Container shop-db-1  Started"),
    )
    by = s.ok(d.sh(cmd), d.sh_ok(cmd, "Applying orders.0007_invoice_total... OK"))
    s.link([a], by, "retry", [via])
    return "connection refused, start the database, same command works"


def flaky_timeout(s: Script, p: tuple[str, ...]) -> str:
    """A network call times out; the identical call works on retry."""
    d = s.d
    cmd = "curl -sS https://registry.npmjs.org/left-pad"
    a = s.fail(
        d.sh(cmd),
        d.sh_fail(
            cmd, "curl: (28) Operation timed out after 30001 milliseconds with 0 bytes received", 28
        ),
    )
    by = s.ok(d.sh(cmd), d.sh_ok(cmd, '{"name":"left-pad","dist-tags":{"latest":"1.3.0"}}'))
    s.link([a], by, "retry")
    return "timeout, identical retry works"


def interleaved(s: Script, p: tuple[str, ...]) -> str:
    """Two streaks at once: a missing file and failing tests; each ends its own way."""
    _, folder, asked, real, sibling, _, test = p
    d = s.d
    fail_text = "FAILED tests/test_api.py::test_login - assert 401 == 200\n1 failed, 5 passed"
    a = s.fail(d.read(f"{folder}/{asked}"), d.read_missing(f"{folder}/{asked}"))
    t1 = s.fail(d.sh(test), d.sh_fail(test, fail_text))
    via_ls = s.ok(d.ls(folder), d.ls_ok([real, sibling]))
    by_read = s.ok(d.read(f"{folder}/{real}"), d.read_ok(f"{folder}/{real}"))
    via_edit = s.ok(
        d.edit(f"{folder}/{real}", "status: 401", "status: 200"), d.edit_ok(f"{folder}/{real}")
    )
    by_test = s.ok(d.sh(test), d.sh_ok(test, "6 passed in 0.4s"))
    s.link([a], by_read, "alternative", [via_ls])
    s.link([t1], by_test, "retry", [via_edit])
    return "missing file and failing tests interleaved; each resolved separately"


def interleaved_one_open(s: Script, p: tuple[str, ...]) -> str:
    """Two missing files; a listing finds a replacement for one; the other stays open."""
    _, folder, asked, real, sibling, *_ = p
    d = s.d
    a = s.fail(d.read(f"{folder}/{asked}"), d.read_missing(f"{folder}/{asked}"))
    s.fail(d.read("docs/ARCHITECTURE.md"), d.read_missing("docs/ARCHITECTURE.md"))
    via = s.ok(d.ls(folder), d.ls_ok([real, sibling]))
    by = s.ok(d.read(f"{folder}/{real}"), d.read_ok(f"{folder}/{real}"))
    s.link([a], by, "alternative", [via])
    return "two missing files, a listing finds one; the doc stays unresolved"


def success_before_failure(s: Script, p: tuple[str, ...]) -> str:
    """A file read fine, then a later read of it fails (deleted): nothing resolved."""
    _, folder, _, real, *_ = p
    d = s.d
    path = f"{folder}/{real}"
    s.ok(d.read(path), d.read_ok(path))
    s.ok(d.sh(f"git rm {path}"), d.sh_ok(f"git rm {path}", f"rm '{path}'"))
    s.fail(d.read(path), d.read_missing(path))
    s.ok(d.sh("git status --short"), d.sh_ok("git status --short", f"D  {path}"))
    return "success precedes the failure; nothing resolves it"


def retry_unchanged_fails_then_other_tool(s: Script, p: tuple[str, ...]) -> str:
    """Tests fail three times identically, the agent reads files and stops: given up."""
    _, folder, _, real, sibling, _, test = p
    d = s.d
    fail_text = (
        "FAILED tests/test_sync.py::test_retry - TimeoutError: sync did not finish\n1 failed"
    )
    for _ in range(3):
        s.fail(d.sh(test), d.sh_fail(test, fail_text))
    s.ok(d.read(f"{folder}/{real}"), d.read_ok(f"{folder}/{real}"))
    s.ok(d.read(f"{folder}/{sibling}"), d.read_ok(f"{folder}/{sibling}"))
    return "same failing test three times, then reading: given up"


def write_after_edit(s: Script, p: tuple[str, ...]) -> str:
    """Edits do not match; the agent rewrites the whole file instead."""
    _, folder, _, real, *_ = p
    d = s.d
    path = f"{folder}/{real}"
    a = s.fail(d.edit(path, "MAX = 10", "MAX = 20"), d.edit_fail(path, "MAX = 10"))
    by = s.ok(d.write(path), d.write_ok(path))
    s.link([a], by, "alternative")
    return "edit mismatch, whole file rewritten"


def wrong_tool_name(s: Script, p: tuple[str, ...]) -> str:
    """The model calls a tool that does not exist, then the real one for the same search."""
    d = s.d
    a = s.fail(
        ("search_code", {"query": "DEFAULT_PORT"}),
        (
            f"Error: Tool search_code not found. Available tools: {d.find('x')[0]}, {d.read('x')[0]}",
            True,
        ),
    )
    by = s.ok(d.find("DEFAULT_PORT"), d.find_ok(["src/settings.ts"], "DEFAULT_PORT"))
    s.link([a], by, "alternative")
    return "unknown tool, the real search tool works"


def invalid_args_retry(s: Script, p: tuple[str, ...]) -> str:
    """A call with a wrong argument value; the same call with a valid one works."""
    _, folder, _, real, *_ = p
    d = s.d
    path = f"{folder}/{real}"
    tool = d.read(path)[0]
    bad = dict(d.read(path)[1], offset=-5)
    good = dict(d.read(path)[1], offset=40)
    a = s.fail(
        (tool, bad),
        ("Error: invalid arguments: offset must be a non-negative integer (got -5)", True),
    )
    by = s.ok((tool, good), d.read_ok(path))
    s.link([a], by, "retry")
    return "invalid argument, same call with a valid value works"


def rate_limited(s: Script, p: tuple[str, ...]) -> str:
    """An API tool is rate limited twice; an unrelated read in between; then it works."""
    d = s.d
    call = ("web_fetch", {"url": "https://api.github.com/repos/acme/shop/issues/42"})
    a = s.fail(
        call,
        ("Error: 429 Too Many Requests: API rate limit exceeded, retry after 30 seconds", True),
    )
    s.ok(d.read("CHANGELOG.md"), d.read_ok("CHANGELOG.md"))
    b = s.fail(
        call,
        ("Error: 429 Too Many Requests: API rate limit exceeded, retry after 12 seconds", True),
    )
    by = s.ok(call, '{"number": 42, "title": "Checkout fails on empty cart", "state": "open"}')
    s.link([a, b], by, "retry")
    return "rate limited twice, then the same fetch works"


def found_but_unused(s: Script, p: tuple[str, ...]) -> str:
    """A listing shows the right file but the agent never reads it; it runs tests instead."""
    _, folder, asked, real, sibling, _, test = p
    d = s.d
    s.fail(d.read(f"{folder}/{asked}"), d.read_missing(f"{folder}/{asked}"))
    s.ok(d.ls(folder), d.ls_ok([real, sibling]))
    s.ok(d.sh(test), d.sh_ok(test, "8 passed"))
    return "listing finds the file, but it is never read: no resolution"


def long_gap_retry(s: Script, p: tuple[str, ...]) -> str:
    """Tests fail on a missing env var; many steps later (after setting it) they pass."""
    _, folder, _, real, sibling, _, test = p
    d = s.d
    fail_text = "KeyError: 'DATABASE_URL'\nERROR tests/conftest.py - KeyError: 'DATABASE_URL'\n1 error in 0.3s"
    a = s.fail(d.sh(test), d.sh_fail(test, fail_text))
    s.ok(d.read(".env.example"), d.read_ok(".env.example"))
    s.ok(d.read(f"{folder}/{real}"), d.read_ok(f"{folder}/{real}"))
    s.ok(d.read(f"{folder}/{sibling}"), d.read_ok(f"{folder}/{sibling}"))
    via = s.ok(d.write(".env"), d.write_ok(".env"))
    by = s.ok(d.sh(test), d.sh_ok(test, "31 passed in 4.0s"))
    s.link([a], by, "retry", [via])
    return "tests error on a missing variable; after reading and writing .env they pass"


SCENARIOS: list[Scenario] = [
    read_then_list,
    read_then_grep,
    wrong_directory,
    wrong_extension,
    give_up_read,
    unrelated_read,
    unrelated_then_found,
    install_then_retry,
    mkdir_then_write,
    chmod_then_run,
    edit_reread,
    edit_twice_then_ok,
    edit_give_up,
    build_fix_rebuild,
    tests_fix_retest,
    db_down_retry,
    flaky_timeout,
    interleaved,
    interleaved_one_open,
    success_before_failure,
    retry_unchanged_fails_then_other_tool,
    write_after_edit,
    wrong_tool_name,
    invalid_args_retry,
    rate_limited,
    found_but_unused,
    long_gap_retry,
]
DIALECTS: list[type[Dialect]] = [Dialect, Codex, Claude, Gemini]


def build() -> list[dict[str, Any]]:
    """Every scenario in every dialect, each on one of the projects."""
    out = []
    for i, scenario in enumerate(SCENARIOS):
        for j, dialect in enumerate(DIALECTS):
            project = PROJECTS[(i + j) % len(PROJECTS)]
            s = Script(dialect(project[0]))
            note = scenario(s, project)
            out.append(
                {
                    "id": f"{scenario.__name__}-{dialect.name}",
                    "format": FORMATS[dialect.name],
                    "note": note,
                    "steps": s.steps,
                    "links": s.links,
                }
            )
    return out


def unseen(transcript_id: str) -> bool:
    """Every third transcript, by a stable digest of its id."""
    return int(hashlib.sha256(transcript_id.encode()).hexdigest(), 16) % 3 == 0


HEADER = """\
# Labelled transcripts for the resolution linker (issue 27): bench/resolution_set.py writes this
# file; labels come from each scenario's definition there, written before the linker.
# steps: one tool call per turn (tool, args, out; err: the agent flags the result as an error,
# as Claude Code's is_error and Gemini CLI's {"error": ...} do).
# links: failed steps -> the step that resolved them (retry | alternative), via: what made it work.
"""


def main() -> None:
    transcripts = build()
    parts = {
        "resolutions.yaml": [t for t in transcripts if not unseen(t["id"])],
        "resolutions_unseen.yaml": [t for t in transcripts if unseen(t["id"])],
    }
    for name, items in parts.items():
        text = yaml.safe_dump(items, sort_keys=False, allow_unicode=True, width=100)
        (DATA / name).write_text(HEADER + text)
        print(f"{name}: {len(items)} transcripts, {sum(len(t['links']) for t in items)} links")


if __name__ == "__main__":
    main()
