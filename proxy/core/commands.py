"""The call's command line: what a shell tool was asked to run, and whether its exit status
speaks for all of it. `answers` rules (proxy/core/classify.py) read the first; the second
decides whether a successful exit status may be trusted."""

from __future__ import annotations

from typing import Any

import re2

COMMAND_MAX = 2000  # characters of a command line that are read
_SHELLS = frozenset(("bash", "sh", "zsh", "dash", "ksh", "fish", "pwsh", "powershell", "cmd"))
_QUOTED = re2.compile(r"'[^']*'" + r'|"(?:[^"\\]|\\.)*"')  # shell quoting, to see past it
_READER = re2.compile(  # a step that only reads, queries or sets up: its exit status hides nothing
    r"(?:grep|egrep|fgrep|rg|cat|head|tail|ls|echo|printf|wc|find|jq|sort|uniq|cut|date|pwd|"
    r"which|env|cd|export|set|source|true|sleep|git (?:log|status|diff|show|branch|remote)|"
    r"kubectl\s+(?:\S+\s+)*?(?:get|describe|logs|events|top)|docker\s+(?:logs|ps|inspect|"
    r"images)|journalctl|ps|awk|sed|dmesg|lsof|ss|netstat|tree|history|"
    r"do|done|then|else|fi)\b|\s*\z"
)
_FILTER_STAGE = re2.compile(  # a last pipe stage that keeps some of the lines
    r"\s*(?:tail|head|grep|egrep|rg|(?i:select(?:-object)?\s+-(?:last|first)))\b"
)
_SEQUENCE = re2.compile(r";|&&|\|\|")
_CD_STEPS = re2.compile(r"\A(?:cd\s+[^;&|]+?\s*(?:&&|;)\s*)+")


def command_line(arguments: dict[str, Any], keys: tuple[str, ...]) -> str:
    """The call's command line, on one line: the first of `keys` in its arguments, a string
    or an argv list (`["bash", "-lc", SCRIPT]` gives the script), its lines joined by `; `,
    without leading `cd DIR &&` steps (they do not change what the command answers); "" if
    none."""
    for key in keys:
        value = arguments.get(key)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            shell = value[0].replace("\\", "/").rsplit("/", 1)[-1].lower().removesuffix(".exe")
            wrapped = len(value) >= 3 and shell in _SHELLS and value[1][:1] in ("-", "/")
            value = " ".join(value[2:] if wrapped else value)
        if isinstance(value, str) and value.strip():
            lines = (" ".join(line.split()) for line in value[:COMMAND_MAX].splitlines())
            line = "; ".join(line for line in lines if line)
            steps = _CD_STEPS.match(line)
            return line[steps.end() :] if steps else line
    return ""


def exit_status_speaks(command: str) -> bool:
    """Whether the exit status is the whole command's: not in a sequence (`ruff check;
    pytest`, the lines of a script, a `for` loop: `;` outside quotes) with a step before the
    last that does more than read (`grep`, `cat`, `echo`, `cd`...), where it is the last
    step's. Pipes stay trusted (`| tail`, `| grep`, `| jq`: their output is the answer the
    call asked for, measured on the corpora), and so does `|| true` (the failure was meant
    to be ignored). True without a command."""
    if ";" not in command:
        return True
    *before, _ = _QUOTED.sub("", command).rstrip("; ").split(";")
    return all(_READER.match(step.strip()) for step in before)


def piped_into_filter(command: str) -> bool:
    """Whether the command's last step runs something and pipes it into `tail`, `head` or a
    `grep` (`cargo test 2>&1 | tail -30`, `xcodebuild test | grep -E 'error|TEST'`,
    PowerShell's `Select-Object -Last N`): its exit status is the pipe's last stage's, so it
    says nothing about the run; what the run printed last does. Not for readers and queries
    (`cat app.log | tail`, `kubectl get events | grep`): their exit status is the answer's."""
    if "|" not in command:
        return False
    stages = _SEQUENCE.split(_QUOTED.sub("", command))[-1].split("|")
    producer = stages[0].strip()
    return (
        len(stages) > 1
        and _FILTER_STAGE.match(stages[-1]) is not None
        and not _READER.match(producer)
    )
