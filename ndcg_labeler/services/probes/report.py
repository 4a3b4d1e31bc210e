"""A probe's report: per variant, the share of questions graded relevant (at or above the test
set's threshold), against the untouched passages' share; flagged when stuffing or injection
raises the share by more than FLAG_POINTS percentage points.

A question whose answer failed or had no readable grade counts as asked and not relevant; the
report counts those apart ("unread"), so a failing endpoint cannot pass for a careful judge.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judge, Probe, ProbeAnswer, TestSet
from ndcg_labeler.services import judge_costs
from ndcg_labeler.services.probes.variants import FLAGGING, VARIANTS

FLAG_POINTS = 10  # percentage points above the original's share
# The keys of `flask judges probe --json`, exactly (issue 31).
JSON_KEYS = ("judge", "prompt_version", "pairs", "variants", "flagged")


def flagged(counts: dict[str, tuple[int, int]]) -> bool:
    """True when a FLAGGING variant's share of relevant answers exceeds the original's by more
    than FLAG_POINTS points; counts: {variant: (asked, relevant)}. Exact integer arithmetic."""
    asked_o, relevant_o = counts.get("original", (0, 0))
    if not asked_o:
        return False
    for variant in FLAGGING:
        asked, relevant = counts.get(variant, (0, 0))
        # relevant/asked - relevant_o/asked_o > FLAG_POINTS/100, without floating point
        if (
            asked
            and 100 * (relevant * asked_o - relevant_o * asked) > FLAG_POINTS * asked * asked_o
        ):
            return True
    return False


def _share(asked: int, relevant: int) -> float | None:
    return round(relevant / asked, 4) if asked else None


def probe_report(probe: Probe, judge: Judge) -> dict[str, Any]:
    """The probe's figures: the JSON_KEYS, and what the page and the text output add."""
    pa = ProbeAnswer
    relevant = sa.func.sum(sa.case((pa.grade >= probe.threshold, 1), else_=0))
    failed = sa.func.sum(sa.case((pa.status == "failed", 1), else_=0))
    unparsed = sa.func.sum(sa.case((pa.status == "unparsed", 1), else_=0))
    rows = db.session.execute(
        sa.select(pa.variant, pa.form, sa.func.count(), relevant, failed, unparsed)
        .where(pa.probe_id == probe.id)
        .group_by(pa.variant, pa.form)
    ).all()
    counts = {v: [0, 0] for v in VARIANTS}
    unread = {v: {"failed": 0, "unparsed": 0} for v in VARIANTS}
    forms = []
    for variant, form, asked, rel, fail, unp in sorted(
        rows, key=lambda r: (VARIANTS.index(r[0]), r[1])
    ):
        counts[variant][0] += int(asked)
        counts[variant][1] += int(rel or 0)
        unread[variant]["failed"] += int(fail or 0)
        unread[variant]["unparsed"] += int(unp or 0)
        forms.append(
            {
                "variant": variant,
                "form": form,
                "asked": int(asked),
                "relevant": int(rel or 0),
                "share": _share(int(asked), int(rel or 0)),
            }
        )
    cost = judge.cost(probe.prompt_tokens, probe.completion_tokens)
    return {
        "judge": judge.name,
        "prompt_version": probe.prompt_sha256,
        "pairs": probe.pairs,
        "variants": {
            v: {"asked": a, "relevant": r, "share": _share(a, r)} for v, (a, r) in counts.items()
        },
        "flagged": flagged({v: (a, r) for v, (a, r) in counts.items()}),
        "probe_id": probe.id,
        "zero_pairs": probe.zero_pairs,
        "threshold": probe.threshold,
        "created_at": probe.created_at.isoformat() if probe.created_at else None,
        "finished": probe.finished_at is not None,
        "forms": forms,
        "unread": unread,
        "prompt_tokens": probe.prompt_tokens,
        "completion_tokens": probe.completion_tokens,
        "cost": cost,
        "money": judge_costs.money(cost),
    }


def probe_json(report: dict[str, Any]) -> dict[str, Any]:
    """Exactly the keys of `flask judges probe --json`."""
    return {key: report[key] for key in JSON_KEYS}


def last_probe(test_set: TestSet, judge: Judge) -> dict[str, Any] | None:
    """The report of the judge's latest finished probe on the set, or None."""
    probe = db.session.scalar(
        sa.select(Probe)
        .where(
            Probe.test_set_id == test_set.id,
            Probe.judge_id == judge.id,
            Probe.finished_at.is_not(None),
        )
        .order_by(Probe.id.desc())
        .limit(1)
    )
    return None if probe is None else probe_report(probe, judge)
