"""Scheduled evaluations: an endpoint's schedule, claiming the slots that are due (each once),
and one evaluation: fetch a run into the series, gate it against the baseline, alert.

A slot is claimed by moving the endpoint's schedule_last_at forward in one conditional UPDATE,
so two workers (or a worker and `flask jobs tick`) never both run it; a worker that was down
finds only the latest missed slot due, so a missed schedule runs once, not once per slot.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import RetrieverEndpoint, Run, SeriesCheck, TestSet, User, aware, utcnow
from ndcg_labeler.services import ServiceError, audit, gate, noun
from ndcg_labeler.services import endpoints as endpoints_service
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.series.alerts import post_alert
from ndcg_labeler.services.series.catalog import baseline
from ndcg_labeler.services.series.schedule import latest_slot, next_slot, parse_schedule

ALERT_OUTCOMES = ("fail", "inconclusive", "error")


@dataclass(frozen=True)
class Due:
    """A claimed slot: the endpoint to fetch from and the minute it was scheduled for."""

    test_set_id: int
    endpoint: str
    series: str
    k: int
    slot: datetime


def set_schedule(
    test_set: TestSet,
    endpoint_name: str,
    schedule: str,
    series: str,
    k: int = endpoints_service.DEFAULT_K,
    actor: User | None = None,
    now: datetime | None = None,
) -> RetrieverEndpoint:
    """Give the endpoint a schedule feeding `series` (schedule "" removes it). Slots before
    now are treated as done: a new schedule first runs at its next slot."""
    endpoint = endpoints_service.require_endpoint(test_set, endpoint_name)
    text = ""
    if schedule.strip():
        parsed = parse_schedule(schedule)
        text = parsed.text
        series = run_service.clean_series(series) or ""
        if not series:
            raise ServiceError("a schedule needs the series its runs join (--series)")
        if not 1 <= k <= run_service.MAX_DEPTH:
            raise ServiceError(f"k must be a whole number from 1 to {run_service.MAX_DEPTH}")
        if text != endpoint.schedule:
            # Only a new schedule skips the slots before now; re-saving keeps a due slot due.
            endpoint.schedule_last_at = latest_slot(parsed, now or utcnow())
    endpoint.schedule = text
    endpoint.schedule_series = series if text else ""
    endpoint.schedule_k = k
    audit.record(
        actor,
        "series.schedule",
        "endpoint",
        endpoint.id,
        test_set_id=test_set.id,
        endpoint=endpoint.name,
        schedule=text,
        series=endpoint.schedule_series,
    )
    db.session.commit()
    return endpoint


def next_run(endpoint: RetrieverEndpoint, now: datetime | None = None) -> datetime | None:
    """When the endpoint's schedule next fires (None: no schedule, or one that never fires)."""
    if not endpoint.schedule:
        return None
    try:
        parsed = parse_schedule(endpoint.schedule)
    except ServiceError:
        return None  # stored before a stricter parser: claim_due skips it too
    return next_slot(parsed, now or utcnow())


def claim_due(
    now: datetime | None = None, on_claim: Callable[[Due], None] | None = None
) -> list[Due]:
    """Claim every endpoint's latest slot at or before `now` that is not yet claimed.

    `on_claim` (which must commit) runs in the claim's transaction, while the claim's UPDATE
    still holds the endpoint's row: the job it queues is committed with the claim, so a rename
    or delete of the endpoint (which takes that row's lock first) finds the job; a failure in
    it leaves the slot unclaimed for the next tick."""
    now = now or utcnow()
    stmt = sa.select(RetrieverEndpoint).where(RetrieverEndpoint.schedule != "")
    claimed: list[Due] = []
    for endpoint in list(db.session.scalars(stmt)):
        try:
            slot = latest_slot(parse_schedule(endpoint.schedule), now)
        except ServiceError:
            continue  # a schedule stored before a stricter parser: never fires, never breaks
        last = aware(endpoint.schedule_last_at)
        if slot is None or (last is not None and slot <= last):
            continue
        table = RetrieverEndpoint.__table__
        condition = table.c.schedule_last_at.is_(None)
        if last is not None:
            condition = table.c.schedule_last_at == endpoint.schedule_last_at
        won = db.session.execute(
            sa.update(table)
            .where(table.c.id == endpoint.id, condition)
            .values(schedule_last_at=slot)
        ).rowcount
        if not won:
            db.session.commit()
            continue
        due = Due(
            endpoint.test_set_id,
            endpoint.name,
            endpoint.schedule_series,
            endpoint.schedule_k,
            slot,
        )
        try:
            if on_claim is not None:
                on_claim(due)
            db.session.commit()
        except Exception:
            db.session.rollback()
            raise
        claimed.append(due)
    return claimed


