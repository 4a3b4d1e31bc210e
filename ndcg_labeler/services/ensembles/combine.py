"""Ensembles of judges: two or more judges asked about the same pairs, combined per pair.

An ensemble is a Judge row with `ensemble` set ({"members": [ids], "combine": ...}); it has no
endpoint of its own. Running it (judges.run_judge) asks its members pair by pair, each
resuming as a judge does, within one budget, then writes the ensemble's own answer of every
pair a member answered: the median (of an even count, the lower middle grade) or the majority
(a tie goes to the lower grade) of the members' readable grades, with `spread` = highest −
lowest member grade, the pair's uncertainty. Its answer is readable only when every member's
is; otherwise it is "failed" (a member has no answer) or "unparsed". Its prompt version is the
sha256 of the combine rule and each member's version, so a member's new prompt makes a new
ensemble version. Its own rows carry no tokens: its members' rows do (and their cost).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import unparsed_reason
from ndcg_labeler.models import Judge, MachineJudgment, TestSet, User
from ndcg_labeler.services import ServiceError, audit, judges, outbound, url_name
from ndcg_labeler.services.ensembles.fewshot import judge_shots, store_version

COMBINE = ("median", "majority")
ENSEMBLE_MODEL = "ensemble"
_BATCH = 500


def is_ensemble(judge: Judge) -> bool:
    """True for an ensemble of judges."""
    return bool(judge.ensemble)


def definition(judge: Judge) -> dict[str, Any]:
    """{"members": [judge ids], "combine": rule} of an ensemble."""
    found: dict[str, Any] = json.loads(judge.ensemble)
    return found


def members_of(judge: Judge) -> list[Judge]:
    """The ensemble's member judges, in the order they were given."""
    ids = definition(judge)["members"]
    found = {j.id: j for j in db.session.scalars(sa.select(Judge).where(Judge.id.in_(ids)))}
    return [found[i] for i in ids if i in found]


def key_warnings(judge: Judge) -> list[str]:
    """A warning for each API-key variable the judge (an ensemble: its members) names that is
    not set in this process: its requests would go without a key (outbound.unset_secrets)."""
    team = members_of(judge) if is_ensemble(judge) else [judge]
    return outbound.unset_secrets(member.api_key_env or "" for member in team)


def add_ensemble(
    name: str, members: Sequence[str], combine: str = "median", actor: User | None = None
) -> Judge:
    """Define an ensemble of two or more existing judges (not ensembles); audited."""
    name = url_name("an ensemble", name, judges.MAX_NAME)
    if db.session.scalar(sa.select(Judge.id).where(Judge.name == name)) is not None:
        raise ServiceError(f"a judge named '{name}' already exists")
    if combine not in COMBINE:
        raise ServiceError(f"combine by {' or '.join(COMBINE)}, not '{combine}'")
    names = list(dict.fromkeys(m.strip() for m in members if m.strip()))
    if len(names) < 2:
        raise ServiceError("an ensemble needs two or more different member judges")
    found = {j.name: j for j in db.session.scalars(sa.select(Judge).where(Judge.name.in_(names)))}
    for member in names:
        if member not in found:
            raise ServiceError(f"unknown judge '{member}'")
        if is_ensemble(found[member]):
            raise ServiceError(f"'{member}' is an ensemble: members must be single judges")
    spec = {"members": [found[m].id for m in names], "combine": combine}
    judge = Judge(
        name=name,
        base_url="",
        model=ENSEMBLE_MODEL,
        max_tokens=1,
        concurrency=1,
        ensemble=json.dumps(spec),
    )
    db.session.add(judge)
    db.session.flush()
    audit.record(
        actor, "judge.create", "judge", judge.id, name=name, members=names, combine=combine
    )
    db.session.commit()
    return judge


