"""The runner end to end over HTTP: the scripted mock model on a loopback port, the proxy
arms in front of it, the report files; in each of the three wire formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.effect.__main__ import main


@pytest.mark.parametrize("fmt", ["chat", "messages", "responses"])
def test_mock_run(tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    argv = ["--mock", "--seeds", "2", "--arms", "direct,proxy,control", "--format", fmt]
    argv += ["--families", "path_moved,transient_network,compaction", "--out", str(out)]
    assert main(argv) == 0
    doc = json.loads(out.with_suffix(".json").read_text())
    arms = doc["summary"]["arms"]
    assert doc["meta"]["pairs"] == 30 and len(doc["episodes"]) == 90
    # Unguided, the mock repeats its failing call; the proxy's block turns it; control is
    # tracked but untouched, so it behaves as direct, pair for pair.
    assert arms["direct"]["success"]["mean"] == 0.0
    assert arms["proxy"]["success"]["mean"] == 1.0
    assert arms["control"] == {
        **arms["direct"],
        "seconds_per_episode": arms["control"]["seconds_per_episode"],
    }
    assert arms["proxy"]["proxy_tokens"]["mean"] > 0 == arms["control"]["proxy_tokens"]["mean"]
    assert arms["direct"]["post_compaction_repeats"]["mean"] > 0
    paired = doc["summary"]["paired"]["proxy"]
    assert paired["success"]["mean"] == 1.0 and paired["repeats"]["ci95"][1] < 0
    # Seeds 1 in 4 give up after the first failure: seed 0 never, so 0% here.
    assert arms["direct"]["gave_up"]["mean"] == 0.0
    md = out.with_suffix(".md").read_text()
    assert "| task success | 0% (0%-11%) | 100% (89%-100%) | 0% (0%-11%) | +100 pt" in md
    assert out.with_suffix(".png").read_bytes().startswith(b"\x89PNG")
    assert "| task success |" in capsys.readouterr().out


def test_bad_arguments_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--mock", "--arms", "direct,treatment"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown arm" in err
    assert main([]) == 2
    assert "--base-url or --mock" in capsys.readouterr().err


def test_resume_plays_only_what_the_journal_lacks(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["--mock", "--seeds", "1", "--families", "transient_network", "--out", str(out)]
    assert main([*argv, "--resume"]) == 0
    journal = out.with_suffix(".jsonl")
    lines = journal.read_text().splitlines()
    first = json.loads(out.with_suffix(".json").read_text())
    assert len(lines) == len(first["episodes"]) == 2 * first["meta"]["pairs"]
    # A stop cut the last line short and lost the one before: those two run again, the
    # rest are read back as they were.
    journal.write_text("\n".join(lines[:-2]) + "\n" + lines[-1][:20])
    # Reported alone, the journal gives only the pairs it holds both arms of.
    assert main([*argv, "--report-only"]) == 0
    partial = json.loads(out.with_suffix(".json").read_text())
    assert 2 * partial["meta"]["pairs"] == len(partial["episodes"]) < len(lines)
    pairs = {(e["task"], e["seed"]) for e in partial["episodes"]}
    assert all(
        sum((t, s) == (e["task"], e["seed"]) for e in partial["episodes"]) == 2 for t, s in pairs
    )
    kept = {(e["task"], e["arm"]): e["seconds"] for e in map(json.loads, lines[:-2])}
    assert main([*argv, "--seeds", "2", "--resume"]) == 0
    again = json.loads(out.with_suffix(".json").read_text())
    assert again["meta"]["pairs"] == 2 * first["meta"]["pairs"]
    seed0 = {(e["task"], e["arm"]): e["seconds"] for e in again["episodes"] if e["seed"] == 0}
    assert all(seed0[key] == seconds for key, seconds in kept.items())
    assert len(journal.read_text().splitlines()) == len(again["episodes"])


def test_tool_calls_written_as_text() -> None:
    from bench.effect.formats import Reply, text_calls

    fenced = '```json\n{"name": "read_file", "arguments": {"path": "src/a.py"}}\n```'
    tagged = '<tool_call>\n{"name": "list_dir", "arguments": {"path": "src"}}\n</tool_call>'
    reply = text_calls(Reply(f"{fenced}\nthen\n{tagged}", [], 10, 5))
    assert [(c.name, c.args) for c in reply.calls] == [
        ("read_file", {"path": "src/a.py"}),
        ("list_dir", {"path": "src"}),
    ]
    assert reply.text == "" and (reply.prompt_tokens, reply.completion_tokens) == (10, 5)
    for text in (
        '```json\n{"name": "rm_rf", "arguments": {}}\n```',  # not an offered tool
        '```json\n{"name": "read_file", "arguments": {"path": False}}\n```',  # not JSON
        "The file is fixed.",
    ):
        assert text_calls(Reply(text, [], 1, 1)).calls == []


def test_pairs_takes_the_first_pairs_seed_by_seed(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["--mock", "--seeds", "2", "--families", "transient_network,compaction"]
    assert main([*argv, "--pairs", "13", "--out", str(out)]) == 0
    doc = json.loads(out.with_suffix(".json").read_text())
    assert doc["meta"]["pairs"] == 13 and len(doc["episodes"]) == 26
    played = {(e["seed"], e["task"]) for e in doc["episodes"]}
    assert len({task for seed, task in played if seed == 0}) == 10  # all of seed 0 first
    assert len({task for seed, task in played if seed == 1}) == 3
