"""Retriever runs of a test set: listing, lookup by id or name, uploaders, deletion."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sqlalchemy as sa
from sqlalchemy.orm import selectinload

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, RunQuery, SeriesSetting, TestSet, User
from ndcg_labeler.services import ServiceError, audit, live, resolve_ref
from ndcg_labeler.services._db import bump_versions, transaction


def delete_run(
    run: Run, actor: User | None = None, confirm: Callable[[], None] | None = None
) -> None:
    """Delete a run and its ranked lists (one transaction, audited as done by `actor`); a run
    pinned as a series' baseline is refused until it is unpinned. `confirm` (the CLI's
    question) is called once the delete would be accepted, and may abort it by raising."""
    test_set_id, run_id = run.test_set_id, run.id
    pinned_by = db.session.scalars(
        sa.select(SeriesSetting.name).where(SeriesSetting.baseline_run_id == run_id)
    ).first()
    if pinned_by is not None:
        # The foreign key would unpin it quietly, and the next scheduled run would be gated
        # against a baseline nobody chose.
        test_set = db.session.get(TestSet, test_set_id)
        set_name = test_set.name if test_set is not None else test_set_id
        raise ServiceError(
            f"run '{run.name}' is the pinned baseline of series '{pinned_by}': pin another run "
            f"or unpin it first (the series page, or flask run series '{set_name}' "
            f"'{pinned_by}' --unpin), then delete it"
        )
    if confirm is not None:
        confirm()
    with transaction():
        audit.record(
            actor,
            "run.delete",
            "run",
            run_id,
            test_set_id=test_set_id,
            name=run.name,
            filename=run.filename,
            sha256=run.sha256,
        )
        db.session.execute(sa.delete(RunQuery).where(RunQuery.run_id == run_id))
        db.session.delete(run)
        bump_versions(test_set_id, runs=True)
    live.forget_run(run_id)


def list_runs(test_set: TestSet) -> list[Run]:
    """The test set's runs, oldest first."""
    stmt = (
        sa.select(Run)
        .where(Run.test_set_id == test_set.id)
        .order_by(Run.uploaded_at, Run.id)
        .options(selectinload(Run.uploader))  # listings show who uploaded: one query, not N
    )
    return list(db.session.scalars(stmt))


def get_run(test_set: TestSet, ref: int | str) -> Run | None:
    """The test set's run with this id (an int), or named by `ref` (a str, read by
    services.resolve_ref: `id:N`, `name:X`, or a plain name or id; a ServiceError when a plain
    reference is one run's name and another's id)."""
    if isinstance(ref, int):
        run = db.session.get(Run, ref)
        return run if run is not None and run.test_set_id == test_set.id else None

    def by_name(name: str) -> Run | None:
        stmt = sa.select(Run).where(Run.test_set_id == test_set.id, Run.name == name)
        return db.session.scalar(stmt)

    return resolve_ref("run", ref, lambda ident: get_run(test_set, ident), by_name)


def require_run(test_set: TestSet, name: str) -> Run:
    """The run of the test set with this name, or a ServiceError naming it (for the CLI)."""
    run = db.session.scalar(sa.select(Run).where(Run.test_set_id == test_set.id, Run.name == name))
    if run is None:
        raise ServiceError(f"test set '{test_set.name}' has no run named '{name}'")
    return run


def uploaders(runs: Sequence[Run]) -> dict[int, str]:
    """Run id -> username of the uploader (runs uploaded from the CLI have none)."""
    return {run.id: run.uploader.username for run in runs if run.uploader is not None}
