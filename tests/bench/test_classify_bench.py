"""bench.classify: the figures the README quotes come out of it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_new_texts_prints_microseconds_per_result() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bench.classify", "--new"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    assert out.strip().isdigit() and int(out) > 0
