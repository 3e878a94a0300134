"""Outcome reports (proxy/session/outcome.py): what a body may say, each mistake named by its
field, and which keys a name means for one tenant (never another tenant's)."""

from __future__ import annotations

import pytest

from recovery_proxy.session.keys import scoped, tenant_of
from recovery_proxy.session.outcome import BadReport, NotJson, candidates, parse_report

ALICE = tenant_of({"authorization": "Bearer sk-alice-9f2"}, "recovery-proxy")
BOB = tenant_of({"authorization": "Bearer sk-bob-77c"}, "recovery-proxy")


def test_a_full_report_and_a_bare_one() -> None:
    report = parse_report(b'{"result": "succeeded", "score": 1, "note": "merged as #4411"}')
    assert (report.result, report.score, report.note) == ("succeeded", 1.0, "merged as #4411")
    bare = parse_report(b'{"result": "abandoned", "score": null}')
    assert (bare.result, bare.score, bare.note) == ("abandoned", None, "")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"result": "won"}', "result: Input should be 'succeeded', 'failed' or 'abandoned'"),
        (b'{"score": 0.5}', "result: Field required"),
        (b'{"result": "failed", "score": 1.5}', "score: Input should be less than or equal to 1"),
        (b'{"result": "failed", "score": -0.1}', "score: Input should be greater than or equal"),
        (b'{"result": "failed", "score": "0.5"}', "score: Input should be a valid number"),
        (b'{"result": "failed", "score": true}', "score: Input should be a valid number"),
        (b'{"result": "failed", "note": 42}', "note: Input should be a valid string"),
        (
            b'{"result": "failed", "note": "' + b"x" * 501 + b'"}',
            "note: String should have at most 500",
        ),
        (b'{"result": "failed", "scor": 0.5}', "scor: Extra inputs are not permitted"),
    ],
)
def test_each_mistake_names_its_field(body: bytes, message: str) -> None:
    with pytest.raises(BadReport) as caught:
        parse_report(body)
    assert str(caught.value).startswith(message)
    assert not isinstance(caught.value, NotJson)


@pytest.mark.parametrize("body", [b"", b"succeeded", b'["succeeded"]', b'"succeeded"'])
def test_a_body_that_is_not_a_json_object(body: bytes) -> None:
    with pytest.raises(NotJson):
        parse_report(body)


def test_a_name_means_the_tenants_own_sessions_only() -> None:
    assert candidates(ALICE, "fix-4411") == [
        scoped(ALICE, "h:fix-4411"),  # a /s/{id}/ path or session header
        scoped(ALICE, "w:fix-4411"),  # Claude Code's session id
        scoped(ALICE, "b:fix-4411"),  # a body field
    ]
    own = scoped(ALICE, "h:fix-4411")
    assert candidates(ALICE, own)[0] == own  # a key, as x-recovery-proxy-session shows it
    theirs = scoped(BOB, "h:fix-4411")
    assert theirs not in candidates(ALICE, theirs)  # another tenant's key is only a name
    assert all(key.startswith(ALICE + ":") for key in candidates(ALICE, theirs))
