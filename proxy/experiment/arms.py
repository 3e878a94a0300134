"""A/B arms: a deterministic share of sessions (`control_fraction`) gets nothing injected."""

from __future__ import annotations

import hashlib
from typing import Literal

Arm = Literal["treatment", "control"]


def arm_of(key: str, control_fraction: float) -> Arm:
    """The arm of session `key`: the same for every request, replica and restart."""
    if control_fraction <= 0:
        return "treatment"
    point = int.from_bytes(hashlib.sha256(b"arm\0" + key.encode()).digest()[:8], "big") / 2**64
    return "control" if point < control_fraction else "treatment"
