"""Is a tool result a failure? Which category, which target, which key error line?

Pure functions over compiled `Rules`; they see only the bounded scan window of a result,
as UTF-8 bytes (RE2 matches bytes; a `str` would be encoded again for every search).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from recovery_proxy.core.commands import exit_status_speaks, piped_into_filter
from recovery_proxy.rules.model import Rules

KEY_LINE_MAX = 200  # characters of the key line a verdict shows
CATEGORY_LINE_MAX = 1000  # characters of it the categories read (the cause may come late)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The classifier's answer for one tool result."""

    error: bool
    category: str = ""
    rule: str = ""
    key_line: str = ""
    subject: str = ""  # what the error names (a module, a command), when its category says


SUCCESS = Verdict(error=False)


def scan_window(text: str, rules: Rules) -> str:
    """The head and tail of `text` that patterns may read (invariant 4: bounded scans)."""
    head, tail = rules.scan.head_bytes, rules.scan.tail_bytes
    if len(text) <= head + tail:
        return text
    return text[:head] + "\n...\n" + (text[-tail:] if tail else "")


def unwrap(window: bytes, hits: Sequence[int], rules: Rules) -> bytes:
    """The output inside a leading wrapper line (Cline's `Command executed.\nOutput:`,
    Gemini CLI's `Command: ...\nOutput: `), so start-anchored rules see the real output.
    `hits`: the unwrap rules the window matches (the detection set's first part)."""
    for i in hits:
        match = rules.unwrap[i].search(window)
        if match and match.start() == 0:
            return window[match.end() :]
    return window


def key_line(body: bytes, rules: Rules, limit: int = KEY_LINE_MAX) -> str:
    """The line that says what went wrong: first key-line rule that matches (its matching
    groups joined with `: `, a field and its message), else line one; at most `limit`
    characters."""
    first = rules.key_line_set.first(body)
    if first is not None:
        match = rules.key_line[first].search(body)
        if match:
            line = b": ".join(g.strip() for g in match.groups() if g) or match.group(0)
            return _clip(line.decode(errors="replace"), limit)
    for line in body.decode(errors="replace").splitlines():
        if line.strip():
            return _clip(line, limit)
    return ""


def categorise(tool: str, line: bytes, body: bytes, rules: Rules) -> str:
    """First matching category; tool-specific ones first, the key line before the body;
    the categories' own patterns first, those other files add (`extra`) only after them."""
    ranks = rules.category_ranks(tool)
    for patterns, owner in (
        (rules.category_set, rules.category_owner),
        (rules.category_extra_set, rules.category_extra_owner),
    ):
        rank = _owner_rank(owner, ranks)
        for text in (line, body):  # searched only until the first category in order is known
            best = patterns.search(text).first(rank=rank, limit=len(ranks))
            if best is not None:
                return rules.categories[owner[best]].id
    return "unknown"


JSON_EXEC_MAX = 1 << 20  # parse Codex JSON exec output up to 1 MiB (orjson: ~1 ms)


def codex_json_exec(text: str) -> str | None:
    """Codex's structured exec output `{"output": ..., "metadata": {"exit_code": N}}` in its
    text shape (`Exit code: N\nWall time: S seconds\nOutput:\n...`), so the rules for that
    shape judge it; None for anything else."""
    if not text.startswith('{"output":') or len(text) > JSON_EXEC_MAX:
        return None
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    output = data.get("output") if isinstance(data, dict) else None
    metadata = data.get("metadata") if isinstance(data, dict) else None
    code = metadata.get("exit_code") if isinstance(metadata, dict) else None
    if not isinstance(output, str) or not isinstance(code, int) or isinstance(code, bool):
        return None
    seconds = metadata.get("duration_seconds", 0)
    return f"Exit code: {code}\nWall time: {seconds} seconds\nOutput:\n{output}"


