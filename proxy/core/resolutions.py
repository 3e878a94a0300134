"""Resolution memory (issue 27): when a failure streak ends with a success, what worked.

The tracker hands every judged result here (`failed`, `succeeded`). A success resolves open
failures when a reader would draw the link without doubt; anything less is left unlinked (a
link the model could misread is worse than none):

- **retry**: the same operation on the same target worked (arguments may differ; without a
  target, the identical call, or the next call of that tool within `NEAR` results). `via` is
  the last other success in between (the install, the `mkdir`, the edit).
- **alternative**, after a not-found or invalid-argument failure: the same tool worked on a
  variant of the failed path (the same name in another directory, the same stem with another
  extension), or on a file in the same directory that a success in between named in its output
  (`via`: the listing or search that found it); after an edit mismatch, a write of the same
  file; after an unknown tool, the very next call, of another tool, sharing an argument value.

Failures stay open for `WINDOW` results. Everything is bounded (`Resolutions.trim`). What it
says comes from the rules' templates; targets in the summary are quoted like the failures'.
"""

from __future__ import annotations

import posixpath
import re

from recovery_proxy.core import render
from recovery_proxy.core.conversation import ToolResult
from recovery_proxy.core.resolution_state import MAX_NAMES, Done, OpenFailure, Resolution
from recovery_proxy.core.state import FailureRecord, SessionState
from recovery_proxy.rules.model import Rules

WINDOW = 12  # results a failure stays open for
NEAR = 3  # results within which a target-less call of the same tool counts as its retry
SCAN = 8192  # characters of a success's output searched for file names
ALTERNATIVE = frozenset({"not_found", "invalid_params"})
VALUE_MAX = 200

_NAME = re.compile(r"[\w@+-][\w@.+-]*\.[A-Za-z0-9]{1,8}\b")
_TOKEN = re.compile(r"""[^\s"'`,;()\[\]{}<>=]+""")
_EXT = re.compile(r"\.[A-Za-z0-9]{1,8}$")


def failed(state: SessionState, record: FailureRecord, result: ToolResult, signature: str) -> None:
    """A failure arrived: it stays open until a success resolves it or it ages out."""
    memory = state.resolutions
    memory.step += 1
    arguments = result.call.arguments if result.call else {}
    values = [v for v in arguments.values() if isinstance(v, str) and 0 < len(v) <= VALUE_MAX]
    memory.open.append(
        OpenFailure(
            key=record.call_id,
            tool=record.operation,
            target=effective_target(record.target, result),
            category=record.category,
            signature=signature,
            step=memory.step,
            turn=record.turn,
            values=values[:8],
        )
    )
    _age(state)


def succeeded(
    state: SessionState,
    result: ToolResult,
    target: str,
    signature: str,
    now: float,
    label: str = "",
) -> Resolution | None:
    """A success arrived: the resolution it completes, if any (recorded in `state`). `label`:
    the call's arguments label when it has no target (what a block shows of what worked)."""
    memory = state.resolutions
    memory.step += 1
    _age(state)
    if not memory.open:
        return None
    tool, target = result.tool, effective_target(target, result)
    found = _retry(state, tool, target, signature) or _alternative(state, result, target)
    resolution = None
    if found:
        group, kind, via = found
        worked = (tool, target, "" if target else label)
        resolution = _record(state, group, kind, via, worked, signature, result, now)
    if memory.open:  # it may name a file a later call reads instead of a missing one
        wanted = any(f.category in ALTERNATIVE for f in memory.open)
        names = _names(result.text) if wanted else []
        memory.done.append(Done(tool=tool, target=target, step=memory.step, names=names))
    else:
        memory.done.clear()
    memory.trim()
    return resolution


Found = tuple[list[OpenFailure], str, list[Done]]


