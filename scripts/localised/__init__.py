"""Localised error patterns from the operating system's own gettext catalogs (issue 23).

The proxy recognises `cat: x: No such file or directory`; a German system prints
`cat: x: Datei oder Verzeichnis nicht gefunden`. Rather than translating by hand, this package
reads the translations that libc, bash, coreutils, grep, git, make, apt, xz and PostgreSQL ship
(`/usr/share/locale/<lang>/LC_MESSAGES/<domain>.mo`, Debian packages libc-l10n, bash,
coreutils, git, ...) and writes them as rules:

    python -m scripts.localised extract   # .mo files -> scripts/localised_messages.json
    python -m scripts.localised history DOMAIN UPSTREAM GIT_DIR [PO_DIR]
        # every past version of PO_DIR/<lang>.po in a clone (GIT_DIR) of an upstream
        # repository (glibc, bash, git) -> the translations it shipped that this system's
        # catalogs word otherwise (scripts/localised_history.json): a user's system may run
        # an older or newer release than this one
    python -m scripts.localised render    # both JSON files -> rules/15-localised.yaml

`extract` needs the catalogs (on Debian: apt-get install libc-l10n locales-all, or the
packages above), `history` a clone of the upstream repository; `render` is pure, and
tests/scripts/test_localised.py checks that it reproduces the committed rules file.
A new message or language is an edit to MESSAGES or LANGUAGES and a regenerate, never a hand
edit of the YAML.

Modules: `messages` (LANGUAGES, MESSAGES: what to take from which catalog), `catalogs`
(reading .mo and .po files, the JSON files and their paths), `patterns` (a message as an RE2
fragment), `render` (the rules file), `__main__` (the commands above).
"""
