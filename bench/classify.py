"""Classification throughput on one core: corpus-sized results and 1 MB results.

python -m bench.classify             throughput
python -m bench.classify --report    precision/recall per corpus and per category
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml

from recovery_proxy.core.classify import classify
from recovery_proxy.rules.load import load_rules

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "tool_results.yaml"


def rate(rules, items: list[tuple[str, str]], seconds: float = 2.0) -> tuple[float, int]:
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for tool, text in items:
            classify(rules, tool, text)
        done += len(items)
    return done / (time.perf_counter() - start), done


def main() -> None:
    if "--report" in sys.argv[1:]:
        from tests.corpus import CORPORA, report

        print("\n\n".join(report(path) for path in CORPORA))
        return
    rules = load_rules()
    corpus = [(e["tool"], e["content"]) for e in yaml.safe_load(CORPUS.read_text())]
    big_ok = ("read_file", "def handler(request):\n    return process(request)\n" * 20_000)
    big_fail = ("bash", "compiling module\n" * 60_000 + "error[E0308]: mismatched types\n")
    print(f"{'input':34} {'results/s':>12} {'us/result':>10}")
    average = sum(len(t) for _, t in corpus) // len(corpus)
    for name, items in (
        (f"corpus ({len(corpus)} results, avg {average} B)", corpus),
        (f"1 MB success ({len(big_ok[1]) // 1024} KiB)", [big_ok]),
        (f"1 MB failure ({len(big_fail[1]) // 1024} KiB)", [big_fail]),
    ):
        per_second, _ = rate(rules, items)
        print(f"{name:34} {per_second:12,.0f} {1e6 / per_second:10.1f}")


if __name__ == "__main__":
    main()
