"""Core tests run on the bundled rules."""

from __future__ import annotations

import pytest

from recovery_proxy.rules.load import default_rules_dir, load_rules
from recovery_proxy.rules.model import Rules


@pytest.fixture(scope="session")
def rules() -> Rules:
    return load_rules(default_rules_dir())