def _run_name(test_set: TestSet, series: str, slot: datetime) -> str:
    suffix = f"-{slot:%Y-%m-%d-%H%M}"
    # A long series name is cut, never the slot: it is what tells the runs apart. Four
    # characters stay free for "-N" when the name is taken.
    keep = run_service.MAX_NAME - 4 - len(suffix)
    base = run_service.clean_name(series[:keep].rstrip() + suffix)
    name, n = base, 1
    while run_service.name_taken(test_set, name):
        n += 1
        name = f"{base}-{n}"
    return name


def _message(check: SeriesCheck, run: Run | None, base: Run | None, detail: str) -> str:
    head = f"ndcg-labeler: series '{check.series}' ({check.endpoint}):"
    if run is None:
        return f"{head} {check.outcome.upper()}, no run was stored. {detail}".strip()
    against = f" against '{base.name}'" if base is not None else ""
    return f"{head} run '{run.name}'{against} is {check.outcome.upper()}. {detail}".strip()


def _gate_summary(result: Any) -> str:
    parts = []
    for m in result.measures:
        if m.baseline is None or m.candidate is None or m.delta is None:
            parts.append(f"{m.measure} {m.outcome}: {m.note}")
            continue
        p = "—" if m.p_adjusted is None else f"{m.p_adjusted:.3g}"
        parts.append(
            f"{m.measure} {m.baseline:.4f} → {m.candidate:.4f} (Δ {m.delta:+.4f}, "
            f"p {p}, {m.queries} {noun(m.queries, 'query', 'queries')}): {m.outcome}"
        )
    return "; ".join(parts)


def evaluate(
    test_set: TestSet,
    due: Due,
    progress: Callable[[str, int, int, int], None] | None = None,
    own: Sequence[str] = (),
) -> SeriesCheck:
    """Fetch a run for the slot into the series, gate it, record the check, alert on fail,
    inconclusive or error. A fetch that fails is recorded (outcome error) and alerted."""
    check = SeriesCheck(
        test_set_id=test_set.id, series=due.series, endpoint=due.endpoint, slot=due.slot
    )
    run: Run | None = None
    base: Run | None = None
    try:
        endpoint = endpoints_service.require_endpoint(test_set, due.endpoint)
        check.endpoint_id = endpoint.id
        run, _ = endpoints_service.fetch_run(
            test_set,
            endpoint,
            _run_name(test_set, due.series, due.slot),
            k=due.k,
            progress=progress,
            own=own,
            series=due.series,
        )
    except ServiceError as exc:
        db.session.rollback()
        # A scheduled fetch has no one to accept a partial run: the next slot fetches again.
        detail = exc.what if isinstance(exc, endpoints_service.FetchFailed) else str(exc)
        check.outcome, check.summary = "error", f"The fetch failed: {detail.rstrip('.')}."
    else:
        assert run is not None
        check.run_id = run.id
        base, why = baseline(test_set, due.series, before=run)
        if base is None:
            check.outcome = "baseline"
            check.summary = "The series' first run: it is the baseline of the next one."
        else:
            check.baseline_run_id = base.id
            try:
                result = gate.run_gate(test_set, base, run)
            except ServiceError as exc:
                # The run is stored; only the decision is missing: say so, and alert.
                check.outcome, check.summary = "error", f"the gate could not decide: {exc}"
            else:
                check.outcome = result.outcome
                check.result = result.to_json()
                check.summary = f"Baseline: {why}. " + _gate_summary(result)
    if check.outcome in ALERT_OUTCOMES:
        check.alert, check.alert_error = post_alert(_message(check, run, base, check.summary), own)
    db.session.add(check)
    db.session.commit()
    return check
