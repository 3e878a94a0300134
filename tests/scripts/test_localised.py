"""scripts/localised: the committed localised rules are what the OS's catalogs (and
their past versions upstream) give, and every translated message they hold is recognised and
filed under its category."""

from __future__ import annotations

import json
import re

import pytest

from recovery_proxy.core.classify import classify
from recovery_proxy.rules.load import load_rules
from scripts.localised.catalogs import (
    EXTRACT,
    HISTORY,
    LOCALE_DIR,
    RULES,
    extract,
    parse_po,
    translations,
)
from scripts.localised.messages import MESSAGES
from scripts.localised.patterns import FORMAT, drop_ambiguous, usage_word
from scripts.localised.render import render


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(EXTRACT.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def past() -> dict:
    return json.loads(HISTORY.read_text(encoding="utf-8"))


def test_rendering_the_committed_extract_gives_the_committed_rules(committed, past) -> None:
    assert render(committed, past) == RULES.read_text(encoding="utf-8")


def test_past_versions_add_other_wordings_of_the_same_messages(past) -> None:
    """`history` read glibc's, bash's and git's own past catalogs: they hold wordings this
    system's catalogs do not (Spanish glibc says `archivo` since 2.36, `fichero` before)."""
    assert {"libc", "bash", "git"} <= set(past)
    assert "No existe el archivo o el directorio" in past["libc"]["No such file or directory"]["es"]
    assert all(
        "\ufffd" not in t
        for d in past.values()
        for m in d.values()
        if isinstance(m, dict)
        for texts in m.values()
        for t in texts
    )


def test_parse_po_reads_translations_and_leaves_out_fuzzy_and_obsolete_ones() -> None:
    po = (
        'msgid ""\nmsgstr "Content-Type: text/plain; charset=ISO-8859-1\\n"\n\n'
        '#: a.c:1\nmsgid "No such file or directory"\nmsgstr ""\n"Datei oder "\n"Verzeichnis"\n\n'
        '#, fuzzy\nmsgid "Permission denied"\nmsgstr "Zugriff verweigert"\n\n'
        '#~ msgid "Old"\n#~ msgstr "Alt"\n\n'
        'msgid "%d file"\nmsgid_plural "%d files"\nmsgstr[0] "%d Datei"\nmsgstr[1] "%d Dateien"\n\n'
        'msgid "Gr\\"u\\n"\nmsgstr "Gr\xfc\\"\\n"\n'
    ).encode("latin-1")
    assert parse_po(po) == {
        "No such file or directory": "Datei oder Verzeichnis",
        "%d file": "%d Datei",
        'Gr"u\n': 'Gr\u00fc"\n',
    }


def test_extracting_this_systems_catalogs_gives_the_committed_extract(committed) -> None:
    if not (LOCALE_DIR / "de" / "LC_MESSAGES" / "libc.mo").is_file():
        pytest.skip("no gettext catalogs here (Debian: libc-l10n, bash, coreutils, git)")
    fresh = extract()
    same = [d for d in committed if fresh.get(d, {}).get("versions") == committed[d]["versions"]]
    if not same:
        pytest.skip("this system's catalogs are other versions than the committed extract's")
    for domain in same:
        assert fresh[domain] == committed[domain], domain


def _examples(committed: dict, past: dict) -> list[tuple[str, str, str, str]]:
    """(id, kind, text, category) for every translated message: as a program prints it."""
    out = []
    for domain, msgid, category, kind in MESSAGES:
        for lang, msgstr in translations(committed, past, domain, msgid):
            if domain == "make":  # make's first %s is its `*** ` marker
                msgstr = "*** " + msgstr.removeprefix("%s")
            text = FORMAT.sub("x", msgstr).strip()
            if kind == "line":
                text = "cat: notes.txt: " + re.sub(r"^x\s*[:：]\s*", "", text)
            elif kind == "severity":
                text = f"{text}:  relation x"
            elif kind == "prefix":  # git's `fatal: ` opening a line
                text = f"{msgstr}x"
            elif kind == "client":  # a PostgreSQL client's `prog: error: ` (pgscripts: createdb)
                program = domain.split("-")[0].replace("pgscripts", "createdb")
                text = f"{program}: {msgstr}x"
            elif kind == "category" and domain.startswith("postgres"):  # after its severity
                text = f"ERROR:  {text}"
            elif kind == "category":  # a signal's name in bash's report of a killed job
                text = f"bash: line 1: 48213 {text}                 ./index --all"
            elif kind == "answer":  # a success: test_a_diff_report_is_an_answer
                continue
            elif kind == "usage" and usage_word(msgstr).lower() == "usage":
                continue  # English `Usage:` also opens a --help text: not a usage error alone
            elif kind == "dots":  # wget's verdict on its `Connecting to` line, last
                text = f"--2026-11-20--  https://x.dev/a\nConnecting to x.dev|203.0.113.7|:443... {text}"
            elif kind in ("help", "usage"):  # the line after a usage error's message
                text = f"{domain}: x\n{text}"
            else:  # a program's own message after its name, as git, date or apt print it
                text = f"{domain.split('-')[0]}: {text}"
            out.append((f"{domain}:{lang}:{msgid[:30]}", kind, text, category))
    return out


def test_every_translated_message_is_recognised_and_categorised(committed, past) -> None:
    rules = load_rules()
    examples = _examples(committed, past)
    assert len(examples) > 800
    # a "category" message is in the words around it (a severity, a job report) that other
    # rules recognise
    missed = [i for i, _, text, _ in examples if not classify(rules, "bash", text).error]
    wrong = [
        (i, classify(rules, "bash", text, True).category, category)
        for i, kind, text, category in examples
        if category and kind != "usage" and classify(rules, "bash", text, True).category != category
    ]
    assert not missed, missed
    # A translation can read like another category's English words; a few may be filed
    # elsewhere, never many.
    assert len(wrong) <= 0.05 * len(examples), wrong


def test_words_opening_a_later_categorys_message_are_left_out() -> None:
    """A message cut at its first directive (`could not get %s`) opens another category's
    longer one (`could not get lock %s`): kept only where its category is tried later."""
    found = {
        "connection_error": ["could not get", "fetch failed"],
        "conflict": ["could not get lock"],
    }
    drop_ambiguous(found, ["connection_error", "conflict"])
    assert found == {"connection_error": ["fetch failed"], "conflict": ["could not get lock"]}
    found = {"permission_denied": ["could not get lock on dir"], "conflict": ["could not get lock"]}
    drop_ambiguous(found, ["permission_denied", "conflict"])
    assert found["conflict"] == ["could not get lock"]


def test_a_diff_report_is_an_answer(committed, past) -> None:
    """diff's `Only in` and `Files ... differ` in every language, after Claude Code's exit-code
    header (flagged), Gemini CLI's or alone (OpenHands puts its exit code last): successes."""
    rules = load_rules()
    texts = [
        FORMAT.sub("docs", msgstr).strip()
        for domain, msgid, _category, kind in MESSAGES
        if kind == "answer"
        for _lang, msgstr in translations(committed, past, domain, msgid)
    ]
    assert len(texts) > 40
    for text in texts:
        assert not classify(rules, "Bash", f"Exit code 1\n{text}\n", True).error, text
        shell = f"Command: diff -rq a b\nDirectory: (root)\nStdout: {text}\nExit Code: 1"
        assert not classify(rules, "run_shell_command", shell).error, text
        tail = "\n[Command finished with exit code 1]"
        assert not classify(rules, "execute_bash", text + tail).error, text
    broken = "Exit code 2\ndiff: b: No such file or directory"
    assert classify(rules, "Bash", broken, True).error


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
