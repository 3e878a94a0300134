"""Every package under proxy/ (import name recovery_proxy) ships in the wheel (a non-editable `pip install .` needs them)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_proxy_package_is_listed_in_pyproject() -> None:
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(("recovery_proxy", *init.parent.relative_to(ROOT / "proxy").parts))
        for init in (ROOT / "proxy").rglob("__init__.py")
    }
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
