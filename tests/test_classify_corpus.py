"""Precision and recall of failure detection over the labelled corpus (tests/data)."""

from __future__ import annotations

from collections import Counter

import pytest

from proxy.rules import load_rules
from tests.corpus import CORPUS, HOLDOUT, HOLDOUT2, load_corpus, per_category, report, score

MIN_PRECISION = 0.99
MIN_RECALL = 0.95


@pytest.fixture(scope="module")
def rules():
    return load_rules()


def test_corpus_is_big_and_balanced_enough() -> None:
    entries = load_corpus()
    negatives = [e for e in entries if not e["expect"]["error"]]
    categories = Counter(e["expect"]["category"] for e in entries if e["expect"]["error"])
    assert len(entries) >= 150
    assert len(negatives) >= 60
    assert len(categories) == 15 and min(categories.values()) >= 4
    assert len({e["id"] for e in entries}) == len(entries)


@pytest.mark.parametrize("path", [CORPUS, HOLDOUT, HOLDOUT2], ids=["corpus", "holdout", "holdout2"])
def test_precision_and_recall(rules, path) -> None:
    s = score(rules, load_corpus(path))
    report = "\n".join(s.misses)
    assert s.precision >= MIN_PRECISION, report
    assert s.recall >= MIN_RECALL, report
    assert s.category_accuracy >= 0.9, report


def test_per_category_report_covers_every_category(rules) -> None:
    s = score(rules, load_corpus(HOLDOUT2))
    table = per_category(s)
    assert len(table) == 15
    assert sum(total for total, *_ in table.values()) == s.tp + s.fn
    assert "| not_found |" in report(HOLDOUT2)
