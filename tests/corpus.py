"""The labelled corpora of tool results (tests/data/tool_results*.yaml) and their scoring."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from recovery_proxy.core.classify import classify
from recovery_proxy.core.commands import command_line
from recovery_proxy.rules.model import Rules

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "tool_results.yaml"
# Written later by another author without seeing the rules; scored once before any tuning on it.
HOLDOUT = DATA / "tool_results_holdout.yaml"
# Issue 12: a second hold-out by another author; before tuning P 0.992, R 0.709, category 0.774.
HOLDOUT2 = DATA / "tool_results_holdout2.yaml"
# Issue 23: a third hold-out (ids `h3-<language>-...`) written before reading the rules, split
# by md5(id) % 3 into a tuning part and an unseen part. Before tuning: tuning part P 0.975,
# R 0.532, category 0.771; unseen part P 1.000, R 0.578, 0.847. Its unseen part's misses were
# read after the fourth hold-out's round (P 1.000, R 0.941, 0.958 then): both are tuning data.
HOLDOUT3 = DATA / "tool_results_holdout3.yaml"
HOLDOUT3_UNSEEN = DATA / "tool_results_holdout3_unseen.yaml"
# A fourth hold-out (ids `h4-<language>-...`, 661 results, 19% not in English), written blind
# after the third's tuning, split the same way. Before any tuning on it (rules of 5bbe755):
# tuning part P 0.955, R 0.793, category 0.801; unseen part P 0.977, R 0.750, category 0.810.
HOLDOUT4 = DATA / "tool_results_holdout4.yaml"
HOLDOUT4_UNSEEN = DATA / "tool_results_holdout4_unseen.yaml"
# A fifth (ids `h5-...`, 810 results, 23% not in English), written blind after the fourth's
# tuning, split the same way. Before any tuning on it (rules of 4c863ea): tuning part P 0.972,
# R 0.910, category 0.780; unseen part P 0.966, R 0.881, category 0.793. The unseen parts of
# the fourth and fifth were never tuned on: their misses are not read, their figures not gated.
HOLDOUT5 = DATA / "tool_results_holdout5.yaml"
HOLDOUT5_UNSEEN = DATA / "tool_results_holdout5_unseen.yaml"
# A sixth (ids `h6a-...`, `h6b-...`, 895 results, 23% not in English), written blind by two
# authors at once after the fifth's tuning, as everyday agent traffic plus a long tail; split
# the same way. Before any tuning on it (rules of e5b0503): tuning part P 0.969, R 0.902,
# category 0.796; unseen part P 0.942, R 0.896, category 0.864.
HOLDOUT6 = DATA / "tool_results_holdout6.yaml"
HOLDOUT6_UNSEEN = DATA / "tool_results_holdout6_unseen.yaml"
# A seventh (ids `h7a-...`, `h7b-...`, 808 results, 21% not in English), written the same way
# after the sixth's tuning, with more hard successes. Before any tuning on it (rules of
# 4f11e2d): whole P 0.987, R 0.973, category 0.895; tuning part 0.984 / 0.974 / 0.886; unseen
# part 0.993 / 0.972 / 0.915.
HOLDOUT7 = DATA / "tool_results_holdout7.yaml"
HOLDOUT7_UNSEEN = DATA / "tool_results_holdout7_unseen.yaml"
# An eighth (ids `h8a-...`, `h8b-...`, 684 results, 18% not in English), written blind after
# the seventh's tuning on purpose in other domains (data science, ML, mobile, embedded, SaaS
# APIs, queues, observability, secrets, CI systems). Before any tuning on it (rules of
# 3dfe9e1): whole P 0.972, R 0.893, category 0.717; tuning part 0.976 / 0.906 / 0.722; unseen
# part 0.962 / 0.864 / 0.706. After one tuning round on its tuning part: unseen part
# 0.963 / 0.890 / 0.705.
HOLDOUT8 = DATA / "tool_results_holdout8.yaml"
HOLDOUT8_UNSEEN = DATA / "tool_results_holdout8_unseen.yaml"
# A ninth (ids `h9a-...`, `h9b-...`, 688 results, 14% not in English), written blind after the
# eighth's tuning, about 70% in domains of its own (data engineering, ML operations, HPC and
# scientific computing, GIS; infrastructure and operations, cloud CLIs, commerce and messaging
# APIs, game engines and media tools). Before any tuning on it (rules of eae1786): whole P
# 0.966, R 0.890, category 0.755; tuning part 0.965 / 0.914 / 0.743; unseen part 0.967 /
# 0.848 / 0.778. After one round on its tuning part: unseen part 0.967 / 0.848 / 0.786.
HOLDOUT9 = DATA / "tool_results_holdout9.yaml"
HOLDOUT9_UNSEEN = DATA / "tool_results_holdout9_unseen.yaml"
# A tenth (ids `h10a-...`, `h10b-...`, 705 results, 15% not in English), written blind after the
# ninth's tuning: everyday traffic in mainstream stacks (writer A) and security, database and
# Windows administration, browser tests, HTTP APIs, MCP servers, embedded, mobile (writer B).
# Before any tuning on it (rules of c5c6f4b): whole P 0.967, R 0.955, category 0.869; tuning
# part 0.960 / 0.947 / 0.857; unseen part 0.979 / 0.972 / 0.891.
HOLDOUT10 = DATA / "tool_results_holdout10.yaml"
HOLDOUT10_UNSEEN = DATA / "tool_results_holdout10_unseen.yaml"
# An eleventh (ids `h11a-...`, `h11b-...`, 748 results, 17% not in English, 46% successes),
# written blind while the tenth was tuned on: the traffic mix real users produce (Claude Code,
# Codex, Gemini CLI first), and DevOps, data, ML, frontend and docs teams. Scored before any
# tuning on it: rules of c5c6f4b (the session's start) whole P 0.985, R 0.978, category 0.880;
# rules after the tenth's round (8362f35) whole 0.990 / 0.980 / 0.901, unseen part
# 0.984 / 0.976 / 0.884.
HOLDOUT11 = DATA / "tool_results_holdout11.yaml"
HOLDOUT11_UNSEEN = DATA / "tool_results_holdout11_unseen.yaml"
# A twelfth (ids `h12a-...`, `h12b-...`, 660 results, 18% not in English, 46% successes), written
# blind while the eleventh was tuned on: less used harnesses (OpenCode, Cline, Roo, aider, Goose,
# Zed, Amp, Continue, Copilot), agent frameworks' own tools and MCP servers, Windows, WSL and
# macOS shells, other locales. Scored before any tuning on it: rules of c5c6f4b (the start)
# whole P 0.973, R 0.938, category 0.842; rules of f687326 0.982 / 0.940 / 0.867.
HOLDOUT12 = DATA / "tool_results_holdout12.yaml"
HOLDOUT12_UNSEEN = DATA / "tool_results_holdout12_unseen.yaml"
# A thirteenth (ids `h13a-...`, `h13b-...`, 735 results, 22% not in English, 46% successes),
# written blind at the start of the next session: a product team's week weighted as people use
# the agents (writer A), and the long tail (writer B: less common languages, HPC, infrastructure
# automation, data engineering, embedded, frameworks' own tools, MCP servers, security tools).
# Before any tuning on it (rules of f891535): whole P 0.976, R 0.932, category 0.876; tuning
# part 0.984 / 0.933 / 0.884; unseen part 0.960 / 0.931 / 0.860; writer A 0.974 / 0.954 /
# 0.924, writer B 0.979 / 0.912 / 0.828. After one round on its tuning part (and runs piped into
# `tail` judged by their last lines): unseen part 0.961 / 0.954 / 0.855.
HOLDOUT13 = DATA / "tool_results_holdout13.yaml"
HOLDOUT13_UNSEEN = DATA / "tool_results_holdout13_unseen.yaml"
# A fourteenth (ids `h14a-...`, `h14b-...`, 732 results, 23% not in English, 46% successes),
# written blind at the start of the next session: a solo developer's and maintainer's month, 55%
# on the editor harnesses (writer A: Cline, Roo Code, Goose, OpenCode, Cursor, Copilot, Zed,
# Continue, Amp, aider; mobile, game engines, PHP/Ruby, .NET and Windows, frontend, releases),
# and a platform, SRE and ML team (writer B: Kubernetes, observability, ML, databases other than
# Postgres, build systems, SaaS APIs through MCP, Active Directory, secrets and identity).
# Before any tuning on it (rules of 5597881): whole P 0.986, R 0.879, category 0.865; tuning
# part 0.987 / 0.861 / 0.882; unseen part 0.983 / 0.915 / 0.832; writer A 0.993 / 0.793 /
# 0.906, writer B 0.980 / 0.957 / 0.834.
HOLDOUT14 = DATA / "tool_results_holdout14.yaml"
HOLDOUT14_UNSEEN = DATA / "tool_results_holdout14_unseen.yaml"
# The blind hold-outs kept in two parts: (tuning part, unseen part).
SPLIT = (
    (HOLDOUT3, HOLDOUT3_UNSEEN),
    (HOLDOUT4, HOLDOUT4_UNSEEN),
    (HOLDOUT5, HOLDOUT5_UNSEEN),
    (HOLDOUT6, HOLDOUT6_UNSEEN),
    (HOLDOUT7, HOLDOUT7_UNSEEN),
    (HOLDOUT8, HOLDOUT8_UNSEEN),
    (HOLDOUT9, HOLDOUT9_UNSEEN),
    (HOLDOUT10, HOLDOUT10_UNSEEN),
    (HOLDOUT11, HOLDOUT11_UNSEEN),
    (HOLDOUT12, HOLDOUT12_UNSEEN),
    (HOLDOUT13, HOLDOUT13_UNSEEN),
    (HOLDOUT14, HOLDOUT14_UNSEEN),
)
CORPORA = (CORPUS, HOLDOUT, HOLDOUT2, *(path for parts in SPLIT for path in parts))
LANGUAGE = re.compile(r"\Ah\d+[a-z]?-([a-z]{2})-")


def load_corpus(path: Path = CORPUS) -> list[dict[str, Any]]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    category_right: int = 0
    misses: list[str] = field(default_factory=list)
    per_category: Counter[tuple[str, str]] = field(default_factory=Counter)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def category_accuracy(self) -> float:
        return self.category_right / self.tp if self.tp else 1.0


def score(rules: Rules, entries: list[dict[str, Any]]) -> Score:
    """Precision/recall of error detection and accuracy of the category on true positives."""
    s = Score()
    for entry in entries:
        expect = entry["expect"]
        command = command_line(entry.get("arguments") or {}, rules.command_keys)
        verdict = classify(rules, entry["tool"], entry["content"], entry.get("is_error"), command)
        wanted = bool(expect["error"])
        if verdict.error and wanted:
            s.tp += 1
            ok = verdict.category == expect["category"]
            s.category_right += ok
            s.per_category[(expect["category"], "right" if ok else "wrong")] += 1
            if not ok:
                s.misses.append(
                    f"{entry['id']}: category {verdict.category} != {expect['category']}"
                )
        elif verdict.error:
            s.fp += 1
            s.misses.append(f"{entry['id']}: false positive via rule {verdict.rule}")
        elif wanted:
            s.fn += 1
            s.per_category[(expect["category"], "missed")] += 1
            s.misses.append(f"{entry['id']}: missed ({expect['category']})")
        else:
            s.tn += 1
    return s


def language(entry: dict[str, Any]) -> str | None:
    """The language of an entry's text, when its id carries one (`h3-de-...`)."""
    match = LANGUAGE.match(entry["id"])
    return match.group(1) if match else None


