"""Rule files: validation messages, examples, hot reload, packaging."""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from recovery_proxy.cli.rules_check import check_rules
from recovery_proxy.core.classify import classify
from recovery_proxy.metrics import Metrics
from recovery_proxy.rules.load import default_rules_dir, load_rules
from recovery_proxy.rules.model import RANKS_CACHE, RANKS_TOOL_MAX, RulesError
from recovery_proxy.rules.watch import RulesHolder


@pytest.fixture
def rules_dir(tmp_path: Path) -> Path:
    target = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), target)
    return target


def test_bundled_rules_load_and_pass_their_examples(capsys) -> None:
    assert check_rules(None) == 0
    assert "rules ok" in capsys.readouterr().out


def test_unknown_key_is_refused_naming_file_and_rule(rules_dir: Path) -> None:
    path = rules_dir / "10-detection.yaml"
    path.write_text(
        path.read_text().replace(
            "    - id: openai-agents\n", "    - id: openai-agents\n      severity: high\n", 1
        )
    )
    with pytest.raises(RulesError) as caught:
        load_rules(rules_dir)
    message = str(caught.value)
    assert "10-detection.yaml" in message and "'openai-agents'" in message
    assert "Extra inputs are not permitted" in message


def test_bad_pattern_is_refused_naming_file_and_rule(rules_dir: Path) -> None:
    (rules_dir / "40-local.yaml").write_text(
        "detection:\n  error:\n    - id: my-lookahead\n      pattern: '(?=oops)'\n"
    )
    with pytest.raises(RulesError) as caught:
        load_rules(rules_dir)
    message = str(caught.value)
    assert "40-local.yaml" in message and "'my-lookahead'" in message and "RE2" in message


def test_broken_yaml_and_duplicate_ids_are_refused(rules_dir: Path) -> None:
    (rules_dir / "40-local.yaml").write_text("detection: [unclosed\n")
    with pytest.raises(RulesError, match=r"40-local\.yaml: cannot read YAML"):
        load_rules(rules_dir)
    (rules_dir / "40-local.yaml").write_text(
        "detection:\n  error:\n    - id: goose\n      pattern: 'x'\n"
    )
    with pytest.raises(RulesError, match=r"rule 'goose' is already defined in 10-detection\.yaml"):
        load_rules(rules_dir)


def test_rules_check_reports_failing_examples(rules_dir: Path, capsys) -> None:
    (rules_dir / "40-local.yaml").write_text(
        "detection:\n  error:\n    - id: deploy-failed\n      pattern: '\\ADeploy failed'\n"
        "      examples:\n        match: ['deploy failed: quota']\n        no_match: ['Deploy failed to start? no']\n"
    )
    assert check_rules(rules_dir) == 1
    err = capsys.readouterr().err
    assert "rule 'deploy-failed' should match 'deploy failed: quota'" in err
    assert "rule 'deploy-failed' should not match" in err


def test_local_rules_extend_the_defaults(rules_dir: Path) -> None:

    text = "DEPLOY-7 rollout aborted by policy"
    assert not classify(load_rules(rules_dir), "deploy", text).error
    (rules_dir / "40-local.yaml").write_text(
        "detection:\n  error:\n    - id: deploy-aborted\n      pattern: '\\ADEPLOY-\\d+ rollout aborted'\n"
    )
    verdict = classify(load_rules(rules_dir), "deploy", text)
    assert verdict.error and verdict.rule == "deploy-aborted" and verdict.category == "unknown"


async def test_hot_reload_applies_good_edits_and_keeps_last_good(rules_dir: Path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="recovery_proxy")
    metrics = Metrics()
    holder = RulesHolder(rules_dir, metrics)
    first = holder.current.version
    holder.start()
    try:
        await asyncio.sleep(0.3)
        recovery = rules_dir / "30-recovery.yaml"
        recovery.write_text(recovery.read_text().replace("repeat_stop: 3 ", "repeat_stop: 4 "))
        for _ in range(40):  # within 2 s
            await asyncio.sleep(0.05)
            if holder.current.version != first:
                break
        assert holder.current.version != first
        assert holder.current.thresholds.repeat_stop == 4
        good = holder.current.version
        recovery.write_text("thresholds: {repeat_warn: [oops]}\n")
        for _ in range(40):
            await asyncio.sleep(0.05)
            if any("reload rejected" in r.getMessage() for r in caplog.records):
                break
        rejected = [r for r in caplog.records if "reload rejected" in r.getMessage()]
        assert len(rejected) == 1
        assert "30-recovery.yaml" in rejected[0].getMessage()
        assert holder.current.version == good
        exposition = metrics.render().decode()
        assert f'recovery_proxy_rules_info{{version="{good}"}} 1.0' in exposition
        assert 'recovery_proxy_rules_reloads_total{result="rejected"} 1.0' in exposition
    finally:
        await holder.stop()


