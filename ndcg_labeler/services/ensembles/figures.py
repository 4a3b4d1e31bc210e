"""What the calibration page shows beside a judge's figures: κ per prompt version (zero-shot
and few-shot side by side), an ensemble's κ beside each member's, its per-pair uncertainty,
and the worst disagreements with people, with both answers and the judge's reasoning."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import (
    Chunk,
    Judge,
    Judgment,
    MachineJudgment,
    PromptVersion,
    Query,
    TestSet,
)
from ndcg_labeler.scoring import calibrate
from ndcg_labeler.services import corrections, counted, dashboard, live
from ndcg_labeler.services.ensembles.combine import ensemble_version, is_ensemble, members_of
from ndcg_labeler.services.ensembles.fewshot import few_shot_of, judge_shots

WORST = 10  # disagreements listed

Qrels = dict[str, dict[str, int]]


def machine_labels(test_set: TestSet, judge: Judge, sha: str) -> dict[tuple[str, str], int]:
    """{(qid, docid): grade} of the judge's readable answers under one prompt version."""
    rows = db.session.execute(
        sa.select(Query.qid, Chunk.docid, MachineJudgment.grade)
        .join(Query, Query.id == MachineJudgment.query_id)
        .join(Chunk, Chunk.id == MachineJudgment.chunk_id)
        .where(
            MachineJudgment.test_set_id == test_set.id,
            MachineJudgment.judge_id == judge.id,
            MachineJudgment.prompt_sha256 == sha,
            MachineJudgment.status == "labeled",
        )
    )
    return {(qid, docid): int(grade) for qid, docid, grade in rows}


def pair_figures(test_set: TestSet, judge: Judge, sha: str, human: Qrels) -> dict[str, Any]:
    """κ (quadratic, binary) and the mean difference of one judge's version against people,
    withheld below the calibration minimum as on the judge's own figures."""
    machine = machine_labels(test_set, judge, sha)
    paired = [(human[q][d], g) for (q, d), g in sorted(machine.items()) if d in human.get(q, {})]
    found_pairs = calibrate(
        [h for h, _ in paired],
        [m for _, m in paired],
        test_set.scale_max,
        test_set.relevance_threshold,
    )
    found: dict[str, Any] = {
        "judge": judge.name,
        "prompt_version": sha,
        "pairs": found_pairs.pairs,
        "kappa_quadratic": found_pairs.kappa_quadratic,
        "kappa_binary": found_pairs.kappa_binary,
        "mean_difference": found_pairs.mean_difference,
        "withheld": {},
    }
    # The judge's own figures' rule (judges' guards): too few compared pairs, no κ.
    if found["pairs"] < dashboard.MIN_INTERVAL_QUERIES:
        reason = (
            f"from {counted(found['pairs'], 'compared pair')}; at least "
            f"{dashboard.MIN_INTERVAL_QUERIES} are needed"
        )
        for key in ("kappa_quadratic", "kappa_binary", "mean_difference"):
            if found[key] is not None:
                found["withheld"][key] = {"value": found[key], "reason": reason}
                found[key] = None
    return found


def version_table(
    test_set: TestSet, judge: Judge, current: str, human: Qrels
) -> list[dict[str, Any]]:
    """Every prompt version of the judge with answers on the test set, current first; each
    with its few-shot K (0: zero-shot) and its figures."""
    rows = db.session.execute(
        sa.select(
            MachineJudgment.prompt_sha256, PromptVersion.template, sa.func.min(MachineJudgment.id)
        )
        .join(PromptVersion, PromptVersion.sha256 == MachineJudgment.prompt_sha256)
        .where(MachineJudgment.test_set_id == test_set.id, MachineJudgment.judge_id == judge.id)
        .group_by(MachineJudgment.prompt_sha256, PromptVersion.template)
        .order_by(sa.func.min(MachineJudgment.id))
    )
    out = []
    for sha, text, _ in rows:
        found = pair_figures(test_set, judge, sha, human)
        found["few_shot"] = few_shot_of(text or "")
        found["current"] = sha == current
        out.append(found)
    out.sort(key=lambda row: not row["current"])
    return out


