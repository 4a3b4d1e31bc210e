"""A judge's life in the browser: a parsing mistake asked again, calibration figures withheld
on a small sample (with the minimums stated), archived out of the Labels list, then deleted."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import MachineJudgment
from ndcg_labeler.services import judges
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.imports import ImportFile, import_files
from ndcg_labeler.services.jobs.runner import run_job
from tests.browser.live import LiveServer, log_in
from tests.factory import build_test_set, trec
from tests.judges.fake_llm import FakeLLM

CORPUS = {"d1": "ANSWER3 refunds", "d2": "ANSWER1 hours", "d3": "ANSWER2 forms", "d4": "GARBAGE"}
POOL = {"q1": ["d1", "d2"], "q2": ["d3", "d4"]}
QRELS = [("q1", "d1", 3), ("q1", "d2", 0), ("q2", "d3", 2)]


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    server = FakeLLM().start()
    yield server
    server.stop()


def _answers(app) -> dict[str, int]:
    with app.app_context():
        rows = db.session.execute(
            sa.select(MachineJudgment.status, sa.func.count()).group_by(MachineJudgment.status)
        )
        found = {status: int(n) for status, n in rows}
        db.session.remove()
    return found


@pytest.mark.browser
def test_ask_again_withhold_archive_and_delete(
    live_server: LiveServer, browser_page, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    with app.app_context():
        test_set = build_test_set("Judged", {"q1": "refunds", "q2": "forms"}, QRELS, CORPUS)
        import_files(test_set, pool=ImportFile(io.BytesIO(trec(POOL)), "pool.trec"))
        run_service.upload_run(test_set, io.BytesIO(trec(POOL)), "a.trec", "A", None)
        judge = judges.add_judge("gpt", llm.url, "fake-model", timeout=2)
        with monkeypatch.context() as patch:  # a parsing mistake: no answer is read
            patch.setattr("ndcg_labeler.services.judges.runner.parse_answer_grade", lambda *a: None)
            judges.run_judge(test_set, judge, "all")
        test_set_id, judge_id, run_id = test_set.id, judge.id, run_service.list_runs(test_set)[0].id
        db.session.remove()
    assert _answers(app) == {"unparsed": 4}
    log_in(page, base)

    # Ask again about the unparsed answers, under the same prompt version.
    page.goto(f"{base}/test-sets/{test_set_id}/judges/{judge_id}")
    page.select_option("#again-which", "unparsed")
    page.click("input[type=submit][value='Ask again']")
    page.wait_for_url(re.compile(r".*/jobs/\d+$"))
    with app.app_context():
        run_job(int(page.url.rsplit("/", 1)[1]))  # what the job worker does
    assert _answers(app) == {"labeled": 3, "unparsed": 1}

    # Three compared pairs and one run of two queries: every figure is withheld, and why.
    page.goto(f"{base}/test-sets/{test_set_id}/judges/{judge_id}")
    minimums = page.locator("#cal-minimums").inner_text()
    assert "κ and the mean difference need at least 10 compared pairs" in minimums
    figures = page.locator("dl.figures").inner_text()
    assert "withheld: from 3 compared pairs; at least 10 are needed" in figures
    assert page.locator("dl.figures dd").nth(4).inner_text() == "—"  # one run: no τ at all
    row = page.locator("table", has_text="under human and under machine labels").inner_text()
    assert row.count("withheld: not enough labels: 2 defined queries") == 2

    # Archived: gone from the Labels list of the score views, its answers kept.
    page.goto(f"{base}/test-sets/{test_set_id}/dashboard/runs/{run_id}")
    assert page.locator("option[value='machine:gpt']").count() == 1
    page.goto(f"{base}/judges/")
    page.click("button:has-text('Archive gpt')")
    page.wait_for_selector(".flash-success")
    assert "Judge gpt archived: its answers are kept." in page.locator(".flashes").inner_text()
    page.goto(f"{base}/test-sets/{test_set_id}/dashboard/runs/{run_id}")
    assert page.locator("option[value='machine:gpt']").count() == 0
    assert _answers(app) == {"labeled": 3, "unparsed": 1}

    # Deleted, after typing its name.
    page.goto(f"{base}/judges/")
    page.click("a:has-text('Delete…')")
    assert "<strong>4</strong>" in page.locator("main").inner_html()
    page.fill("#confirm", "gp")
    page.click("input[type=submit]")
    assert "type gpt exactly" in page.locator(".error-summary").inner_text()
    assert _answers(app) == {"labeled": 3, "unparsed": 1}
    page.fill("#confirm", "gpt")
    page.click("input[type=submit]")
    page.wait_for_url(re.compile(r".*/judges/$"))
    assert "Judge gpt deleted with its 4 machine labels." in page.locator(".flashes").inner_text()
    assert _answers(app) == {}
