"""bench/results-blocks.md's "after" table is what the current rules add: it cannot drift."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_recorded_block_tokens_are_what_the_rules_add_now() -> None:
    recorded = (ROOT / "bench" / "results-blocks.md").read_text(encoding="utf-8")
    match = re.search(
        r"<!-- block_tokens: start -->\n(.*?)\n<!-- block_tokens: end -->", recorded, re.S
    )
    assert match, "bench/results-blocks.md lost its table: rerun python -m bench.block_tokens"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECOVERY_PROXY_")}
    env |= {"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    done = subprocess.run(
        [sys.executable, "-m", "bench.block_tokens"],
        capture_output=True, text=True, timeout=60, cwd=ROOT, env=env, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == match.group(1).strip()