def member_table(test_set: TestSet, judge: Judge, human: Qrels) -> list[dict[str, Any]]:
    """An ensemble's figures, then each member's under its current version ([] for a judge)."""
    if not is_ensemble(judge):
        return []
    sha, shas = ensemble_version(test_set, judge)
    rows = [{**pair_figures(test_set, judge, sha, human), "role": "ensemble"}]
    for member in members_of(judge):
        rows.append({**pair_figures(test_set, member, shas[member.id], human), "role": "member"})
    return rows


def uncertainty(test_set: TestSet, judge: Judge, sha: str) -> dict[str, Any]:
    """How often an ensemble's members disagree: pairs by spread (grade steps)."""
    rows = db.session.execute(
        sa.select(MachineJudgment.spread, sa.func.count())
        .where(
            MachineJudgment.test_set_id == test_set.id,
            MachineJudgment.judge_id == judge.id,
            MachineJudgment.prompt_sha256 == sha,
            MachineJudgment.status == "labeled",
        )
        .group_by(MachineJudgment.spread)
        .order_by(MachineJudgment.spread)
    )
    by_spread = {int(s or 0): int(n) for s, n in rows}
    total = sum(by_spread.values())
    return {
        "pairs": total,
        "by_spread": by_spread,
        "disagreeing": sum(n for s, n in by_spread.items() if s > 0),
    }


def worst_disagreements(
    test_set: TestSet, judge: Judge, sha: str, human: Qrels, limit: int = WORST
) -> list[dict[str, Any]]:
    """The pairs where the judge is furthest from people (at least one step), largest first,
    ties by qid then docid: both grades, the people's notes and the judge's answer."""
    mj = MachineJudgment
    rows = db.session.execute(
        sa.select(
            Query.id,
            Chunk.id,
            Query.qid,
            Chunk.docid,
            Query.text,
            mj.grade,
            mj.raw_answer,
            mj.spread,
        )
        .join(Query, Query.id == mj.query_id)
        .join(Chunk, Chunk.id == mj.chunk_id)
        .where(
            mj.test_set_id == test_set.id,
            mj.judge_id == judge.id,
            mj.prompt_sha256 == sha,
            mj.status == "labeled",
        )
    )
    found = []
    for query_id, chunk_id, qid, docid, text, grade, raw, spread in rows:
        people = human.get(qid, {}).get(docid)
        if people is None or people == grade:
            continue
        found.append(
            {
                "query_id": query_id,
                "chunk_id": chunk_id,
                "qid": qid,
                "docid": docid,
                "query": text,
                "human_grade": people,
                "machine_grade": int(grade),
                "steps": abs(int(grade) - people),
                "reasoning": raw or "",
                "spread": spread,
            }
        )
    found.sort(key=lambda row: (-row["steps"], row["qid"].encode(), row["docid"].encode()))
    found = found[:limit]
    notes: dict[tuple[int, int], list[str]] = {}
    if found:
        keys = {(row["query_id"], row["chunk_id"]) for row in found}
        for q, c, note in db.session.execute(
            sa.select(Judgment.query_id, Judgment.chunk_id, Judgment.note).where(
                Judgment.test_set_id == test_set.id,
                Judgment.query_id.in_({q for q, _ in keys}),
                Judgment.note != "",
            )
        ):
            if (q, c) in keys:
                notes.setdefault((q, c), []).append(note)
    for row in found:
        row["notes"] = notes.get((row["query_id"], row["chunk_id"]), [])
    return found


def calibration_extras(test_set: TestSet, judge: Judge) -> dict[str, Any]:
    """Everything the calibration page adds for items 2–4 of issue 31, in one dict."""
    human = live.scoring_qrels(test_set)
    if is_ensemble(judge):
        sha = ensemble_version(test_set, judge)[0]
        few_shot = 0
    else:
        sha = judge_shots(test_set, judge).sha
        few_shot = judge.few_shot
    db.session.commit()
    return {
        "ensemble": is_ensemble(judge),
        "members": member_table(test_set, judge, human),
        "uncertainty": uncertainty(test_set, judge, sha) if is_ensemble(judge) else None,
        "few_shot": few_shot,
        "versions": version_table(test_set, judge, sha, human),
        "worst": worst_disagreements(test_set, judge, sha, human),
        "open_conflicts": corrections.open_count(test_set),
    }