def combine_grades(grades: Sequence[int], rule: str) -> int:
    """The members' grades combined: the (lower) median, or the majority (ties: lower)."""
    ordered = sorted(grades)
    if rule == "majority":
        counts = Counter(ordered)
        top = max(counts.values())
        return min(g for g, n in counts.items() if n == top)
    return ordered[(len(ordered) - 1) // 2]


def ensemble_version(test_set: TestSet, judge: Judge) -> tuple[str, dict[int, str]]:
    """The ensemble's prompt version on the test set, and each member's (by judge id)."""
    spec = definition(judge)
    shas = {m.id: judge_shots(test_set, m).sha for m in members_of(judge)}
    text = json.dumps(
        {"ensemble": spec["combine"], "members": [[i, shas.get(i, "")] for i in spec["members"]]}
    )
    return store_version(text), shas


def _member_answers(
    test_set: TestSet, shas: dict[int, str]
) -> dict[tuple[int, int], dict[int, MachineJudgment]]:
    """{pair: {member id: its answer under its current version}}."""
    out: dict[tuple[int, int], dict[int, MachineJudgment]] = {}
    for member_id, sha in shas.items():
        rows = db.session.scalars(
            sa.select(MachineJudgment).where(
                MachineJudgment.test_set_id == test_set.id,
                MachineJudgment.judge_id == member_id,
                MachineJudgment.prompt_sha256 == sha,
            )
        )
        for row in rows:
            out.setdefault((row.query_id, row.chunk_id), {})[member_id] = row
    return out


def _row(
    judge: Judge,
    names: dict[int, str],
    answers: dict[int, MachineJudgment],
    rule: str,
    scale_max: int,
) -> dict[str, Any]:
    """The ensemble's answer on one pair from its members' answers."""
    grades = [a.grade for a in answers.values() if a.status == "labeled" and a.grade is not None]
    missing = [names[i] for i in names if i not in answers or answers[i].status == "failed"]
    text = "\n\n".join(
        f"[{names[i]}: {'—' if answers[i].grade is None else answers[i].grade}] "
        f"{answers[i].raw_answer or answers[i].error}"
        for i in names
        if i in answers
    )
    row: dict[str, Any] = {"raw_answer": text, "error": "", "grade": None, "spread": None}
    if len(grades) == len(names):
        row.update(
            status="labeled",
            grade=combine_grades(grades, rule),
            spread=max(grades) - min(grades),
        )
    elif missing:
        row.update(status="failed", error="no answer from " + ", ".join(missing))
    else:
        # As a single judge's unparsed answer says why: each unreadable member's reason (read
        # afresh from its answer when it was stored before reasons were).
        unread = [answers[i] for i in names if answers[i].status != "labeled"]
        reasons = [
            f"{names[a.judge_id]} ({a.error or unparsed_reason(a.raw_answer or '', scale_max)})"
            for a in unread
        ]
        row.update(status="unparsed", error="no readable grade from " + "; ".join(reasons))
    return row


def combine_answers(test_set: TestSet, judge: Judge) -> dict[str, int]:
    """(Re)write the ensemble's answer of every pair a member answered; counts by status."""
    sha, shas = ensemble_version(test_set, judge)
    names = {m.id: m.name for m in members_of(judge)}
    rule = definition(judge)["combine"]
    stored = {
        (r.query_id, r.chunk_id): r
        for r in db.session.scalars(
            sa.select(MachineJudgment).where(
                MachineJudgment.test_set_id == test_set.id,
                MachineJudgment.judge_id == judge.id,
                MachineJudgment.prompt_sha256 == sha,
            )
        )
    }
    counts = {"labeled": 0, "unparsed": 0, "failed": 0}
    stale: list[int] = []
    fresh: list[dict[str, Any]] = []
    for (q, c), answers in sorted(_member_answers(test_set, shas).items()):
        row = _row(judge, names, answers, rule, test_set.scale_max)
        counts[row["status"]] += 1
        old = stored.get((q, c))
        if old is not None and (
            old.status,
            old.grade,
            old.spread,
            old.raw_answer,
            old.error,
        ) == (row["status"], row["grade"], row["spread"], row["raw_answer"], row["error"]):
            continue
        if old is not None:
            stale.append(old.id)  # replaced, not updated: a new id tells live scoring
        fresh.append(
            {
                **row,
                "test_set_id": test_set.id,
                "query_id": q,
                "chunk_id": c,
                "judge_id": judge.id,
                "prompt_sha256": sha,
                "model": ENSEMBLE_MODEL,
                "latency_ms": 0,
                "prompt_tokens": 0,  # the members' rows carry the tokens (and the cost)
                "completion_tokens": 0,
            }
        )
    table = MachineJudgment.__table__
    for start in range(0, len(stale), _BATCH):
        db.session.execute(sa.delete(table).where(table.c.id.in_(stale[start : start + _BATCH])))
    for start in range(0, len(fresh), _BATCH):
        db.session.execute(sa.insert(table), fresh[start : start + _BATCH])
    db.session.commit()
    return counts


def judge_version(test_set: TestSet, judge: Judge) -> str:
    """The prompt version a judge answers under on the test set (few-shot and ensembles
    included): the one its calibration and resumed runs use."""
    if is_ensemble(judge):
        return ensemble_version(test_set, judge)[0]
    return judge_shots(test_set, judge).sha
