"""The shared data of the ensemble tests: two fake "models" behind one OpenAI-compatible fake
server on 127.0.0.1, and a test set whose grades by people and by each model are listed."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import sqlalchemy as sa
from werkzeug.wrappers import Response

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Query, TestSet, User
from ndcg_labeler.services import judges, labeling
from ndcg_labeler.services.imports import ImportFile, import_files
from tests.factory import build_test_set, grade, trec
from tests.judges.fake_llm import FakeLLM

# (qid, docid, people's grade or None, alpha's grade, beta's grade)
PAIRS = [
    ("q1", "d11", 3, 3, 3),
    ("q1", "d12", 0, 0, 2),
    ("q2", "d21", 2, 2, 2),
    ("q2", "d22", 1, 1, 0),
    ("q3", "d31", 3, 3, 1),
    ("q3", "d32", 0, 0, 0),
    ("q4", "d41", 1, 1, 1),
    ("q4", "d42", 2, 2, 3),
    ("q5", "d51", 0, 3, 3),
    ("q5", "d52", 2, 3, 2),
    ("q6", "d61", 2, 2, 0),
    ("q6", "d62", 1, 1, 1),
    ("q7", "d71", None, 0, 3),
    ("q7", "d72", None, 1, 2),
    ("q7", "d73", None, 2, 2),
]
QUERIES = {f"q{n}": f"topic{n} question" for n in range(1, 8)}
NOTE = "states the refund period outright"


def quadratic_kappa(a: list[int], b: list[int], top: int = 3) -> float:
    """Cohen's κ with quadratic weights, from its definition (1 − Σ w·O / Σ w·E)."""
    n, cells = len(a), range(top + 1)
    observed = {
        (i, j): sum(1 for x, y in zip(a, b, strict=True) if (x, y) == (i, j))
        for i in cells
        for j in cells
    }
    expected = {(i, j): a.count(i) * b.count(j) / n for i in cells for j in cells}
    weight = {(i, j): (i - j) ** 2 for i in cells for j in cells}
    return 1 - sum(weight[c] * observed[c] for c in weight) / sum(
        weight[c] * expected[c] for c in weight
    )


class TwoModels(FakeLLM):
    """A passage marked G<a><b>: model "alpha" answers a, any other model b."""

    def answer(self, passage: str, body: dict[str, Any]) -> Response:
        found = re.search(r"G(\d)(\d)", passage)
        if found is None:
            return super().answer(passage, body)
        value = found.group(1) if body["model"] == "alpha" else found.group(2)
        text = f"{body['model']} reasons about the passage.\n##final score: {value}"
        payload = {
            "choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 5},
        }
        return Response(json.dumps(payload), content_type="application/json")


def build_ens_set(url: str) -> int:
    """The "ens" test set (ann, who must exist, graded the first twelve pairs; d31 with NOTE)
    and judges alpha and beta at `url`; inside an app context. Returns its id."""
    corpus = {d: f"G{a}{b} passage of {d}" for _, d, _, a, b in PAIRS}
    test_set = build_test_set("ens", QUERIES, corpus=corpus)
    pool: dict[str, list[str]] = {}
    for q, d, *_ in PAIRS:
        pool.setdefault(q, []).append(d)
    import_files(test_set, pool=ImportFile(io.BytesIO(trec(pool)), "pool.trec"))
    for q, d, human, _, _ in PAIRS:
        if human is not None:
            grade(test_set, q, d, human, "ann")
    _note(test_set, "q3", "d31", NOTE)
    judges.add_judge("alpha", url, "alpha", timeout=5, concurrency=2)
    judges.add_judge("beta", url, "beta", timeout=5, concurrency=2)
    return test_set.id


def _note(test_set: TestSet, qid: str, docid: str, note: str) -> None:
    query = db.session.scalar(
        sa.select(Query).where(Query.test_set_id == test_set.id, Query.qid == qid)
    )
    chunk = db.session.scalar(
        sa.select(Chunk).where(Chunk.test_set_id == test_set.id, Chunk.docid == docid)
    )
    ann = db.session.scalar(sa.select(User).where(User.username == "ann"))
    assert query is not None and chunk is not None and ann is not None
    labeling.save_judgment(test_set, query, chunk, ann, grade=3, note=note)
