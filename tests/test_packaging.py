"""Every package and data file under proxy/ (import name recovery_proxy) ships in the wheel (a non-editable `pip install .` needs them)."""

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


def test_every_data_file_under_proxy_is_package_data() -> None:
    """The wheel ships the data the code reads (the context-window table and its licence)."""
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]
    shipped = {
        path
        for package, patterns in package_data.items()
        if package.split(".")[0] == "recovery_proxy"
        for pattern in patterns
        for path in (ROOT / "proxy").joinpath(*package.split(".")[1:]).glob(pattern)
    }
    data = {
        path
        for path in (ROOT / "proxy").rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc", ".md")
    }
    assert data, "expected tokens_data/windows.json at least"
    missing = sorted(str(p.relative_to(ROOT)) for p in data - shipped)
    assert not missing, f"add to [tool.setuptools.package-data]: {missing}"
