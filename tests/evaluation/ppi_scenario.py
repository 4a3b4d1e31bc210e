"""The PPI scenario: a judge, its audit sample, and NDCG@1 values worked out by hand.

Every query has two chunks, a and b, exactly one of them relevant under each label source. Run
A ranks a first, run B ranks b first, so NDCG@1 is A: 1 when a is relevant, else 0 (some
relevant chunk is judged), and B: 1 − A's. Twenty queries per replicate:

    queries    audited  human Y (A)  machine Ŷ (A)
    1–6        yes      1            1
    7–8        yes      0            1
    9–10       yes      1            0
    11–12      yes      0            0
    13–16      no       —            1
    17–20      no       —            0

People's grades (imported qrels) exist for the audited queries only; they are the only pool
pairs, so the sample (every query, seed 1) has exactly those queries audited. With r
replicates, n = 12r audited and N = 8r others: mean Y = mean Ŷ (audited) = 2/3, cov(Y, Ŷ) =
1/2 − 4/9 = 1/18, var(all Ŷ, n − 1) = 20r·(3/5)(2/5)/(20r − 1), 1 + n/N = 5/2, so

    λ̂ = (1/18) / (5/2 · 4.8r/(20r − 1)) = (20r − 1) / (216r)
    θ̂_A = λ̂·½ + 2/3 − λ̂·⅔ = 2/3 − λ̂/6
    se_A² = λ̂²·(1/4)/(8r) + (2/9 + λ̂²·2/9 − 2λ̂/18)/(12r)

and B − A per query is 1 − 2·(A's value) under both sources: the same λ̂, θ̂ = 1 − 2θ̂_A and
se = 2·se_A. The machine-only mean of A is 12r/20r = 3/5, the human mean of its audited
queries 2/3.

The interval is about the set's own mean (scoring/ppi.py): W = (N/M)·Y − λ̂·Ŷ = (2/5)·Y − λ̂·Ŷ
takes, per replicate, 2/5 − λ̂ six times, −λ̂ twice, 2/5 twice and 0 twice; s²_W over n − 2
(λ̂ fitted), se_set² = s²_W · (1/(12r) + 1/(8r)), half-width t_{0.975, 12r − 2} · se_set (scipy);
for B − A, W is a constant minus 2·W: twice the half-width.
"""

from __future__ import annotations

import io
import math

import sqlalchemy as sa
from flask import Flask
from scipy import stats

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judge, MachineJudgment, PromptVersion, Query
from ndcg_labeler.services import audit_samples
from ndcg_labeler.services import runs as run_service
from tests.factory import build_test_set, trec

# (audited, Y, Ŷ) of the twenty queries of one replicate, in order.
PATTERN = (
    [(True, 1, 1)] * 6
    + [(True, 0, 1)] * 2
    + [(True, 1, 0)] * 2
    + [(True, 0, 0)] * 2
    + [(False, None, 1)] * 4
    + [(False, None, 0)] * 4
)


def expected(r: int) -> dict[str, float]:
    """λ̂, θ̂, se and the interval's half-width of run A, and the same of B − A, with r
    replicates (the formulas above)."""
    lam = (20 * r - 1) / (216 * r)
    theta = 2 / 3 - lam / 6
    se = math.sqrt(lam**2 / 4 / (8 * r) + (2 / 9 + lam**2 * 2 / 9 - 2 * lam / 18) / (12 * r))
    total = r * (6 * (0.4 - lam) - 2 * lam + 2 * 0.4)
    squares = r * (6 * (0.4 - lam) ** 2 + 2 * lam**2 + 2 * 0.16)
    s2 = (squares - total**2 / (12 * r)) / (12 * r - 2)
    half = float(stats.t.ppf(0.975, 12 * r - 2)) * math.sqrt(s2 * (1 / (12 * r) + 1 / (8 * r)))
    return {
        "lam": lam,
        "theta": theta,
        "se": se,
        "half": half,
        "d_theta": 1 - 2 * theta,
        "d_se": 2 * se,
        "d_half": 2 * half,
    }


def build_ppi_set(
    app: Flask,
    name: str,
    r: int = 1,
    audited_limit: int | None = None,
    pattern: list[tuple[bool, int | None, int]] | None = None,
) -> None:
    """The test set `name` with runs A and B, judge gpt's answers and its drawn sample.

    audited_limit: give people's grades to only the first that many audited queries;
    pattern: (audited, Y, Ŷ) of run A per query of a replicate, PATTERN unless given."""
    rows = [(f"p{j}{i:02d}", *row) for j in range(r) for i, row in enumerate(pattern or PATTERN, 1)]
    human = [row for row in rows if row[1]][:audited_limit]
    qrels = [(q, d, int((d == "a") == bool(y))) for q, _, y, _ in human for d in ("a", "b")]
    with app.app_context():
        test_set = build_test_set(name, {q: f"question {q}" for q, *_ in rows}, qrels)
        a = trec({q: ["a", "b"] for q, *_ in rows})
        b = trec({q: ["b", "a"] for q, *_ in rows})
        run_service.upload_run(test_set, io.BytesIO(a), "a.trec", "A", None)
        run_service.upload_run(test_set, io.BytesIO(b), "b.trec", "B", None)
        judge = db.session.scalar(sa.select(Judge).where(Judge.name == "gpt"))
        if judge is None:
            judge = Judge(name="gpt", base_url="http://127.0.0.1:9/v1", model="m", max_tokens=64)
            db.session.add_all([judge, PromptVersion(sha256="0" * 64, template="")])
            db.session.flush()
        ids = dict(
            db.session.execute(
                sa.select(Query.qid, Query.id).where(Query.test_set_id == test_set.id)
            ).all()
        )
        chunks = dict(
            db.session.execute(
                sa.select(Chunk.docid, Chunk.id).where(Chunk.test_set_id == test_set.id)
            ).all()
        )
        db.session.add_all(
            MachineJudgment(
                test_set_id=test_set.id,
                query_id=ids[q],
                chunk_id=chunks[d],
                judge_id=judge.id,
                prompt_sha256="0" * 64,
                model="m",
                status="labeled",
                grade=int((d == "a") == bool(yhat)),
            )
            for q, _, _, yhat in rows
            for d in ("a", "b")
        )
        db.session.commit()
        audit_samples.draw_audit(test_set, judge, len(rows), seed=1)
        db.session.remove()