def test_extra_rules_replace_a_category_in_place_and_add_new_ones(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "team.yaml").write_text(
        "categories:\n"
        "  - id: not_found\n"
        "    patterns: ['(?i)no such file|ENOENT']\n"
        "    hints: ['Run `ls` on the parent directory first']\n"
        "  - id: quota\n"
        "    patterns: ['(?i)quota exceeded']\n"
        "    hints: ['Wait for the quota window to reset']\n"
        "templates:\n"
        "  hint: '* {hint}'\n"
    )
    bundled = load_rules()
    rules = load_rules(None, extra)
    ids = [c.id for c in rules.categories]
    assert ids.count("not_found") == 1
    bundled_ids = [c.id for c in bundled.categories]
    assert ids == ["quota", *bundled_ids]  # new ones first, the replaced one in its place
    assert ids[0] == "quota" and "quota" not in [c.id for c in bundled.categories]
    replaced = rules.category("not_found")
    assert replaced is not None and replaced.hints == ("Run `ls` on the parent directory first",)
    assert rules.templates.hint == "* {hint}"
    assert rules.version != bundled.version
    verdict = classify(rules, "deploy", "Error: quota exceeded for project")
    assert verdict.error and verdict.category == "quota"


def test_extra_rules_errors_name_the_extra_file(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "team.yaml").write_text("templates:\n  hint: '- {hnt}'\n")
    with pytest.raises(
        RulesError, match=r"extra/team.yaml#settings: template .hint.: unknown field"
    ):
        load_rules(None, extra)
    (extra / "team.yaml").write_text("categories: [\n")
    with pytest.raises(RulesError, match=r"extra rules team.yaml: cannot read YAML"):
        load_rules(None, extra)


def test_serve_with_broken_rules_prints_one_line(rules_dir: Path) -> None:
    path = rules_dir / "30-recovery.yaml"
    path.write_text(path.read_text().replace("{operation}", "{operaton}", 1))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "recovery_proxy",
            "serve",
            "--rules",
            str(rules_dir),
            "--store",
            "memory",
            "--port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert str(rules_dir) in lines[0] and "30-recovery.yaml" in lines[0]
    assert "unknown field(s) ['operaton']" in lines[0]


def test_templates_are_a_typed_value_with_one_field_per_known_template() -> None:
    from dataclasses import fields

    from recovery_proxy.rules.model import Templates
    from recovery_proxy.rules.schema import TEMPLATE_NAMES

    assert {f.name for f in fields(Templates)} == TEMPLATE_NAMES
    assert load_rules().templates.block.startswith("[Error Recovery Context]\n")


def test_a_rules_copy_older_than_a_template_takes_the_bundled_wording(rules_dir: Path) -> None:
    """A rules directory copied before `same_error` and the resolution templates existed still
    loads, with the bundled text for them; a template it never could lack is still required."""
    recovery = rules_dir / "30-recovery.yaml"
    lines = recovery.read_text(encoding="utf-8").splitlines()
    later = ("  same_error:", "  resolution", "  summary_resolution:", "  resolved_before:")
    kept = [line for line in lines if not line.startswith((*later, "  known_fix:"))]
    assert len(kept) < len(lines) - 5
    recovery.write_text("\n".join(kept) + "\n", encoding="utf-8")
    rules = load_rules(rules_dir)
    bundled = load_rules()
    assert rules.templates.same_error == bundled.templates.same_error
    assert rules.templates.known_fix == bundled.templates.known_fix
    recovery.write_text(
        "\n".join(line for line in kept if not line.startswith("  hint:")) + "\n",
        encoding="utf-8",
    )
    with pytest.raises(RulesError, match="templates missing: \\['hint'\\]"):
        load_rules(rules_dir)


def test_category_patterns_extend_a_category_defined_in_another_file(rules_dir: Path) -> None:
    (rules_dir / "40-more.yaml").write_text(
        "category_patterns:\n  conflict:\n    - '(?i)zzz-verrou occupé'\n", encoding="utf-8"
    )
    rules = load_rules(rules_dir)
    verdict = classify(rules, "bash", "Error: zzz-verrou occupé par le processus 42")
    assert (verdict.error, verdict.category) == (True, "conflict")
    assert [c.id for c in rules.categories] == [c.id for c in load_rules().categories]
    assert rules.category("conflict").extra[-1].regex.pattern == "(?i)zzz-verrou occupé"