def per_language(rules: Rules, entries: list[dict[str, Any]]) -> dict[str, tuple[int, Score]]:
    """Per language (most entries first), then every non-English entry together: (results,
    score); empty unless every id carries a language."""
    if not entries or any(language(e) is None for e in entries):
        return {}
    groups: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        lang = language(entry)
        if lang is not None:
            groups.setdefault(lang, []).append(entry)
            if lang != "en":
                groups.setdefault("not English", []).append(entry)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return {lang: (len(group), score(rules, group)) for lang, group in ordered}


def per_category(s: Score) -> dict[str, tuple[int, int, int, int]]:
    """Per expected category: (failures, detected, right category, flagged as it wrongly)."""
    claimed = Counter(m.split("category ", 1)[1].split(" != ")[0] for m in s.misses if " != " in m)
    out: dict[str, tuple[int, int, int, int]] = {}
    for category in sorted({c for c, _ in s.per_category} | set(claimed)):
        right = s.per_category[(category, "right")]
        wrong = s.per_category[(category, "wrong")]
        missed = s.per_category[(category, "missed")]
        out[category] = (right + wrong + missed, right + wrong, right, claimed[category])
    return out


def report(path: Path = CORPUS) -> str:
    """A Markdown table: overall figures, per-category recall, precision and accuracy."""
    from recovery_proxy.rules.load import load_rules

    entries = load_corpus(path)
    rules = load_rules()
    s = score(rules, entries)
    lines = [
        f"{path.name}: {len(entries)} results, {s.tp + s.fn} failures, {s.tn + s.fp} hard negatives",
        f"precision {s.precision:.3f}, recall {s.recall:.3f}, "
        f"category accuracy {s.category_accuracy:.3f}",
        "",
        "| category | failures | detected | right category | category precision | category recall |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for category, (total, detected, right, claimed) in per_category(s).items():
        precision = right / (right + claimed) if right + claimed else 1.0
        recall = right / total if total else 1.0
        lines.append(
            f"| {category} | {total} | {detected} | {right} | {precision:.2f} | {recall:.2f} |"
        )
    languages = per_language(rules, entries)
    if languages:
        lines += [
            "",
            "| language | results | failures | precision | recall | category accuracy |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for lang, (n, ls) in languages.items():
            lines.append(
                f"| {lang} | {n} | {ls.tp + ls.fn} | {ls.precision:.3f} | {ls.recall:.3f} "
                f"| {ls.category_accuracy:.3f} |"
            )
    lines += ["", *s.misses]
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    paths = [Path(a) for a in sys.argv[1:]] or list(CORPORA)
    print("\n\n".join(report(p) for p in paths))
