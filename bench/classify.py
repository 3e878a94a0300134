"""Classification throughput on one core: corpus-sized results and 1 MB results.

python -m bench.classify                    throughput of each input, after one untimed pass
python -m bench.classify --passes N INPUT   N timed passes over one input (corpus, success or
                                            failure), after one untimed: results/s, one line
python -m bench.classify --new              us per result on texts never seen, after a warm-up
                                            on other texts (the hold-outs 4 and 5 after the
                                            older corpora): what production traffic costs
python -m bench.classify --report           precision/recall per corpus and per category

Times are CPU seconds of this process. The inputs come from this file's tree and the classifier
from whichever `recovery_proxy` is importable, so one file measures two trees (PYTHONPATH).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import yaml

from recovery_proxy.core.classify import classify
from recovery_proxy.rules.load import load_rules

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
CORPUS = DATA / "tool_results.yaml"
SEEN = ("tool_results", "tool_results_holdout", "tool_results_holdout2", "tool_results_holdout3")
NEW = ("tool_results_holdout4", "tool_results_holdout5")
Items = list[tuple[str, str]]


def inputs() -> dict[str, Items]:
    """The corpus results, a 1 MB successful result and a 1 MB failure."""
    corpus = [(e["tool"], e["content"]) for e in yaml.safe_load(CORPUS.read_text())]
    return {
        "corpus": corpus,
        "success": [("read_file", "def handler(request):\n    return process(request)\n" * 20_000)],
        "failure": [("bash", "compiling module\n" * 60_000 + "error[E0308]: mismatched types\n")],
    }


def corpora(names: tuple[str, ...]) -> Items:
    """Every result of these corpora (each with its `_unseen` part, where there is one)."""
    paths = [p for name in names for p in (DATA / f"{name}.yaml", DATA / f"{name}_unseen.yaml")]
    return [
        (e["tool"], e["content"])
        for path in paths
        if path.is_file()
        for e in yaml.safe_load(path.read_text(encoding="utf-8"))
    ]


def new_texts(rules: Any) -> float:
    """Seconds per result on texts never seen, after two passes over other texts: RE2 has
    built the states those need, and builds more for these (a long-running proxy's case)."""
    for _ in range(2):
        for tool, text in corpora(SEEN):
            classify(rules, tool, text)
    return first_pass(rules, corpora(NEW))


def first_pass(rules: Any, items: Items) -> float:
    """Seconds per result of one pass: on new texts RE2 builds its automata's states."""
    start = time.process_time()
    for tool, text in items:
        classify(rules, tool, text)
    return (time.process_time() - start) / len(items)


def rate(rules: Any, items: Items, seconds: float = 2.0, passes: int | None = None) -> float:
    """Results per CPU second over `passes` passes (or as many as fit in `seconds`)."""
    done, start = 0, time.process_time()
    while (time.process_time() - start < seconds) if passes is None else done < passes * len(items):
        for tool, text in items:
            classify(rules, tool, text)
        done += len(items)
    return done / (time.process_time() - start)


def main() -> None:
    args = sys.argv[1:]
    if "--report" in args:
        from tests.corpus import CORPORA, report

        print("\n\n".join(report(path) for path in CORPORA))
        return
    rules = load_rules()
    if "--new" in args:
        print(f"{new_texts(rules) * 1e6:.0f}")
        return
    items = inputs()
    if "--passes" in args:
        at = args.index("--passes")
        chosen = items[args[at + 2] if len(args) > at + 2 else "corpus"]
        first_pass(rules, chosen)
        print(f"{rate(rules, chosen, passes=max(1, int(args[at + 1]))):.0f}")
        return
    corpus = items["corpus"]
    average = sum(len(t) for _, t in corpus) // len(corpus)
    names = {
        "corpus": f"corpus ({len(corpus)} results, avg {average} B)",
        "success": f"1 MB success ({len(items['success'][0][1]) // 1024} KiB)",
        "failure": f"1 MB failure ({len(items['failure'][0][1]) // 1024} KiB)",
    }
    print(f"{'input':34} {'results/s':>12} {'us/result':>10}")
    first = {key: first_pass(rules, chosen) for key, chosen in items.items()}
    for key, chosen in items.items():
        per_second = rate(rules, chosen)
        print(f"{names[key]:34} {per_second:12,.0f} {1e6 / per_second:10.1f}")
    cold = first["corpus"]
    print(f"{'corpus, first pass (new texts)':34} {1 / cold:12,.0f} {cold * 1e6:10.1f}")
    new = new_texts(rules)
    print(f"{'hold-outs 4, 5 after the others':34} {1 / new:12,.0f} {new * 1e6:10.1f}")


if __name__ == "__main__":
    main()
