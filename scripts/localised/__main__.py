"""The command line: `python -m scripts.localised extract | history ... | render`."""

from __future__ import annotations

import sys
from pathlib import Path

from scripts.localised.catalogs import (
    EXTRACT,
    HISTORY,
    LOCALE_DIR,
    RULES,
    extract,
    history,
    load,
    save,
)
from scripts.localised.render import render

USAGE = (
    "usage: python -m scripts.localised extract [LOCALE_DIR] | "
    "history DOMAIN UPSTREAM GIT_DIR [PO_DIR] | render"
)


def main(argv: list[str]) -> int:
    """Run one command; 2 (and the usage line) for anything else."""
    if argv[:1] == ["extract"]:
        data = extract(Path(argv[1]) if len(argv) > 1 else LOCALE_DIR)
        save(EXTRACT, data)
        print(f"{EXTRACT}: {len(data)} domains")
        return 0
    if argv[:1] == ["history"] and len(argv) in (4, 5):
        past = load(HISTORY, optional=True)
        po_dir = argv[4] if len(argv) > 4 else "po"
        past[argv[1]] = history(argv[1], argv[2], Path(argv[3]), po_dir, load(EXTRACT))
        save(HISTORY, past)
        print(f"{HISTORY}: {argv[1]}: {past[argv[1]]['source']}")
        return 0
    if argv[:1] == ["render"]:
        RULES.write_text(render(load(EXTRACT), load(HISTORY, optional=True)), encoding="utf-8")
        print(f"{RULES} written")
        return 0
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
