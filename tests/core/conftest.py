"""Core tests run on the bundled rules."""

from __future__ import annotations

import pytest

from recovery_proxy.rules import Rules
from recovery_proxy.rules_load import default_rules_dir, load_rules


@pytest.fixture(scope="session")
def rules() -> Rules:
    return load_rules(default_rules_dir())
