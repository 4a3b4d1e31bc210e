"""Calibration of a judge against people: always computed from the stored labels.

Human side: the consensus scoring uses (the test set's aggregation policy, adjudications
included). Machine side: the judge's labels under its current prompt version. Compared on the
pairs both graded; then each run's mean NDCG@k under human and under machine labels, and
Kendall's tau between the two orders of the runs.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judge, MachineJudgment, Pair, Query, TestSet
from ndcg_labeler.scoring import calibrate, kendall_tau
from ndcg_labeler.services import counted, live, runs
from ndcg_labeler.services.judges import guards

# Published reference points, shown next to our figures.
REFERENCES = (
    "Thomas et al. (2023) report Cohen's κ ≈ 0.64 between their best LLM prompt and TREC "
    "assessors; UMBRELA reports high system-ranking correlation (Kendall's τ) on TREC DL 2019–2023."
)


def judge_agreement(test_set: TestSet, judge: Judge, k: int = 10) -> dict[str, Any]:
    """The calibration figures (what `flask judges agreement --json` prints); a figure below
    its stated minimum (guards.py) is null, and kept with its reason under "withheld"."""
    from ndcg_labeler.services import ensembles  # it builds on this package: imported late

    sha = ensembles.judge_version(test_set, judge)
    db.session.commit()
    human = live.scoring_qrels(test_set)
    machine = ensembles.machine_labels(test_set, judge, sha)
    paired = sorted(
        (key, human[key[0]][key[1]], grade)
        for key, grade in machine.items()
        if key[1] in human.get(key[0], {})
    )
    found_pairs = calibrate(
        [h for _, h, _ in paired],
        [m for _, _, m in paired],
        test_set.scale_max,
        test_set.relevance_threshold,
    )
    rows = []
    for run in runs.list_runs(test_set):
        people = live.score_run(run, live.ScoreOptions(k=k))
        by_judge = live.score_run(run, live.ScoreOptions(k=k, labels=f"machine:{judge.name}"))
        rows.append(guards.run_row(run.name, people, by_judge, k))
    human_means, machine_means, enough = guards.tau_runs(rows)
    found: dict[str, Any] = {
        "judge": judge.name,
        "prompt_version": sha,
        "pairs": found_pairs.pairs,
        "kappa_quadratic": found_pairs.kappa_quadratic,
        "kappa_binary": found_pairs.kappa_binary,
        "confusion": found_pairs.confusion,
        "mean_difference": found_pairs.mean_difference,
        "runs": rows,
        "kendall_tau": kendall_tau(human_means, machine_means),
        "k": k,
        "minimums": guards.minimums(),
        "withheld": {},
    }
    guards.guard_pairs(found)
    if not enough and found["kendall_tau"] is not None:
        guards.withhold(
            found,
            "kendall_tau",
            f"from {counted(len(human_means), 'run')} with both means; at least "
            f"{guards.MIN_RUNS} runs "
            "whose two means are shown are needed",
        )
    return found


def labels_of(test_set: TestSet, judge: Judge) -> sa.Select[Any]:
    """Every answer of the judge on the test set, newest first (for the labels table)."""
    mj = MachineJudgment
    return (
        sa.select(
            Query.qid,
            Chunk.docid,
            mj.status,
            mj.grade,
            mj.raw_answer,
            mj.error,
            mj.latency_ms,
            mj.prompt_tokens + mj.completion_tokens,
            mj.prompt_sha256,
            mj.created_at,
        )
        .join(Query, Query.id == mj.query_id)
        .join(Chunk, Chunk.id == mj.chunk_id)
        .where(mj.test_set_id == test_set.id, mj.judge_id == judge.id)
        .order_by(mj.id.desc())
    )


def suggestions(test_set: TestSet, pair: Pair) -> list[tuple[str, int]]:
    """(judge name, grade) of each judge's latest readable grade of the pair, for annotators;
    empty unless the test set shows machine suggestions (off by default: they anchor people).
    Archived judges suggest nothing."""
    if not test_set.show_machine_suggestions:
        return []
    rows = db.session.execute(
        sa.select(Judge.name, MachineJudgment.grade)
        .join(Judge, Judge.id == MachineJudgment.judge_id)
        .where(
            MachineJudgment.query_id == pair.query_id,
            MachineJudgment.chunk_id == pair.chunk_id,
            MachineJudgment.status == "labeled",
            Judge.archived_at.is_(None),
        )
        .order_by(MachineJudgment.id)
    )
    latest = {name: int(grade) for name, grade in rows}  # later answers replace earlier ones
    return sorted(latest.items())