def _retry(state: SessionState, tool: str, target: str, signature: str) -> Found | None:
    """Open failures of this operation on this target: the same call, or the same one with
    other arguments; without a target, only the identical call or the tool's next call."""
    memory = state.resolutions
    group = [
        f
        for f in memory.open
        if f.tool == tool
        and f.target == target
        and (target or f.signature == signature or memory.step - f.step <= NEAR)
    ]
    if not group:
        return None
    last = group[-1].step
    between = [d for d in memory.done if d.step > last and (d.tool, d.target) != (tool, target)]
    return group, "retry", between[-1:]


def _alternative(state: SessionState, result: ToolResult, target: str) -> Found | None:
    """Open failures this success replaces (see the module docstring)."""
    memory = state.resolutions
    tool, path = result.tool, _path(target)
    group: list[OpenFailure] = []
    via: list[Done] = []
    for f in memory.open:
        if f.category == "unknown_tool":
            if f.step == memory.step - 1 and f.tool != tool and _shares_value(f, result):
                group.append(f)
            continue
        if f.category == "edit_mismatch":
            if target and f.target == target and f.tool != tool and "write" in tool.lower():
                group.append(f)
            continue
        if f.tool != tool or f.category not in ALTERNATIVE or f.target == target:
            continue
        failed_path = _path(f.target)
        if not path or not failed_path:
            continue
        if _variant(failed_path, path):
            group.append(f)
            continue
        finder = _finder(state, f, path, failed_path)
        if finder is not None:
            group.append(f)
            via = [finder]
    return (group, "alternative", via) if group else None


def _finder(state: SessionState, f: OpenFailure, path: str, failed_path: str) -> Done | None:
    """The latest success after `f` whose output named `path`'s file, when `path` sits in the
    failed path's directory."""
    if not _same_dir(posixpath.dirname(failed_path), posixpath.dirname(path)):
        return None
    name = posixpath.basename(path)
    hits = [d for d in state.resolutions.done if d.step > f.step and name in d.names]
    return hits[-1] if hits else None


def _record(
    state: SessionState,
    group: list[OpenFailure],
    kind: str,
    via: list[Done],
    worked: tuple[str, str, str],  # the call that worked: tool, target, label
    signature: str,
    result: ToolResult,
    now: float,
) -> Resolution:
    memory = state.resolutions
    tool, target, label = worked
    keys = {f.key for f in group}
    memory.open = [f for f in memory.open if f.key not in keys]
    records = {r.call_id: r for r in state.records}
    last = records.get(group[-1].key)
    turns = state.turn - group[0].turn
    resolution = Resolution(
        failed=[f.key for f in group],
        operation=group[-1].tool,
        target=group[-1].target,
        category=group[-1].category,
        error=last.error if last else "",
        about=last.about if last else group[-1].target,
        label=last.label if last and not group[-1].target else "",
        kind=kind,  # type: ignore[arg-type]
        tool=tool,
        worked=target,
        worked_label=label,
        via=[(d.tool, d.target) for d in via],
        changed=kind == "retry" and any(f.signature != signature for f in group),
        call_id=result.key,
        turn=state.turn,
        turns=turns,
        time=now,
    )
    memory.items.append(resolution)
    memory.resolved += 1
    memory.turns += turns
    return resolution


def _age(state: SessionState) -> None:
    """Failures older than `WINDOW` results are given up on; so are successes before them."""
    memory = state.resolutions
    oldest = memory.step - WINDOW
    memory.open = [f for f in memory.open if f.step > oldest]
    memory.done = [d for d in memory.done if d.step > oldest]


def effective_target(target: str, result: ToolResult) -> str:
    """The call's target, else the first path in its string arguments (a patch's file:
    Codex's `apply_patch` names it only inside `*** Update File: src/x.ts`)."""
    if target or result.call is None:
        return target
    for value in result.call.arguments.values():
        if isinstance(value, str):
            for token in _TOKEN.findall(value[:SCAN]):
                if "/" in token or _EXT.search(token):
                    return token
    return ""


