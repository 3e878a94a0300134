"""Reading gettext catalogs: this system's .mo files (`extract`), past upstream .po files
(`parse_po`, `history`), and the JSON files that keep what they gave."""

from __future__ import annotations

import gettext
import json
import re
import subprocess
from pathlib import Path

from scripts.localised.messages import LANGUAGES, MESSAGES, wanted

ROOT = Path(__file__).resolve().parent.parent.parent
EXTRACT = ROOT / "scripts" / "localised_messages.json"
HISTORY = ROOT / "scripts" / "localised_history.json"
RULES = ROOT / "rules" / "15-localised.yaml"
LOCALE_DIR = Path("/usr/share/locale")

Catalog = dict[str, dict[str, dict[str, str]]]
History = dict[str, dict[str, dict[str, list[str]]]]

PO_FIELD = re.compile(r'(msgid|msgid_plural|msgstr(?:\[0\])?|msgstr\[\d+\]|msgctxt) "(.*)"$')
PO_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "r": "\r", "a": "\a"}


def load(path: Path, optional: bool = False) -> dict:
    """A JSON file's contents ({} for an absent `optional` one)."""
    if optional and not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def save(path: Path, data: dict) -> None:
    """Write a JSON file as the committed ones are: sorted, one-space indent, UTF-8."""
    text = json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    path.write_text(text, encoding="utf-8")


def extract(locale_dir: Path = LOCALE_DIR) -> Catalog:
    """{domain: {"versions": {lang: Project-Id-Version}, msgid: {lang: msgstr}}} for every
    catalog present; untranslated messages are left out."""
    out: Catalog = {}
    for domain in sorted({d for d, *_ in MESSAGES}):
        entry: dict[str, dict[str, str]] = {"versions": {}}
        for lang in LANGUAGES:
            path = locale_dir / lang / "LC_MESSAGES" / f"{domain}.mo"
            if not path.is_file():
                continue
            try:
                with path.open("rb") as fh:
                    catalog = gettext.GNUTranslations(fh)
            except UnicodeDecodeError:  # a legacy 8-bit catalog (gl tar, sl wget): left out
                continue
            entry["versions"][lang] = catalog.info().get("project-id-version", "")
            for msgid in wanted(domain):
                msgstr = catalog._catalog.get(msgid)  # the raw table: no fallback
                if isinstance(msgstr, str) and msgstr and msgstr != msgid:
                    entry.setdefault(msgid, {})[lang] = msgstr
        if entry["versions"]:
            out[domain] = entry
    return out


def translations(data: Catalog, past: History, domain: str, msgid: str) -> list[tuple[str, str]]:
    """(language, text) for one message: this system's catalog, then what past versions of
    the catalog shipped instead."""
    out = sorted(data.get(domain, {}).get(msgid, {}).items())
    for lang, texts in sorted(past.get(domain, {}).get(msgid, {}).items()):
        out += [(lang, text) for text in texts]
    return out


def _unescape(parts: list[str]) -> str:
    """The text of a .po string's quoted parts, its backslash escapes resolved."""
    return re.sub(r"\\(.)", lambda m: PO_ESCAPES.get(m.group(1), m.group(1)), "".join(parts))


def parse_po(raw: bytes) -> dict[str, str]:
    """msgid -> msgstr of a .po file (its first plural form); fuzzy and obsolete entries,
    which gettext never shows, are left out."""
    charset = re.search(rb"charset=([\w.-]+)", raw[:4000])
    encoding = charset.group(1).decode() if charset else "utf-8"
    try:
        text = raw.decode(encoding, errors="replace")
    except LookupError:
        text = raw.decode("utf-8", errors="replace")
    out: dict[str, str] = {}
    for block in re.split(r"\n\s*\n", text):
        fields: dict[str, list[str]] = {}
        key = ""
        fuzzy = False
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("#,") and "fuzzy" in line:
                fuzzy = True
            elif line.startswith("#"):
                continue
            elif match := PO_FIELD.match(line):
                key = match.group(1).replace("[0]", "")
                fields[key] = [match.group(2)]
            elif line.startswith('"') and key:
                fields[key].append(line[1:-1])
        if not fuzzy and "msgid" in fields and "msgstr" in fields and "msgctxt" not in fields:
            msgid, msgstr = _unescape(fields["msgid"]), _unescape(fields["msgstr"])
            if msgid and msgstr:
                out[msgid] = msgstr
    return out


def history(
    domain: str, upstream: str, git_dir: Path, po_dir: str, current: Catalog
) -> dict[str, object]:
    """The translations of MESSAGES that past versions of `<po_dir>/<lang>.po` in a git
    repository shipped and this system's catalog (`current`) words otherwise."""
    found: dict[str, dict[str, set[str]]] = {}
    read = 0
    for lang in LANGUAGES:
        path = f"{po_dir}/{lang}.po"
        log = subprocess.run(
            ["git", "-C", str(git_dir), "log", "--format=%H", "--", path],
            capture_output=True,
            text=True,
            check=True,
        )
        for commit in log.stdout.split():
            show = subprocess.run(
                ["git", "-C", str(git_dir), "show", f"{commit}:{path}"], capture_output=True
            )
            if show.returncode != 0:  # the commit that deleted the file
                continue
            read += 1
            catalog = parse_po(show.stdout)
            for msgid in wanted(domain):
                text = catalog.get(msgid)
                if (
                    text
                    and text != msgid
                    and text != current.get(domain, {}).get(msgid, {}).get(lang)
                    and "\ufffd" not in text  # a file in another charset than it says
                ):
                    found.setdefault(msgid, {}).setdefault(lang, set()).add(text)
    entry: dict[str, object] = {"source": f"{upstream} {po_dir}/<lang>.po, {read} versions"}
    for msgid, langs in sorted(found.items()):
        entry[msgid] = {lang: sorted(texts) for lang, texts in sorted(langs.items())}
    return entry