def classify(
    rules: Rules, tool: str, text: str, is_error: bool | None = None, command: str = ""
) -> Verdict:
    """Judge one tool result. `is_error: true` (Claude Code: a non-zero exit) decides, unless a
    `not_error` rule says that outcome is an answer (diff's exit 1 on differences,
    `systemctl status` of a stopped unit). A successful exit status (`is_error: false`, an
    `exit_zero` wrapper) decides too, unless the output is an error `reply` (an HTTP error
    body or page, a database or cache client's error: curl and redis-cli exit 0 on those).
    A successful exit status of a sequence (`a; b`) says nothing about the steps before the
    last: the output is judged as if it had none. That of a run piped into `tail`, `head` or
    `grep` is the filter's: the run failed if its output's last lines say so
    (`ends_in_failure`).
    A failure is an answer after all when an `answers` rule matches the call's `command`
    (proxy/core/commands.py) and its output: `grep -c` counting 0, `systemctl is-active` saying
    `inactive`. Every pattern reads the window's UTF-8 bytes: one encoding, not one per search."""
    window = scan_window(codex_json_exec(text) or text, rules).encode()
    rule: str | None
    said_success = is_error is False
    speaks = exit_status_speaks(command)
    tailed = speaks and piped_into_filter(command)  # `make 2>&1 | tail`: the filter's exit status
    if said_success and (tailed or not speaks):
        is_error = None
    if is_error is False:
        rule = reply(window, rules)
        if rule is None or answered(command, window, rules):
            return SUCCESS
        return _failure(tool, window, window, rule, rules)
    detection = rules.detection_set
    found = detection.search(window)
    not_error_at, exit_zero_at, error_at, reply_at = detection.starts[1:5]
    wrappers = found.matching(stop=error_at)  # unwrap, not_error and exit_zero rules, not error
    not_error = any(not_error_at <= i < exit_zero_at for i in wrappers)
    exit_zero = any(i >= exit_zero_at for i in wrappers)
    body = unwrap(window, [i for i in wrappers if i < not_error_at], rules)
    if is_error:
        if not_error or exit_zero:
            return SUCCESS
        rule = "wire-flag"
    elif exit_zero and not not_error and speaks and not tailed:
        rule = reply(body, rules)
    elif not_error:  # `not_error` rules see the whole window and win
        return SUCCESS
    else:  # the first `error` rule the window matches, else the output inside a wrapper,
        # else an error `reply` (a failure whatever the exit status, so without one too: the
        # reply rules follow the error rules in the detection set, one search finds either)
        first = found.first(start=error_at)
        if first is not None and first < reply_at:
            rule = rules.error[first - error_at].id
        elif body is not window:  # the output inside a wrapper: its error rules, then replies
            inside = rules.error_set.first(body)
            rule = reply(body, rules) if inside is None else rules.error[inside].id
        else:
            rule = None if first is None else rules.reply[first - reply_at].id
    if rule is None or answered(command, body, rules):
        return SUCCESS
    if tailed and (said_success or exit_zero) and not ends_in_failure(body, rules):
        return SUCCESS  # a successful pipe whose run's last lines do not say it failed
    return _failure(tool, window, body, rule, rules)


TAIL_LINES = 6  # the last lines of a piped run's output that must say it failed


def ends_in_failure(output: bytes, rules: Rules) -> bool:
    """Whether a run piped into `tail`, `head` or `grep` failed by its output: an error reply, or an
    error rule on its last `TAIL_LINES` non-empty lines (without the wrapper's trailing
    lines): a build or test run prints its verdict last, a log of recovered errors does not."""
    lines = [line for line in _without_trailer(output, rules).splitlines() if line.strip()]
    last = b"\n".join(lines[-TAIL_LINES:])  # a few lines: searched before the whole output
    return rules.error_set.first(last) is not None or reply(output, rules) is not None


def _without_trailer(output: bytes, rules: Rules) -> bytes:
    """The output without the wrapper's trailing lines (`trailer` rules: Gemini CLI's
    `Exit Code:` block, OpenHands' bracketed lines)."""
    for trailer in rules.trailer:
        match = trailer.search(output)
        if match and match.end() == len(output):
            output = output[: match.start()]
    return output


def answered(command: str, output: bytes, rules: Rules) -> bool:
    """Whether an `answers` rule matches `$ COMMAND`, a newline, and the output without its
    trailing wrapper lines (`trailer`): the non-zero exit or error reply is the answer."""
    if not command or not rules.answers:
        return False
    output = _without_trailer(output, rules)
    return rules.answer_set.first(b"$ " + command.encode() + b"\n" + output) is not None


