"""Precision and recall of the resolution linker on the labelled transcripts (issue 27).

Each transcript of tests/data/resolutions.yaml (tuned on) and resolutions_unseen.yaml (kept out
of tuning), written by bench/resolution_set.py before the linker, is replayed turn by turn in
its own wire format: the request body an agent would send (Chat Completions, Responses,
Messages, generateContent) is parsed by that format's adapter and observed by the tracker, as
the proxy does for a real request. A link is a (failed step, resolving step) pair; precision is
the share of the linker's pairs a reader drew, recall the share of the reader's pairs it found.
`kind` and `via` are compared on the pairs both drew.

    python -m bench.resolution_links            # both parts
    python -m bench.resolution_links --json     # the figures as JSON
    python -m bench.resolution_links --misses   # each wrong or missed pair (look at the
                                                # unseen part's only once tuning is over)
"""

from __future__ import annotations

import json
import sys
import zlib
from pathlib import Path
from typing import Any

import orjson
import yaml

from recovery_proxy import tokens
from recovery_proxy.core import render, resolutions
from recovery_proxy.core.plan import Budget
from recovery_proxy.core.state import SessionState
from recovery_proxy.core.tracker import observe
from recovery_proxy.rules.load import default_rules_dir, load_rules
from recovery_proxy.rules.model import Rules
from recovery_proxy.wire import FORMATS

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
PARTS = {"tuned": "resolutions.yaml", "unseen": "resolutions_unseen.yaml"}
SYSTEM = "You are a coding agent. Work in the repository the user names."
TASK = "Find where the setting lives and fix the failing check."
Pair = tuple[int, int]


def call_id(transcript: str, step: int) -> str:
    """A per-call id as long as real ones (so it is the result's identity by itself)."""
    return f"call_{zlib.crc32(transcript.encode()):010d}_{step:06d}"


