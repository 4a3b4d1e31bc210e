"""A judge's life cycle: archive (hidden, answers kept), restore, delete (audited, with its
machine labels) and ask again under the same prompt version. Offline: a fake LLM server."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import AuditEvent, Judge, MachineJudgment, Pair, RunScore, TestSet
from ndcg_labeler.services import judges, live, testsets
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.imports import ImportFile, import_files
from ndcg_labeler.services.jobs.runner import run_job
from tests.factory import build_test_set, trec
from tests.judges.fake_llm import FakeLLM

CORPUS = {
    "d1": "ANSWER3 refunds within 30 days",
    "d2": "ANSWER1 office opening hours",
    "d3": "GARBAGE a poem",
    "d4": "ANSWER2 the refund form",
    "d5": "JSONANS2 parking permits",
    "d6": "SLOW the canteen menu",
}
POOL = {"q1": ["d1", "d2", "d3", "d4"], "q2": ["d5", "d6"]}
L3, L5 = math.log2(3), math.log2(5)
# Run A under the judge's readable grades (d1 3, d2 1, d4 2; d5 2), worked out by hand:
# q1 ranks d1 d2 d3 d4: DCG 3 + 1/log2(3) + 2/log2(5), ideal 3, 2, 1; q2: d5 first, NDCG 1.
Q1_MACHINE = (3 + 1 / L3 + 2 / L5) / (3 + 2 / L3 + 1 / 2)


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    # SLOW sleeps well past the judge's timeout (0.8 s), which leaves every other answer room
    # to come in time even on a loaded 2-core machine.
    server = FakeLLM(slow_seconds=2.5).start()
    yield server
    server.stop()


@pytest.fixture
def judged(app: Flask, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> int:
    """Test set `life` with a pool, run A and judge `gpt`; its id."""
    monkeypatch.setattr("ndcg_labeler.services.judges.client.BACKOFF", 0.01)
    with app.app_context():
        test_set = build_test_set("life", {"q1": "refunds", "q2": "parking"}, corpus=CORPUS)
        import_files(test_set, pool=ImportFile(io.BytesIO(trec(POOL)), "pool.trec"))
        run_service.upload_run(test_set, io.BytesIO(trec(POOL)), "a.trec", "A", None)
        judges.add_judge("gpt", llm.url, "fake-model", timeout=0.8, concurrency=2)
        return test_set.id


def _cli(runner: FlaskCliRunner, *args: str, code: int = 0) -> str:
    result = runner.invoke(args=list(args))
    assert result.exit_code == code, result.output
    return result.output


def _statuses(app: Flask) -> dict[str, tuple[str, int | None]]:
    with app.app_context():
        rows = db.session.execute(
            sa.text(
                "SELECT c.docid, m.status, m.grade FROM machine_judgment m "
                "JOIN chunk c ON c.id = m.chunk_id"
            )
        )
        return {docid: (status, grade) for docid, status, grade in rows}


def _machine_mean(app: Flask) -> float | None:
    with app.app_context():
        run = run_service.require_run(testsets.require_by_name("life"), "A")
        return live.score_run(run, live.ScoreOptions(labels="machine:gpt")).mean_ndcg


def _audit(app: Flask) -> list[tuple[str, dict]]:
    with app.app_context():
        rows = db.session.execute(
            sa.select(AuditEvent.action, AuditEvent.details).order_by(AuditEvent.id)
        )
        # The life cycle's events (judge.create, recorded when the judge was added, is not one).
        return [(a, d) for a, d in rows if a.startswith("judge.") and a != "judge.create"]


def test_archive_hides_the_judge_and_keeps_its_answers(
    app: Flask, runner: FlaskCliRunner, as_admin, judged: int
) -> None:
    _cli(runner, "judges", "run", "life", "--judge", "gpt", "--pairs", "all")
    before = _statuses(app)
    assert len(before) == 6
    run_id = None
    with app.app_context():
        run_id = run_service.require_run(db.session.get_one(TestSet, judged), "A").id
        db.session.get_one(TestSet, judged).show_machine_suggestions = True
        db.session.commit()
        first = db.session.scalars(sa.select(Pair).order_by(Pair.id)).first()
        assert judges.suggestions(db.session.get_one(TestSet, judged), first) == [("gpt", 3)]
    page = f"/test-sets/{judged}/dashboard/runs/{run_id}"
    assert 'value="machine:gpt"' in as_admin.get(page).get_data(as_text=True)

    out = json.loads(_cli(runner, "judges", "archive", "gpt", "--json"))
    assert out == {"judge": "gpt", "archived": True, "changed": True}
    assert json.loads(_cli(runner, "judges", "archive", "gpt", "--json"))["changed"] is False
    # Gone from the Labels lists: the score views' label sources and the judges list.
    shown = as_admin.get(page).get_data(as_text=True)
    assert 'value="machine:gpt"' not in shown and 'value="fill:gpt"' not in shown
    assert "gpt" not in _cli(runner, "judges", "list")
    assert _cli(runner, "judges", "list", "--archived").strip().endswith("\tarchived")
    # ... and from annotators' suggestions (the test set shows them).
    with app.app_context():
        test_set = db.session.get_one(TestSet, judged)
        first = db.session.scalars(sa.select(Pair).order_by(Pair.id)).first()
        assert judges.suggestions(test_set, first) == []
    # The answers are kept and still score on request.
    assert _statuses(app) == before
    assert _machine_mean(app) == pytest.approx((Q1_MACHINE + 1.0) / 2)

    restored = json.loads(_cli(runner, "judges", "restore", "gpt", "--json"))
    assert restored == {"judge": "gpt", "archived": False, "changed": True}
    assert 'value="machine:gpt"' in as_admin.get(page).get_data(as_text=True)
    assert [a for a, _ in _audit(app)] == ["judge.archive", "judge.restore"]


def test_delete_asks_first_removes_its_labels_and_is_audited(
    app: Flask, runner: FlaskCliRunner, llm: FakeLLM, judged: int
) -> None:
    _cli(runner, "judges", "run", "life", "--judge", "gpt", "--pairs", "all")
    assert _machine_mean(app) == pytest.approx((Q1_MACHINE + 1.0) / 2)  # stored as a score row
    refused = runner.invoke(args=["judges", "delete", "gpt"], input="n\n")
    assert refused.exit_code == 1 and "Delete judge gpt and its 6 machine labels?" in (
        refused.output
    )
    assert len(_statuses(app)) == 6
    gone = json.loads(_cli(runner, "judges", "delete", "gpt", "--yes", "--json"))
    assert gone == {"judge": "gpt", "deleted": True, "machine_labels": 6}
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(MachineJudgment)) == 0
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Judge)) == 0
        assert not db.session.scalars(
            sa.select(RunScore.settings).where(RunScore.settings.contains("machine:gpt"))
        ).all()
    assert _audit(app) == [("judge.delete", {"name": "gpt", "labels": 6})]
    _cli(runner, "run", "score", "life", "A", "--labels", "machine:gpt", code=1)
    # A new judge under the old name starts from its own answers, never the old judge's scores:
    # its endpoint is down, so it has no grade at all (on SQLite its answers reuse the old ids).
    with app.app_context():
        judges.add_judge("gpt", "http://127.0.0.1:9/v1", "fake-model", timeout=0.8)
    down = json.loads(
        _cli(runner, "judges", "run", "life", "--judge", "gpt", "--json", "--pairs", "all")
    )
    assert (down["requested"], down["failed"]) == (6, 6)
    with app.app_context():
        run = run_service.require_run(testsets.require_by_name("life"), "A")
        result = live.score_run(run, live.ScoreOptions(labels="machine:gpt"))
    assert (result.mean_ndcg, result.queries_in_mean) == (None, 0)


def test_ask_again_replaces_answers_under_the_same_prompt(
    app: Flask, runner: FlaskCliRunner, llm: FakeLLM, judged: int, monkeypatch
) -> None:
    # A parsing mistake: every answer is read as having no grade.
    with monkeypatch.context() as patch:
        patch.setattr("ndcg_labeler.services.judges.runner.parse_answer_grade", lambda *a: None)
        first = json.loads(_cli(runner, "judges", "run", "life", "--judge", "gpt", "--json"))
    assert (first["requested"], first["labeled"], first["unparsed"], first["failed"]) == (
        6,
        0,
        5,
        1,
    )
    # A plain run skips what was answered under this prompt: the unparsed stay unparsed.
    again = json.loads(_cli(runner, "judges", "run", "life", "--judge", "gpt", "--json"))
    assert (again["labeled"], again["unparsed"], again["failed"]) == (0, 0, 1)
    fixed = json.loads(
        _cli(
            runner, "judges", "ask-again", "life", "--judge", "gpt", "--pairs", "unparsed", "--json"
        )
    )
    assert fixed["prompt_version"] == first["prompt_version"]
    assert (fixed["requested"], fixed["labeled"], fixed["unparsed"], fixed["failed"]) == (
        5,
        4,
        1,
        0,
    )
    llm.slow_seconds = 0.0  # the endpoint got faster: the failure is asked again
    default = json.loads(_cli(runner, "judges", "ask-again", "life", "--judge", "gpt", "--json"))
    assert (default["requested"], default["labeled"], default["unparsed"]) == (2, 1, 1)
    assert _statuses(app) == {
        "d1": ("labeled", 3),
        "d2": ("labeled", 1),
        "d3": ("unparsed", None),
        "d4": ("labeled", 2),
        "d5": ("labeled", 2),
        "d6": ("labeled", 0),  # the fake's answer without a marker of its own
    }
    bad = runner.invoke(args=["judges", "ask-again", "life", "--judge", "gpt", "--pairs", "x"])
    assert bad.exit_code == 2


def test_the_browser_archives_asks_again_and_deletes(
    app: Flask, as_admin, runner: FlaskCliRunner, judged: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:  # a parsing mistake, as above
        patch.setattr("ndcg_labeler.services.judges.runner.parse_answer_grade", lambda *a: None)
        _cli(runner, "judges", "run", "life", "--judge", "gpt", "--pairs", "all")
    with app.app_context():
        judge_id = judges.require_judge("gpt").id
    url = f"/test-sets/{judged}/judges/{judge_id}"
    assert "Ask again" in as_admin.get(url).get_data(as_text=True)
    asked = as_admin.post(f"{url}/again", data={"again-which": "unparsed"})
    assert asked.status_code == 302 and asked.headers["Location"].startswith("/jobs/")
    with app.app_context():
        run_job(int(asked.headers["Location"].rsplit("/", 1)[1]))
    assert _statuses(app)["d1"] == ("labeled", 3)

    assert as_admin.post(f"/judges/{judge_id}/archive").status_code == 302
    listing = as_admin.get(f"/test-sets/{judged}/judges/").get_data(as_text=True)
    assert "Archived (hidden from the label lists, answers kept)" in listing
    assert as_admin.post(f"/judges/{judge_id}/restore").status_code == 302
    confirm = as_admin.get(f"/judges/{judge_id}/delete").get_data(as_text=True)
    assert "<strong>6</strong> machine labels" in confirm
    wrong = as_admin.post(f"/judges/{judge_id}/delete", data={"confirm": "gp"})
    assert wrong.status_code == 200 and "type gpt exactly" in wrong.get_data(as_text=True)
    assert len(_statuses(app)) == 6
    done = as_admin.post(f"/judges/{judge_id}/delete", data={"confirm": "gpt"})
    assert done.status_code == 302
    assert _statuses(app) == {}
    assert [a for a, _ in _audit(app)] == ["judge.archive", "judge.restore", "judge.delete"]
