"""The categories file the error messages real programs print (tests/data/error_messages.yaml:
1,108 messages from 257 programs, written blind to the rules) as a recovery block should."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml

from recovery_proxy.core.classify import CATEGORY_LINE_MAX, categorise, key_line
from recovery_proxy.rules.load import load_rules

BANK = Path(__file__).resolve().parents[1] / "data" / "error_messages.yaml"


def test_error_messages_are_filed_in_their_category() -> None:
    rules = load_rules()
    bank = yaml.safe_load(BANK.read_text(encoding="utf-8"))
    assert len(bank) > 1000 and len({e["category"] for e in bank}) == 19
    misses: Counter[tuple[str, str]] = Counter()
    for entry in bank:
        body = entry["lines"].encode()
        line = key_line(body, rules, CATEGORY_LINE_MAX).encode()
        got = categorise(entry["program"], line, body, rules)
        if got != entry["category"]:
            misses[(entry["category"], got)] += 1
    assert sum(misses.values()) <= 0.04 * len(bank), misses.most_common()
