"""Progress, and so a Cancel, per answer: a slow batch still beats, and stops when told."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import MachineJudgment, TestSet
from ndcg_labeler.services import Cancelled, judges, probes
from ndcg_labeler.services.imports import ImportFile, import_files
from tests.factory import build_test_set, trec
from tests.judges.fake_llm import FakeLLM

CORPUS = {f"d{i}": f"DELAYED passage {i}" for i in range(1, 7)}
POOL = {"q1": ["d1", "d2", "d3"], "q2": ["d4", "d5", "d6"]}


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    server = FakeLLM(delay_seconds=0.05).start()
    yield server
    server.stop()


def _set_and_judge(llm: FakeLLM) -> TestSet:
    test_set = build_test_set("slow", {"q1": "a", "q2": "b"}, [("q1", "d1", 0)], corpus=CORPUS)
    import_files(test_set, pool=ImportFile(io.BytesIO(trec(POOL)), "pool.trec"))
    judges.add_judge("one", llm.url, "m", concurrency=1)
    return test_set


def test_a_cancel_in_the_middle_of_a_batch_stops_it_and_keeps_what_came(
    app: Flask, llm: FakeLLM
) -> None:
    with app.app_context():
        test_set = _set_and_judge(llm)
        judge = judges.require_judge("one")
        seen: list[int] = []

        def progress(done: int, total: int, tokens: dict[str, int]) -> None:
            seen.append(done)
            if done == 2:
                raise Cancelled("cancelled by a user")

        with pytest.raises(Cancelled):
            judges.run_judge(test_set, judge, "all", progress)
        assert seen == [1, 2]  # per answer, not once at the end of the batch of 6
        assert len(llm.requests) <= 3  # the rest never asked (one may have been in flight)
        stored = db.session.scalar(sa.select(sa.func.count()).select_from(MachineJudgment))
        assert stored == 2
        again = judges.run_judge(test_set, judge, "all")
        assert (again.skipped, again.labeled) == (2, 4)


def test_a_probe_reports_progress_per_answer(app: Flask, llm: FakeLLM) -> None:
    with app.app_context():
        test_set = _set_and_judge(llm)
        seen: list[int] = []
        probes.run_probe(
            test_set, judges.require_judge("one"), 1, lambda d, t, tokens: seen.append(d)
        )
        assert seen[:9] == list(range(1, 10))  # nine questions of one pair, each reported
