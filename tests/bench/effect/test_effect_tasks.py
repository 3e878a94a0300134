"""The suite: enough tasks and families; every obvious call fails and every known way works."""

from __future__ import annotations

import pytest

from bench.effect.tasks import Task, all_tasks

TASKS = all_tasks()


def test_size_and_families() -> None:
    assert len(TASKS) >= 40
    assert len({t.family for t in TASKS}) >= 8
    assert len({t.id for t in TASKS}) == len(TASKS)
    assert any(t.compact_at for t in TASKS)


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_obvious_call_fails_and_the_way_through_works(task: Task) -> None:
    sandbox = task.build()
    assert sandbox.call(task.naive.name, task.naive.args).failed
    assert not task.check(sandbox)
    sandbox = task.build()
    for call in task.solution:
        sandbox.call(call.name, call.args)
    assert task.check(sandbox)


def test_errors_read_as_the_real_tools_print_them() -> None:
    sandbox = next(t for t in TASKS if t.id == "command_not_found-0").build()
    assert sandbox.run_shell("python manage.py migrate").text == (
        "Exit code 127\nbash: line 1: python: command not found"
    )
    sandbox = next(t for t in TASKS if t.id == "missing_dependency-0").build()
    text = sandbox.run_shell("python3 scripts/report.py").text
    assert text.startswith("Exit code 1\nTraceback (most recent call last):")
    assert text.endswith("ModuleNotFoundError: No module named 'yaml'")
    assert "No matching distribution found for yaml" in sandbox.run_shell("pip3 install yaml").text
