"""The checklist: what a test set holds, what is missing, and the one thing to do next.

Computed from stored counters and a few counts, so it is cheap on every page view; the pool
preview (how many pairs pooling the runs' top DEPTH would add) is computed only when pooling is
the next step and the runs are small enough to preview within a page view (`plan_limit`, the
pairs the runs could offer; larger pools are counted on the pooling page).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judge, MachineJudgment, Run, TestSet, User
from ndcg_labeler.services import judges, labeling, pooling, runs, testsets

DEPTH = 10  # pooling depth the checklist offers (the pooling page's default)


@dataclass(frozen=True)
class Step:
    """One line of the checklist: done or not, and the state in words."""

    key: str  # queries, corpus, runs, pool, labels, judges
    label: str
    done: bool
    state: str
    optional: bool = False


@dataclass(frozen=True)
class Action:
    """The next thing to do: `key` names it (the page links it), `text` says it."""

    key: str  # import, upload_run, pool, label, compare, dashboard
    text: str
    admin_only: bool
    run_ids: tuple[int, ...] = ()  # the runs a "pool" action pools
    depth: int = DEPTH


@dataclass(frozen=True)
class Checklist:
    """The steps, the next action for this person, when that person cannot act what is
    missing, and who can fix things: the active admins (in every view, the admins' own too)."""

    steps: list[Step]
    action: Action | None
    blocked: str | None = None
    admins: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """What `flask testset status --json` prints."""
        return {
            "steps": [
                {"key": s.key, "done": s.done, "state": s.state, "optional": s.optional}
                for s in self.steps
            ],
            "next_action": None
            if self.action is None
            else {"key": self.action.key, "text": self.action.text},
            "blocked": self.blocked,
            "admins": self.admins,
        }


def _plural(n: int, word: str) -> str:
    """'1 run', '2 runs', '2 queries'."""
    if n == 1:
        return f"1 {word}"
    return f"{n} {word[:-1]}ies" if word.endswith("y") else f"{n} {word}s"


def _judges_step(test_set: TestSet) -> Step:
    """Machine judges in use, and how many answered on this test set (optional)."""
    in_use = len(judges.list_judges())
    answered = int(
        db.session.scalar(
            sa.select(sa.func.count(sa.distinct(MachineJudgment.judge_id)))
            .join(Judge, Judge.id == MachineJudgment.judge_id)
            .where(MachineJudgment.test_set_id == test_set.id, Judge.archived_at.is_(None))
        )
        or 0
    )
    state = f"{_plural(in_use, 'judge')} defined, {answered} answered here (optional)"
    return Step("judges", "Machine judges", answered > 0, state, optional=True)


def _steps(summary: Any, run_list: list[Run], test_set: TestSet) -> list[Step]:
    with_text = summary.chunks - summary.chunks_without_text
    pairs, graded = summary.pairs, summary.judged_pairs
    return [
        Step("queries", "Queries", summary.queries > 0, _plural(summary.queries, "query")),
        Step(
            "corpus",
            "Corpus",
            with_text > 0,
            f"{_plural(with_text, 'chunk')} with text"
            + (f", {summary.chunks_without_text} without" if summary.chunks_without_text else ""),
        ),
        Step("runs", "Runs", bool(run_list), _plural(len(run_list), "run")),
        Step("pool", "Pool", pairs > 0, f"{_plural(pairs, 'pair')} to judge"),
        Step(
            "labels",
            "Labels",
            pairs > 0 and graded >= pairs,
            (f"{graded} of {pairs} graded" if pairs else "nothing to grade yet")
            + (
                f"; +{summary.graded_outside_pool} graded outside the pool"
                if summary.graded_outside_pool
                else ""
            ),
        ),
        _judges_step(test_set),
    ]


def _pool_action(test_set: TestSet, run_list: list[Run], plan_limit: int) -> Action | None:
    """ "Pool the top 10 of your 2 runs: 46 pairs", or None when pooling would add nothing."""
    ids = tuple(run.id for run in run_list)
    text = f"Pool the top {DEPTH} of your {_plural(len(run_list), 'run')}"
    if sum(run.num_queries for run in run_list) * DEPTH > plan_limit:
        return Action("pool", text, True, ids)  # too large to preview here: the page counts
    plan = pooling.plan_pool(test_set, run_list, DEPTH)
    if plan.to_add == 0:
        return None
    return Action("pool", f"{text}: {_plural(plan.to_add, 'pair')}", True, ids)


def _admin_action(
    test_set: TestSet, summary: Any, run_list: list[Run], plan_limit: int
) -> Action | None:
    """The first step not done, as an action for an admin."""
    if summary.queries == 0:
        return Action("import", "Import the queries and the corpus", True)
    if summary.chunks - summary.chunks_without_text == 0:
        return Action("import", "Import the corpus (the text of the chunks)", True)
    left = summary.pairs - summary.judged_pairs
    if summary.pairs and left > 0:
        return Action(
            "label", f"Start labeling: {left} of {summary.pairs} pairs have no grade", False
        )
    if not run_list:
        if summary.pairs:
            return Action("upload_run", "Upload a run to score it against the labels", True)
        return Action("upload_run", "Upload a run (or import a pool or qrels)", True)
    pool = _pool_action(test_set, run_list, plan_limit)
    if pool is not None:
        return pool
    if len(run_list) >= 2:
        return Action("compare", f"Compare your {len(run_list)} runs", False)
    return Action("dashboard", "Read the run's scores on the dashboard", False)


def _missing(summary: Any, run_list: list[Run]) -> str:
    """Why there is nothing to label, in words."""
    if summary.queries == 0:
        return "this test set has no queries yet"
    if run_list:
        return (
            f"{_plural(len(run_list), 'run')} {'is' if len(run_list) == 1 else 'are'} stored, "
            "but their top chunks have not been pooled for labeling yet"
        )
    return "no pool of pairs to judge has been imported and no run has been uploaded yet"


def _admin_names() -> list[str]:
    """The active admins' usernames: who can fix what an annotator is missing."""
    stmt = (
        sa.select(User.username)
        .where(User.role == "admin", User.active.is_(True))
        .order_by(User.username)
    )
    return list(db.session.scalars(stmt))


def checklist(test_set: TestSet, user: User | None, plan_limit: int = 20_000) -> Checklist:
    """The test set's checklist and the next action for `user` (admins, and None for the
    command line: the first step not done; annotators: labeling when it is open to them, else
    what is missing and who can fix it)."""
    summary = testsets.summary(test_set)
    run_list = runs.list_runs(test_set)
    steps = _steps(summary, run_list, test_set)
    # Listed in every view: an empty list would read as "this instance has no admin".
    admins = _admin_names()
    if user is None or user.is_admin:
        action = _admin_action(test_set, summary, run_list, plan_limit)
        return Checklist(steps, action, admins=admins)
    mine = labeling.progress(test_set, user)
    left = mine.mine_total - mine.mine_done
    if summary.pairs and left > 0:
        text = f"Start labeling: {_plural(left, 'pair')} for you"
        return Checklist(steps, Action("label", text, False), admins=admins)
    who = f"An admin can fix it: {', '.join(admins)}." if admins else "An admin can fix it."
    if summary.pairs == 0:
        blocked = f"Nothing to label yet: {_missing(summary, run_list)}. {who}"
    else:
        blocked = (
            "Nothing left for you to label here: every pair open to you is answered or has "
            f"the answers it needs. More pairs come when an admin pools or imports them. {who}"
        )
    return Checklist(steps, None, blocked, admins)
