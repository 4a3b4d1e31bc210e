"""Retention: archive a run by keeping its top N entries per query and its stored scores.

An old run's deep entries are most of its bytes (~5 per entry: formats.run_storage);
archiving keeps the first N of each ranked list (already in trec_eval order) and leaves the
run's stored per-query scores alone. Every measure cut at k <= N needs only those N entries,
so the run still lists, compares and gates at such cutoffs, re-scored exactly after new
grades; deeper cutoffs and the whole-list measures (AP, reciprocal rank) are refused or shown
as unavailable.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import decode_ranked, encode_ranked
from ndcg_labeler.models import Run, RunQuery, User, utcnow
from ndcg_labeler.services import ServiceError, audit, live
from ndcg_labeler.services._db import bump_versions, transaction

# Lists and the overview show NDCG@10: an archived run keeps at least that much.
MIN_KEEP = 10
_BATCH = 500


def check_keep(run: Run, keep: int) -> int:
    """`keep` if the run can be archived to it, else a ServiceError saying why not."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < MIN_KEEP:
        raise ServiceError(
            f"keep must be a whole number of at least {MIN_KEEP} (lists show NDCG@{MIN_KEEP})"
        )
    if run.kept_depth is not None and run.kept_depth <= keep:
        raise ServiceError(
            f"run '{run.name}' is already archived to its top {run.kept_depth} entries per query"
        )
    if keep >= run.depth:
        # Nothing would be dropped, yet the run would lose its whole-list measures (AP, RR).
        raise ServiceError(_drops_nothing(run, keep, run.depth))
    return keep


def _drops_nothing(run: Run, keep: int, longest: int) -> str:
    return (
        f"run '{run.name}' has at most {longest} entries per query: keeping its top {keep} "
        f"would drop nothing (keep must be less than {longest})"
    )


def archive_run(
    run: Run, keep: int, actor: User | None = None, confirm: Callable[[], None] | None = None
) -> int:
    """Keep the run's top `keep` entries per query, drop the rest; returns entries dropped.

    One transaction with its audit entry. The run's default scores are brought up to date
    first, while the whole lists are still there, so that its stored figures stay complete.
    `confirm` (the CLI's prompt) is called once `keep` is known to be acceptable, before
    anything changes: a depth that would be refused is never asked about.
    """
    check_keep(run, keep)
    if confirm is not None:
        confirm()
    live.score_run(run)  # stores its default figures if they were never computed
    table = RunQuery.__table__
    before = int(run.num_entries)
    kept_total = longest = 0
    with transaction():
        last_id = 0
        while True:
            rows = db.session.execute(
                sa.select(table.c.id, table.c.docids, table.c.scores)
                .where(table.c.run_id == run.id, table.c.id > last_id)
                .order_by(table.c.id)
                .limit(_BATCH)
            ).all()
            if not rows:
                break
            last_id = rows[-1][0]
            changes = []
            for row_id, docids, scores in rows:
                text, values = decode_ranked(docids, scores)
                parts = text.split(b"\n", keep)
                count = min(len(parts), keep) if text else 0
                longest = max(longest, count)
                kept_total += count
                if text and len(parts) > keep:
                    kept_docids, kept_scores = encode_ranked(
                        b"\n".join(parts[:keep]), values[:keep]
                    )
                    changes.append({"row_id": row_id, "docids": kept_docids, "scores": kept_scores})
            if changes:
                db.session.execute(
                    table.update()
                    .where(table.c.id == sa.bindparam("row_id"))
                    .values(docids=sa.bindparam("docids"), scores=sa.bindparam("scores")),
                    changes,
                )
        if kept_total == before:  # every list was already this short: roll back, drop nothing
            raise ServiceError(_drops_nothing(run, keep, longest))
        run.kept_depth = keep
        run.archived_at = utcnow()
        run.num_entries = kept_total
        audit.record(
            actor,
            "run.archive",
            "run",
            run.id,
            test_set_id=run.test_set_id,
            name=run.name,
            keep=keep,
            entries_before=before,
            entries_after=kept_total,
        )
        bump_versions(run.test_set_id, runs=True)
    return before - kept_total
