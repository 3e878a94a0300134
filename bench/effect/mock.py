"""The scripted model the runner's tests (and `--mock`) play against: it makes the task's
obvious call and repeats it while it fails, unless the proxy's recovery block (or, after a
compaction, its failure summary) is in the request; then it follows the task's known way
through. Give-ups are drawn from the request's `seed`, so arms differ episode by episode the
same way for the same seed (paired)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from bench.effect.tasks import Call, Task
from recovery_proxy.demo.mock_model import Turn, system_of
from recovery_proxy.demo.mock_model.script import stamp

BLOCK = "[Error Recovery Context]"
SUMMARY = "## Recent failures"
REPEATS = 4  # obvious calls before the unguided model gives up
GIVE_UP_SHARE = 4  # 1 in 4 seeds: the unguided model gives up after the first failure


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def _turn(call: Call, call_id: str) -> Turn:
    function = {"name": call.name, "arguments": json.dumps(call.args)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def policy(tasks: Sequence[Task]) -> Callable[[dict[str, Any]], Turn]:
    """The mock model's answer to a request, for any of `tasks` (found by its prompt)."""
    by_length = sorted(tasks, key=lambda t: len(t.prompt), reverse=True)

    def answer(payload: dict[str, Any]) -> Turn:
        blob = "\n".join(strings(payload))
        task = next((t for t in by_length if t.prompt in blob), None)
        if task is None:
            return {"role": "assistant", "content": "I do not know this task."}
        done = {int(n) for n in re.findall(r"\bsol(\d+)_\d+", blob)}
        naive = set(re.findall(r"\bnaive\d+_\d+", blob))
        guided = BLOCK in blob or SUMMARY in system_of(payload)
        if guided or done:
            step = max(done) + 1 if done else 0
            if step < len(task.solution):
                return _turn(task.solution[step], f"sol{step}_{stamp()}")
            return {"role": "assistant", "content": "Done."}
        quits = int(payload.get("seed") or 0) % GIVE_UP_SHARE == GIVE_UP_SHARE - 1
        if len(naive) < (1 if quits else REPEATS):
            return _turn(task.naive, f"naive{len(naive)}_{stamp()}")
        return {"role": "assistant", "content": "I could not complete the task."}

    return answer