def body(fmt: str, tid: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The request an agent of `fmt` sends after `steps`."""
    if fmt == "openai_chat":
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": TASK},
        ]
        for i, s in enumerate(steps):
            cid = call_id(tid, i)
            function = {"name": s["tool"], "arguments": orjson.dumps(s["args"]).decode()}
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": cid, "type": "function", "function": function}],
                }
            )
            messages.append({"role": "tool", "tool_call_id": cid, "content": s["out"]})
        return {"model": "gpt-4o", "messages": messages}
    if fmt == "openai_responses":
        items: list[dict[str, Any]] = [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": TASK}]}
        ]
        for i, s in enumerate(steps):
            cid = call_id(tid, i)
            arguments = orjson.dumps(s["args"]).decode()
            items.append(
                {"type": "function_call", "name": s["tool"], "arguments": arguments, "call_id": cid}
            )
            items.append({"type": "function_call_output", "call_id": cid, "output": s["out"]})
        return {"model": "gpt-5-codex", "instructions": SYSTEM, "input": items, "store": False}
    if fmt == "anthropic_messages":
        task = [{"type": "text", "text": TASK}]
        turns: list[dict[str, Any]] = [{"role": "user", "content": task}]
        for i, s in enumerate(steps):
            cid = call_id(tid, i)
            use = {"type": "tool_use", "id": cid, "name": s["tool"], "input": s["args"]}
            turns.append({"role": "assistant", "content": [use]})
            result = {"type": "tool_result", "tool_use_id": cid, "content": s["out"]}
            if s.get("err"):
                result["is_error"] = True
            turns.append({"role": "user", "content": [result]})
        return {"model": "claude-sonnet-4-5", "system": SYSTEM, "messages": turns}
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": TASK}]}]
    for i, s in enumerate(steps):
        cid = call_id(tid, i)
        call = {"name": s["tool"], "args": s["args"], "id": cid}
        contents.append({"role": "model", "parts": [{"functionCall": call}]})
        # Gemini CLI reports a failed tool as {"error": ...}; a shell command's exit code is
        # part of its output.
        flagged = s.get("err") and s["tool"] != "run_shell_command"
        response = {"error": s["out"]} if flagged else {"output": s["out"]}
        answer = {"name": s["tool"], "id": cid, "response": response}
        contents.append({"role": "user", "parts": [{"functionResponse": answer}]})
    return {"contents": contents, "systemInstruction": {"parts": [{"text": SYSTEM}]}}


def replay(transcript: dict[str, Any], rules: Rules) -> SessionState:
    """The session state after every step of `transcript`, one request per step."""
    fmt = next(f for f in FORMATS if f.name == transcript["format"])
    state = SessionState()
    steps = transcript["steps"]
    for n in range(1, len(steps) + 1):
        conv = fmt.parse(body(fmt.name, transcript["id"], steps[:n]))
        assert conv is not None
        budget = Budget(lambda text: len(text) // 4 + 1, 200, 1000, 100_000)
        observe(state, conv, rules, budget, 1_750_000_000.0 + 30 * n)
    return state


def predicted(transcript: dict[str, Any], state: SessionState) -> dict[Pair, dict[str, Any]]:
    """The linker's pairs, with their kind and via steps."""
    index = {call_id(transcript["id"], i): i for i in range(len(transcript["steps"]))}
    by_key = {k.split(":")[0]: i for k, i in index.items()}
    out: dict[Pair, dict[str, Any]] = {}
    for r in state.resolutions.items:
        by = index.get(r.call_id, by_key.get(r.call_id.split(":")[0], -1))
        for key in r.failed:
            failed = index.get(key, by_key.get(key.split(":")[0], -1))
            out[(failed, by)] = {"kind": r.kind, "via": r.via}
    return out


def score(transcripts: list[dict[str, Any]], rules: Rules) -> dict[str, Any]:
    """Precision, recall, kind and via agreement over `transcripts`; misses listed."""
    tp = fp = fn = kinds = vias = 0
    misses: list[str] = []
    for t in transcripts:
        state = replay(t, rules)
        got = predicted(t, state)
        gold: dict[Pair, dict[str, Any]] = {}
        for link in t["links"]:
            for failed in link["failed"]:
                gold[(failed, link["by"])] = link
        for pair, link in gold.items():
            if pair in got:
                tp += 1
                kinds += got[pair]["kind"] == link["kind"]
                want = [(t["steps"][i]["tool"]) for i in link["via"]]
                vias += [tool for tool, _ in got[pair]["via"]] == want
            else:
                fn += 1
                misses.append(f"missed {t['id']}: {pair} {link['kind']}")
        for pair in got.keys() - gold.keys():
            fp += 1
            misses.append(f"wrong  {t['id']}: {pair} {got[pair]['kind']}")
    return {
        "transcripts": len(transcripts),
        "links": tp + fn,
        "predicted": tp + fp,
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / (tp + fn) if tp + fn else 1.0,
        "kind_agrees": kinds / tp if tp else None,
        "via_agrees": vias / tp if tp else None,
        "misses": misses,
    }


def summary_cost(transcripts: list[dict[str, Any]], rules: Rules) -> dict[str, Any]:
    """Tokens (recovery_proxy.tokens.count, gpt-4o) the resolution lines add to the summary
    each session would get if it were compacted now (every failure record in it)."""
    added: list[int] = []
    base: list[int] = []
    for t in transcripts:
        state = replay(t, rules)
        if not state.records or not state.resolutions.items:
            continue
        notes = resolutions.summary_notes(state, rules)
        plain = tokens.count(render.summary(rules, state.records), "gpt-4o")
        full = tokens.count(render.summary(rules, state.records, notes), "gpt-4o")
        base.append(plain)
        added.append(full - plain)
    return {
        "summaries": len(added),
        "summary_tokens_mean": sum(base) / len(base) if base else 0,
        "added_tokens_mean": sum(added) / len(added) if added else 0,
        "added_tokens_max": max(added, default=0),
    }


def load(part: str) -> list[dict[str, Any]]:
    return yaml.safe_load((DATA / PARTS[part]).read_text())


def main(argv: list[str]) -> None:
    rules = load_rules(default_rules_dir())
    results: dict[str, Any] = {part: score(load(part), rules) for part in PARTS}
    cost = summary_cost(load("tuned") + load("unseen"), rules)
    if "--json" in argv:
        print(json.dumps({**results, "summary_cost": cost}, indent=2))
        return
    for part, r in results.items():
        print(
            f"{part:7} {r['transcripts']:3d} transcripts, {r['links']:3d} links: "
            f"precision {r['precision']:.3f}, recall {r['recall']:.3f} "
            f"({r['predicted']} predicted); kind agrees {r['kind_agrees']:.3f}, "
            f"via agrees {r['via_agrees']:.3f}"
        )
        if "--misses" in argv:
            print("\n".join("  " + m for m in r["misses"]))
    print(
        f"summary cost: {cost['summaries']} sessions with a resolution; their summary "
        f"{cost['summary_tokens_mean']:.1f} tokens on average without resolution lines, "
        f"+{cost['added_tokens_mean']:.1f} with them (max +{cost['added_tokens_max']})"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
