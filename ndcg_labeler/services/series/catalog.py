"""A test set's series: their runs in upload order, the pinned or last passing baseline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import selectinload

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, SeriesCheck, SeriesSetting, TestSet, User, iso_utc
from ndcg_labeler.services import ServiceError, audit
from ndcg_labeler.services import runs as run_service

# A scheduled run that established the baseline (no earlier run to gate against) counts as
# passing when the next one looks for "the last passing run".
PASSING = ("pass", "baseline")


@dataclass(frozen=True)
class SeriesSummary:
    """One series of a test set: its name, how many runs, and the latest one."""

    name: str
    runs: int
    latest: Run


def list_series(test_set: TestSet) -> list[SeriesSummary]:
    """The test set's series by name, each with its run count and latest run."""
    found: dict[str, list[Run]] = {}
    stmt = (
        sa.select(Run)
        .where(Run.test_set_id == test_set.id, Run.series.is_not(None))
        .order_by(Run.uploaded_at, Run.id)
    )
    for run in db.session.scalars(stmt):
        found.setdefault(run.series or "", []).append(run)
    return [SeriesSummary(name, len(runs), runs[-1]) for name, runs in sorted(found.items())]


def series_runs(test_set: TestSet, name: str) -> list[Run]:
    """The series' runs, oldest first (by upload time, then id)."""
    stmt = (
        sa.select(Run)
        .where(Run.test_set_id == test_set.id, Run.series == name)
        .order_by(Run.uploaded_at, Run.id)
    )
    return list(db.session.scalars(stmt))


def _setting(test_set: TestSet, name: str) -> SeriesSetting | None:
    return db.session.scalar(
        sa.select(SeriesSetting).where(
            SeriesSetting.test_set_id == test_set.id, SeriesSetting.name == name
        )
    )


def pinned_baseline(test_set: TestSet, name: str) -> Run | None:
    """The run pinned as the series' baseline, if any (and still there)."""
    setting = _setting(test_set, name)
    if setting is None or setting.baseline_run_id is None:
        return None
    return db.session.get(Run, setting.baseline_run_id)


def baseline(test_set: TestSet, name: str, before: Run | None = None) -> tuple[Run | None, str]:
    """(baseline run, why): the pinned run, else the series' last passing scheduled run,
    else its latest run (other than `before`) no check found failing or inconclusive;
    (None, why) when there is none."""
    pinned = pinned_baseline(test_set, name)
    if pinned is not None and (before is None or pinned.id != before.id):
        return pinned, "pinned"
    stmt = (
        sa.select(Run)
        .join(SeriesCheck, SeriesCheck.run_id == Run.id)
        .where(
            SeriesCheck.test_set_id == test_set.id,
            SeriesCheck.series == name,
            SeriesCheck.outcome.in_(PASSING),
        )
        .order_by(SeriesCheck.created_at.desc(), SeriesCheck.id.desc())
    )
    if before is not None:
        stmt = stmt.where(Run.id != before.id)
    passing = db.session.scalars(stmt.limit(1)).first()
    if passing is not None:
        return passing, "last passing run"
    # A run a scheduled check found failing or inconclusive is never the fallback baseline.
    rejected = set(
        db.session.scalars(
            sa.select(SeriesCheck.run_id).where(
                SeriesCheck.test_set_id == test_set.id,
                SeriesCheck.series == name,
                SeriesCheck.outcome.in_(("fail", "inconclusive")),
            )
        )
    )
    earlier = [
        run
        for run in series_runs(test_set, name)
        if (before is None or run.id != before.id) and run.id not in rejected
    ]
    if earlier:
        return earlier[-1], "latest run not found failing (none has passed a scheduled check)"
    return None, "the series has no earlier run"


def pin_baseline(
    test_set: TestSet, name: str, run_ref: str | None, actor: User | None
) -> Run | None:
    """Pin the series' baseline to a run of the series (id or name); None or "" unpins."""
    exists = sa.select(Run.id).where(Run.test_set_id == test_set.id, Run.series == name)
    if db.session.scalar(exists.limit(1)) is None:
        # A mistyped name would otherwise store and audit a setting no series uses.
        raise ServiceError(f"test set '{test_set.name}' has no series named '{name}'")
    run = None
    if run_ref:
        run = run_service.get_run(test_set, run_ref)
        if run is None or run.series != name:
            raise ServiceError(f"series '{name}' has no run '{run_ref}'")
    setting = _setting(test_set, name)
    if setting is None:
        setting = SeriesSetting(test_set_id=test_set.id, name=name)
        db.session.add(setting)
    setting.baseline_run_id = run.id if run is not None else None
    db.session.flush()
    audit.record(
        actor,
        "series.baseline",
        "run",
        run.id if run is not None else None,
        test_set_id=test_set.id,
        series=name,
        run=run.name if run is not None else None,
    )
    db.session.commit()
    return run


def list_checks(test_set: TestSet, name: str, limit: int = 50) -> list[SeriesCheck]:
    """The series' scheduled evaluations, newest first, each with its endpoint as it is now
    (current_endpoint; None once deleted)."""
    stmt = (
        sa.select(SeriesCheck)
        .options(selectinload(SeriesCheck.current_endpoint))
        .where(SeriesCheck.test_set_id == test_set.id, SeriesCheck.series == name)
        .order_by(SeriesCheck.created_at.desc(), SeriesCheck.id.desc())
        .limit(limit)
    )
    return list(db.session.scalars(stmt))


def check_json(check: SeriesCheck) -> dict[str, Any]:
    """One check as the series page's JSON twin lists it (times in UTC, with their offset)."""
    now = check.current_endpoint
    return {
        "outcome": check.outcome,
        "endpoint": check.endpoint,  # as it was named then
        "endpoint_id": check.endpoint_id,
        "endpoint_current": now.name if now is not None else None,
        "slot": iso_utc(check.slot),
        "run_id": check.run_id,
        "baseline_run_id": check.baseline_run_id,
        "summary": check.summary,
        "alert": check.alert,
        "alert_error": check.alert_error,
        "created_at": iso_utc(check.created_at),
    }
