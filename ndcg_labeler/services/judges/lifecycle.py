"""A judge's life after its first run: archive it, restore it, delete it, ask it again.

Archiving hides a judge from the label lists (score views' label sources, annotators'
suggestions) and keeps every answer, so scores that used it can still be reproduced
(`labels=machine:NAME` keeps working). Deleting removes the judge and its machine labels in one
audited transaction. Asking again re-asks chosen pairs under the current prompt version,
replacing their stored answers (run_judge with `again:STATUSES`).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judge, MachineJudgment, RunScore, User, utcnow
from ndcg_labeler.services import ServiceError, audit
from ndcg_labeler.services._db import transaction

# What "ask again" may choose: answers by status, under the judge's current prompt version.
ANSWER_STATUSES = ("labeled", "unparsed", "failed")
AGAIN_CHOICES = {
    "all": ANSWER_STATUSES,
    "failed": ("failed",),
    "unparsed": ("unparsed",),
    "failed,unparsed": ("failed", "unparsed"),
}


def again_statuses(which: str) -> tuple[str, ...]:
    """The answer statuses an `again:...` choice re-asks, or a ServiceError naming the choices."""
    chosen = which.removeprefix("again:")
    if chosen not in AGAIN_CHOICES:
        raise ServiceError(f"ask again: choose {', '.join(AGAIN_CHOICES)}, not '{chosen}'")
    return AGAIN_CHOICES[chosen]


def answered_pairs(
    test_set_id: int, judge: Judge, sha: str, statuses: tuple[str, ...]
) -> list[tuple[int, int]]:
    """(query id, chunk id) the judge answered on the test set under prompt `sha` with one of
    `statuses`, in the order they were first answered."""
    rows = db.session.execute(
        sa.select(MachineJudgment.query_id, MachineJudgment.chunk_id)
        .where(
            MachineJudgment.test_set_id == test_set_id,
            MachineJudgment.judge_id == judge.id,
            MachineJudgment.prompt_sha256 == sha,
            MachineJudgment.status.in_(statuses),
        )
        .order_by(MachineJudgment.id)
    )
    return [(int(q), int(c)) for q, c in rows]


def list_archived() -> list[Judge]:
    """The archived judges, by name."""
    stmt = sa.select(Judge).where(Judge.archived_at.is_not(None)).order_by(Judge.name)
    return list(db.session.scalars(stmt))


def archive_judge(judge: Judge, actor: User | None = None) -> bool:
    """Hide the judge from the label lists, keeping its answers (audited); False when it was
    archived already."""
    if judge.archived_at is not None:
        return False
    with transaction():
        judge.archived_at = utcnow()
        audit.record(actor, "judge.archive", "judge", judge.id, name=judge.name)
    return True


def restore_judge(judge: Judge, actor: User | None = None) -> bool:
    """Show an archived judge in the label lists again (audited); False when it was not
    archived."""
    if judge.archived_at is None:
        return False
    with transaction():
        judge.archived_at = None
        audit.record(actor, "judge.restore", "judge", judge.id, name=judge.name)
    return True


def label_count(judge: Judge) -> int:
    """How many answers (machine labels) the judge has stored, on every test set."""
    stmt = sa.select(sa.func.count()).where(MachineJudgment.judge_id == judge.id)
    return int(db.session.scalar(stmt) or 0)


def delete_judge(judge: Judge, actor: User | None = None) -> dict[str, Any]:
    """Delete the judge and every machine label it gave, in one audited transaction; what
    went (the `flask judges delete --json` object)."""
    labels = label_count(judge)
    found = {"judge": judge.name, "deleted": True, "machine_labels": labels}
    with transaction():
        audit.record(actor, "judge.delete", "judge", judge.id, name=judge.name, labels=labels)
        db.session.execute(sa.delete(MachineJudgment).where(MachineJudgment.judge_id == judge.id))
        # Stored scores under its labels would be read again by a new judge of the same name.
        for source in ("machine", "fill"):
            pattern = f"%|{source}:{_like(judge.name)}@%"
            db.session.execute(sa.delete(RunScore).where(RunScore.settings.like(pattern, "\\")))
        db.session.delete(judge)
    return found


def _like(text: str) -> str:
    """`text` as a literal inside a LIKE pattern (escape character: backslash)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