def reply(output: bytes, rules: Rules) -> str | None:
    """The id of the first `reply` rule the output matches (an error reply that beats a
    successful exit status), or None."""
    first = rules.reply_set.first(output)
    return None if first is None else rules.reply[first].id


def _owner_rank(owner: tuple[int, ...], ranks: tuple[int, ...]) -> Callable[[int], int]:
    """A pattern's place in the order tried: its category's rank."""
    return lambda i: ranks[owner[i]]


def _failure(tool: str, window: bytes, body: bytes, rule: str, rules: Rules) -> Verdict:
    """The verdict for a failure `rule` found: its key line (categories read more of it than
    the verdict shows), category and subject."""
    line = key_line(body, rules, CATEGORY_LINE_MAX)
    encoded = line.encode()
    category = categorise(tool, encoded, body, rules)
    if category == "unknown" and body is not window:  # the wrapper's `Exit code: 124` says it
        category = categorise(tool, b"", window[: len(window) - len(body)], rules)
    subject = subject_of(category, encoded, body, rules)
    return Verdict(True, category, rule, _clip(line), subject)


def subject_of(category: str, line: bytes, body: bytes, rules: Rules) -> str:
    """What the error names, by its category's `subject` pattern (key line first): `requests`
    in `No module named 'requests'`; "" without a pattern or a match."""
    found = rules.category(category)
    if found is None or found.subject is None:
        return ""
    for text in (line, body):
        match = found.subject.search(text)
        named = next((g for g in match.groups() if g), b"") if match else b""
        if named:
            return _clip(named.decode(errors="replace"))
    return ""


def target_of(arguments: dict[str, Any], rules: Rules) -> str:
    """The operation's target: the first configured argument present, normalised, clipped."""
    for key in rules.targets.keys:
        value = arguments.get(key)
        if value is None or value == "":
            continue
        text = value if isinstance(value, str) else orjson.dumps(value).decode()
        text = " ".join(text.split())
        if text.startswith("./"):
            text = text[2:]
        limit = rules.targets.max_length
        return text if len(text) <= limit else text[: limit - 3] + "..."
    return ""


LABEL_VALUE_MAX = 60  # characters of one argument (as JSON) a label shows; longer is free text
LABEL_KEY_MAX = 40
_LINE_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}  # JSON leaves them


def arguments_label(arguments: dict[str, Any], rules: Rules) -> str:
    """A call without a target, named by its identifying arguments: `service="api",
    level="verbose"`. Scalar and small nested values in their given order, each as a JSON
    literal on one line (quotes, line breaks and control characters escaped: arguments are
    untrusted and must not close the quote or the call); long free text (a body, a message,
    over `LABEL_VALUE_MAX` characters) and odd keys left out; at most `targets.max_length`
    characters, cut at a whole argument (`, ...` says some were cut)."""
    limit = rules.targets.max_length
    parts: list[str] = []
    used = 0
    for key, value in arguments.items():
        name = key.replace("-", "_")
        if value is None or len(key) > LABEL_KEY_MAX or not name.isidentifier():
            continue
        try:
            shown = orjson.dumps(value).decode().translate(_LINE_BREAKS)
        except orjson.JSONEncodeError:  # not JSON (an integer past 64 bits)
            continue
        if len(shown) > LABEL_VALUE_MAX:
            continue
        part = f"{key}={shown}"
        if used + len(part) + 2 * bool(parts) > limit - 5:  # room for ", ..."
            parts.append("...")
            break
        used += len(part) + 2 * bool(parts)
        parts.append(part)
    return ", ".join(parts)


def call_identity(arguments: dict[str, Any], rules: Rules) -> tuple[str, str]:
    """(target, label): the call's target (`target_of`) when it has one, else its arguments'
    label (`arguments_label`). What a block names and repeats are counted on."""
    target = target_of(arguments, rules)
    return target, "" if target else arguments_label(arguments, rules)


def _clip(line: str, limit: int = KEY_LINE_MAX) -> str:
    line = line.strip().removeprefix("<tool_use_error>").removesuffix("</tool_use_error>").strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."