def test_category_patterns_for_an_unknown_category_are_refused(rules_dir: Path) -> None:
    (rules_dir / "40-more.yaml").write_text(
        "category_patterns:\n  no_such_category: ['x']\n", encoding="utf-8"
    )
    with pytest.raises(RulesError, match=r"40-more\.yaml: category_patterns: no category"):
        load_rules(rules_dir)


DEPLOY_CATEGORY = """categories:
  - id: deploy
    patterns: ['(?i)deploy failed']
    hints: [Read the deploy log before deploying again]
    tool_hints:
      - tools: '^deploy$'
        hints: [Check the deploy tool's own log]
    error_hints:
      - pattern: '{pattern}'
        hints: [Wait for the running deploy to finish; then deploy once]
        examples:
          match: [{example}]
"""


def test_error_hints_are_chosen_by_the_key_line_before_tool_hints(rules_dir: Path) -> None:
    (rules_dir / "40-deploy.yaml").write_text(
        DEPLOY_CATEGORY.format(pattern="(?i)already in progress", example="'x'")
    )
    rules = load_rules(rules_dir)
    deploy = rules.category("deploy")
    assert deploy is not None
    line = "Deploy failed: a deploy is already in progress"
    assert deploy.hints_for("deploy", line) == (
        "Wait for the running deploy to finish; then deploy once",
    )
    assert deploy.hints_for("deploy", "Deploy failed: quota") == (
        "Check the deploy tool's own log",
    )
    assert deploy.hints_for("ship", "Deploy failed: quota") == (
        "Read the deploy log before deploying again",
    )


def test_a_bad_error_hints_pattern_is_refused_naming_file_and_field(rules_dir: Path) -> None:
    (rules_dir / "40-deploy.yaml").write_text(
        DEPLOY_CATEGORY.format(pattern="(?<=in) progress", example="'x'")
    )
    with pytest.raises(RulesError) as caught:
        load_rules(rules_dir)
    message = str(caught.value)
    assert message.startswith(
        "40-deploy.yaml category 'deploy' error_hints[0].pattern: invalid RE2"
    )
    (rules_dir / "40-deploy.yaml").write_text(
        DEPLOY_CATEGORY.format(pattern="x", example="'x'").replace(
            "deploy once]", "deploy once, a, b, c]"
        )
    )
    with pytest.raises(
        RulesError,
        match=r"40-deploy\.yaml: rule 'deploy' \(categories\.0\.error_hints\.0\.hints\): List should have at most 3 items",
    ):
        load_rules(rules_dir)


def test_rules_check_runs_the_error_hints_examples(rules_dir: Path, capsys) -> None:
    (rules_dir / "40-deploy.yaml").write_text(
        DEPLOY_CATEGORY.format(pattern="(?i)already in progress", example="'Deploy failed: quota'")
    )
    assert check_rules(rules_dir) == 1
    err = capsys.readouterr().err
    assert "40-deploy.yaml: category 'deploy' error_hints[0] should give its hints for" in err
    assert "'Deploy failed: quota' (key line 'Deploy failed: quota')" in err


def test_a_tool_specific_category_comes_first_for_its_tools_only(rules_dir: Path) -> None:
    """`tools:` puts a category before every other for the tools it names and hides it from
    the rest; the order per tool name is remembered on the compiled rules (bounded), so a
    reload answers by its own categories."""
    text = "Error: permission denied by deploy policy"
    (rules_dir / "40-local.yaml").write_text(
        "categories:\n  - id: deploy_policy\n    tools: '^deploy$'\n"
        "    patterns: ['deploy policy']\n    hints: ['Ask for the deploy role']\n",
        encoding="utf-8",
    )
    rules = load_rules(rules_dir)
    assert classify(rules, "deploy", text).category == "deploy_policy"
    assert classify(rules, "bash", text).category == "permission_denied"
    assert classify(rules, "deploy", "Error: blocked by deploy policy").category == "deploy_policy"
    assert classify(rules, "bash", "Error: blocked by deploy policy").category == "unknown"
    assert set(rules._ranks) == {"deploy", "bash"}
    for i in range(RANKS_CACHE + 10):
        rules.category_ranks(f"tool-{i}")
    rules.category_ranks("t" * (RANKS_TOOL_MAX + 1))
    assert 0 < len(rules._ranks) <= RANKS_CACHE and "t" * (RANKS_TOOL_MAX + 1) not in rules._ranks
    assert classify(rules, "deploy", text).category == "deploy_policy"  # after the clear too
    (rules_dir / "40-local.yaml").unlink()
    reloaded = load_rules(rules_dir)
    assert reloaded._ranks == {} and classify(reloaded, "deploy", text).category == (
        "permission_denied"
    )
    assert replace(rules)._ranks == {}
