"""scripts/localised_rules.py: the committed localised rules are what the OS's catalogs give,
and every translated message they hold is recognised and filed under its category."""

from __future__ import annotations

import json
import re

import pytest

from recovery_proxy.core.classify import classify
from recovery_proxy.rules.load import load_rules
from scripts.localised_rules import EXTRACT, FORMAT, LOCALE_DIR, MESSAGES, RULES, extract, render


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(EXTRACT.read_text(encoding="utf-8"))


def test_rendering_the_committed_extract_gives_the_committed_rules(committed) -> None:
    assert render(committed) == RULES.read_text(encoding="utf-8")


def test_extracting_this_systems_catalogs_gives_the_committed_extract(committed) -> None:
    if not (LOCALE_DIR / "de" / "LC_MESSAGES" / "libc.mo").is_file():
        pytest.skip("no gettext catalogs here (Debian: libc-l10n, bash, coreutils, git)")
    fresh = extract()
    same = [d for d in committed if fresh.get(d, {}).get("versions") == committed[d]["versions"]]
    if not same:
        pytest.skip("this system's catalogs are other versions than the committed extract's")
    for domain in same:
        assert fresh[domain] == committed[domain], domain


def _examples(committed: dict) -> list[tuple[str, str, str]]:
    """(id, text, category) for every translated message: as a program prints it."""
    out = []
    for domain, msgid, category, kind in MESSAGES:
        for lang, msgstr in sorted(committed.get(domain, {}).get(msgid, {}).items()):
            if domain == "make":  # make's first %s is its `*** ` marker
                msgstr = "*** " + msgstr.removeprefix("%s")
            text = FORMAT.sub("x", msgstr).strip()
            if kind == "line":
                text = "cat: notes.txt: " + re.sub(r"^x\s*[:：]\s*", "", text)
            elif kind == "severity":
                text = f"{text}:  relation x"
            elif kind == "prefix":  # git's `fatal: ` opening a line
                text = f"{msgstr}x"
            elif kind == "category" and domain.startswith("postgres"):  # after its severity
                text = f"ERROR:  {text}"
            elif kind == "category":  # a signal's name in bash's report of a killed job
                text = f"bash: line 1: 48213 {text}                 ./index --all"
            else:  # a program's own message after its name, as git, date or apt print it
                text = f"{domain.split('-')[0]}: {text}"
            out.append((f"{domain}:{lang}:{msgid[:30]}", text, category))
    return out


def test_every_translated_message_is_recognised_and_categorised(committed) -> None:
    rules = load_rules()
    examples = _examples(committed)
    assert len(examples) > 500
    missed = [i for i, text, _ in examples if not classify(rules, "bash", text).error]
    wrong = [
        (i, classify(rules, "bash", text).category, category)
        for i, text, category in examples
        if category and classify(rules, "bash", text).category != category
    ]
    assert not missed, missed
    # A translation can read like another category's English words; a few may be filed
    # elsewhere, never many.
    assert len(wrong) <= 0.05 * len(examples), wrong


@pytest.mark.parametrize(
    "text",
    [
        "insgesamt 24\n-rw-r--r-- 1 dev dev 812 20. Nov 10:00 fehler.log",
        "2026-11-20 09:00:07 FEHLER Datei kunden.csv: Zeile 12 übersprungen (Datei oder "
        "Verzeichnis nicht gefunden: bilder/12.png)\n2026-11-20 09:00:09 INFO  Import beendet",
        'docs/betrieb.md:14:Bei "Keine Berechtigung" den Dienst als root starten.',
        "Sur la branche main\nrien à valider, la copie de travail est propre",
        "位于分支 main\n无文件要提交，干净的工作区",
    ],
)
def test_localised_successes_are_not_flagged(text: str) -> None:
    assert not classify(load_rules(), "bash", text).error