def _path(target: str) -> str:
    """The last path-like token of a target (`src/config.ts` in `sed -n '1,5p' src/config.ts`)."""
    paths = [t for t in _TOKEN.findall(target) if "/" in t or _EXT.search(t)]
    paths = [t.rstrip(".:") for t in paths if not t.startswith("-")]
    return paths[-1] if paths else ""


def _variant(failed_path: str, path: str) -> bool:
    """The same file name in another directory, or the same stem with another extension."""
    fd, fn = posixpath.split(failed_path)
    d, n = posixpath.split(path)
    if fn == n:
        return fd != d
    fs, fe = posixpath.splitext(fn)
    s, e = posixpath.splitext(n)
    return bool(fe and e) and fs == s and fe != e and _same_dir(fd, d)


def _same_dir(a: str, b: str) -> bool:
    """Equal directories, one perhaps absolute (`/repo/src` and `src`)."""
    if a == b:
        return True
    return bool(a and b) and (a.endswith("/" + b) or b.endswith("/" + a))


def _shares_value(f: OpenFailure, result: ToolResult) -> bool:
    arguments = result.call.arguments if result.call else {}
    return any(isinstance(v, str) and v in f.values for v in arguments.values())


def _names(text: str) -> list[str]:
    """File names (with an extension) the output mentions, first `MAX_NAMES`, unique."""
    names: dict[str, None] = {}
    for token in _NAME.findall(text[:SCAN]):
        names[posixpath.basename(token)] = None
        if len(names) >= MAX_NAMES:
            break
    return list(names)


# --- what it says (all wording from the rules' templates) ---


def how(rules: Rules, resolution: Resolution, quote: bool = False) -> str:
    """`, found by list_dir("src")`, `, after bash("npm install")`, ...: how it worked."""
    t = rules.templates
    steps = ", ".join(call(tool, target, quote) for tool, target in resolution.via)
    parts = []
    if resolution.kind == "alternative":
        if steps:
            parts.append(t.resolution_found.format(steps=steps))
        return "".join(parts)
    if resolution.changed:
        parts.append(t.resolution_changed)
    if steps:
        parts.append(t.resolution_after.format(steps=steps))
    if not parts:
        parts.append(t.resolution_retried)
    return "".join(parts)


def call(tool: str, target: str, quote: bool = False, label: str = "") -> str:
    """`tool("target")` (render.operation); `quote`: the target as a JSON string literal (the
    summary's form); `label`: the call's arguments when it has no target."""
    return render.operation(tool, target, label, quote)


def summary_notes(state: SessionState, rules: Rules) -> dict[str, str]:
    """Failure call id -> the summary line saying what resolved it."""
    notes: dict[str, str] = {}
    for resolution in state.resolutions.items:
        line = rules.templates.summary_resolution.format(
            turn=resolution.turn,
            count=len(resolution.failed),
            worked=call(resolution.tool, resolution.worked, True, resolution.worked_label),
            how=how(rules, resolution, quote=True),
        )
        for key in resolution.failed:
            notes[key] = line
    return notes


def similar(state: SessionState, record: FailureRecord, rules: Rules) -> str:
    """For a new failure: the latest resolution of a failure of the same category on the
    same target or subject, else by the same operation; "" when there is none."""
    items = [r for r in state.resolutions.items if r.category == record.category]
    same = [r for r in items if record.about and r.about == record.about]
    same = same or [r for r in items if r.operation == record.operation]
    if not same:
        return ""
    r = same[-1]
    return rules.templates.resolved_before.format(
        failed=call(r.operation, r.target, label=r.label),
        category=r.category,
        count=len(r.failed),
        worked=call(r.tool, r.worked, label=r.worked_label),
        how=how(rules, r),
    )


def event_text(resolution: Resolution, rules: Rules) -> str:
    """The timeline's line for a resolution."""
    return rules.templates.resolution_event.format(
        failed=call(resolution.operation, resolution.target, label=resolution.label),
        category=resolution.category,
        count=len(resolution.failed),
        worked=call(resolution.tool, resolution.worked, label=resolution.worked_label),
        how=how(rules, resolution),
    )
