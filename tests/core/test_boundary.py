"""The core stays neutral: no wire format, no HTTP framework, no app (DESIGN "Intended layout")."""

from __future__ import annotations

import ast
from pathlib import Path

import recovery_proxy.core

CORE = Path(recovery_proxy.core.__file__).parent
FORBIDDEN = (
    "recovery_proxy.wire",
    "recovery_proxy.server.app",
    "recovery_proxy.pipeline",
    "recovery_proxy.server.upstream",
    "starlette",
    "fastapi",
)
PROXY_ALLOWED = ("recovery_proxy.core", "recovery_proxy.rules.model")


def imported_modules(path: Path) -> list[str]:
    """Every module a file imports, absolute (`from . import x` resolved inside recovery_proxy.core)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(["recovery_proxy", "core", *([base] if base else [])])
            names += [base] + [f"{base}.{alias.name}" for alias in node.names]
    return names


def test_core_files_exist() -> None:
    files = {p.name for p in CORE.glob("*.py")}
    expected = {"conversation.py", "classify.py", "tracker.py", "plan.py", "render.py"}
    assert expected | {"compaction.py", "state.py"} <= files


def test_core_imports_no_wire_format_app_or_http_framework() -> None:
    offenders = []
    for path in sorted(CORE.glob("*.py")):
        for name in imported_modules(path):
            forbidden = any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
            foreign = (name == "recovery_proxy" or name.startswith("recovery_proxy.")) and not any(
                name == a or name.startswith(a + ".") for a in PROXY_ALLOWED
            )
            if forbidden or foreign:
                offenders.append(f"{path.name}: {name}")
    assert offenders == []


def test_the_walk_sees_imports_of_every_shape(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import starlette.responses\nfrom recovery_proxy.wire import openai_chat\nfrom . import plan\n"
        "def f():\n    from fastapi import FastAPI\n"
    )
    names = imported_modules(sample)
    assert {
        "starlette.responses",
        "recovery_proxy.wire.openai_chat",
        "recovery_proxy.core.plan",
        "fastapi",
    } <= set(names)
