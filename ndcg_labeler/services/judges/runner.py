"""Running a judge over a test set's pairs: pick the pairs, ask in parallel, store each answer.

Resumable: pairs this judge already answered under the same prompt version are skipped
(failed ones are asked again), unless the run asks again (`again:STATUSES`, lifecycle.py):
then the chosen answers are asked afresh and replaced. One pair's failure (timeout, refusal,
unreadable answer) is recorded and the run goes on. Threads only talk HTTP; the database is
written by the caller's thread, in batches, each batch committed (a cut-off run keeps what it
got). An ensemble's members are asked together, pair by pair, under one budget: a run stopped
by it has asked every member about a pair or none, and its combined answers follow.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import parse_answer_grade, unparsed_reason
from ndcg_labeler.models import Chunk, Judge, Judgment, MachineJudgment, Pair, Query, TestSet
from ndcg_labeler.services import ServiceError, corrections, outbound
from ndcg_labeler.services._db import insert_if_absent
from ndcg_labeler.services.judges.asking import judge_config
from ndcg_labeler.services.judges.budget import Budget, fit_together, seen_completion
from ndcg_labeler.services.judges.client import Answer, JudgeConfig, RateLimiter, ask, ask_each
from ndcg_labeler.services.judges.lifecycle import again_statuses, answered_pairs
from ndcg_labeler.services.judges.prompts import (
    PromptRenderer,
    TemplateRefused,
    prompt_variables,
)

PAIR_SETS = ("unjudged", "all", "human")
BATCH = 50
SAMPLE_SEED = 20261122


@dataclass
class RunReport:
    """What `flask judges run --json` prints."""

    judge: str
    prompt_version: str
    requested: int
    labeled: int = 0
    unparsed: int = 0
    failed: int = 0
    seconds: float = 0.0
    skipped: int = 0  # answered before under this prompt version (resume)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None  # dollars at the judge's prices; None when they are not set
    max_cost: float | None = None
    not_asked: int = 0  # pairs left when the budget ran out (a later run resumes with them)
    members: list[dict[str, Any]] | None = None  # an ensemble's: each member's tokens and cost
    # Said when the run started: a key variable not set in this process (requests go without)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The CLI's JSON object (keys as documented)."""
        return {
            "judge": self.judge,
            "prompt_version": self.prompt_version,
            "requested": self.requested,
            "labeled": self.labeled,
            "unparsed": self.unparsed,
            "failed": self.failed,
            # Answered before under this prompt version: without it the counts of a resumed
            # run do not add up to `requested`.
            "skipped": self.skipped,
            "seconds": round(self.seconds, 3),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": None if self.cost is None else round(self.cost, 6),
            "max_cost": self.max_cost,
            "stopped_at_budget": self.not_asked > 0,
            "not_asked": self.not_asked,
            **({} if self.members is None else {"members": self.members}),
            "warnings": self.warnings,
        }


def _graded(test_set_id: int) -> sa.Select[Any]:
    """(query_id, chunk_id) of pairs with a grade (people's or imported qrels)."""
    return (
        sa.select(Judgment.query_id, Judgment.chunk_id)
        .where(Judgment.test_set_id == test_set_id, Judgment.status == "graded")
        .distinct()
    )


def select_pairs(test_set: TestSet, which: str) -> list[tuple[int, int]]:
    """The (query id, chunk id) pairs to judge, in pool order: `unjudged` (no grade yet),
    `all`, `human` (graded by people or imported qrels: for calibration) or `sample:N`."""
    pool = [
        (q, c)
        for q, c in db.session.execute(
            sa.select(Pair.query_id, Pair.chunk_id)
            .where(Pair.test_set_id == test_set.id)
            .order_by(Pair.id)
        )
    ]
    if which == "all":
        return pool
    if which.startswith("sample:"):
        try:
            n = int(which.split(":", 1)[1])
        except ValueError:
            n = -1
        if n < 1:
            raise ServiceError("sample:N needs a whole number N of at least 1")
        return sorted(random.Random(SAMPLE_SEED).sample(pool, min(n, len(pool))))
    if which not in PAIR_SETS:
        raise ServiceError("pairs must be unjudged, all, human or sample:N")
    graded = {(q, c) for q, c in db.session.execute(_graded(test_set.id))}
    if which == "human":
        return [pair for pair in pool if pair in graded]
    return [pair for pair in pool if pair not in graded]


def _answered(judge: Judge, sha: str, test_set_id: int) -> set[tuple[int, int]]:
    rows = db.session.execute(
        sa.select(MachineJudgment.query_id, MachineJudgment.chunk_id).where(
            MachineJudgment.judge_id == judge.id,
            MachineJudgment.prompt_sha256 == sha,
            MachineJudgment.test_set_id == test_set_id,
            MachineJudgment.status != "failed",
        )
    )
    return {(q, c) for q, c in rows}


def _store(
    judge: Judge, sha: str, test_set: TestSet, done: list[tuple[tuple[int, int], Answer]]
) -> tuple[int, int, int]:
    """Write a batch of answers (replacing earlier failures); (labeled, unparsed, failed)."""
    counts = [0, 0, 0]
    table = MachineJudgment.__table__
    for (query_id, chunk_id), answer in done:
        grade = None if answer.text is None else parse_answer_grade(answer.text, test_set.scale_max)
        status = (
            "failed" if answer.text is None else ("labeled" if grade is not None else "unparsed")
        )
        counts[("labeled", "unparsed", "failed").index(status)] += 1
        error = answer.error
        if status == "unparsed":  # say why (no grade, or one off the scale) where people read it
            error = unparsed_reason(answer.text or "", test_set.scale_max)
        row = {
            "test_set_id": test_set.id,
            "query_id": query_id,
            "chunk_id": chunk_id,
            "judge_id": judge.id,
            "prompt_sha256": sha,
            "model": judge.model,
            "status": status,
            "grade": grade,
            "raw_answer": answer.text or "",
            "error": error,
            "latency_ms": answer.latency_ms,
            "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens,
        }
        keys = ["query_id", "chunk_id", "judge_id", "prompt_sha256"]
        if not insert_if_absent(table, [row], keys):
            # A failure asked again: replaced by a new row, since the newest id is what tells
            # live scoring that the judge's labels moved (an update in place kept old scores).
            db.session.execute(sa.delete(table).where(*(table.c[k] == row[k] for k in keys)))
            db.session.execute(sa.insert(table), [row])
    db.session.commit()
    return counts[0], counts[1], counts[2]


def _prompt(renderer: PromptRenderer, variables: dict[str, Any]) -> str | Answer:
    """The pair's prompt, or its failed Answer when the template goes over a limit for it."""
    try:
        return renderer.render(variables)
    except TemplateRefused as exc:
        return Answer(None, str(exc), 0, 0, 0)


def _with_shots(shots: Any, query_id: int, prompt: str | Answer) -> str | Answer:
    """The prompt with the few-shot examples before it (a failed prompt stays failed)."""
    return prompt if isinstance(prompt, Answer) else shots.prefix(query_id) + prompt


def _answer(client: Any, config: JudgeConfig, prompt: str | Answer, limiter: RateLimiter) -> Answer:
    """Ask the endpoint about a rendered prompt; a pair whose prompt failed is not sent."""
    return prompt if isinstance(prompt, Answer) else ask(client, config, prompt, limiter)


@dataclass
class _Member:
    """One judge asked in a run (the judge itself, or one member of an ensemble)."""

    judge: Judge
    shots: Any  # the few-shot prefix and the prompt version (ensembles.judge_shots)
    todo: set[tuple[int, int]]
    budget: Budget
    config: JudgeConfig
    limiter: RateLimiter
    renderer: PromptRenderer
    pool: ThreadPoolExecutor | None = None
    counts: tuple[int, ...] = (0, 0, 0)  # labeled, unparsed, failed
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def cost(self) -> float | None:
        """Dollars of this run's answers at the judge's prices (None: prices unknown)."""
        if self.budget.max_cost is not None:
            return self.budget.spent  # with predicted tokens where the endpoint reported none
        return self.judge.cost(self.prompt_tokens, self.completion_tokens)


def _plan(
    test_set: TestSet, team: list[Judge], which: str, max_cost: float | None, shots_of: Any
) -> tuple[list[tuple[int, int]], list[_Member]]:
    """The pairs chosen, and each judge with the pairs it still has to answer."""
    again = again_statuses(which) if which.startswith("again:") else None
    chosen = [] if again else select_pairs(test_set, which)
    members = []
    for judge in team:
        shots = shots_of(test_set, judge)
        if again:
            mine = answered_pairs(test_set.id, judge, shots.sha, again)
            known = set(chosen)
            chosen += [pair for pair in mine if pair not in known]
        else:
            answered = _answered(judge, shots.sha, test_set.id)
            mine = [pair for pair in chosen if pair not in answered]
        budget = Budget(judge, max_cost, seen_completion(test_set.id, judge, shots.sha))
        members.append(
            _Member(
                judge,
                shots,
                set(mine),
                budget,
                judge_config(judge),
                RateLimiter(judge.requests_per_minute),
                PromptRenderer(judge.prompt_template),
            )
        )
    db.session.commit()  # the prompt versions, stored once
    return chosen, members


def run_judge(
    test_set: TestSet,
    judge: Judge,
    which: str = "unjudged",
    progress: Callable[[int, int, dict[str, int]], None] | None = None,
    own: Sequence[str] = (),
    max_cost: float | None = None,
) -> RunReport:
    """Ask the judge about the chosen pairs (skipping those answered before); a report.

    `which`: a select_pairs choice, or `again:STATUSES` (all, failed, unparsed,
    failed,unparsed): the pairs answered so under this prompt version, asked afresh.
    `own`: the app's 'host:port' names as the request that queued a job saw them.
    `max_cost`: stop, between batches, before the dollars spent would pass it (budget.py).
    An ensemble asks its members pair by pair together (one budget, one progress count over
    every member's questions), then combines their answers; its tokens and cost are theirs."""
    # Few-shot prompts and ensembles build on this package: imported late, no import cycle.
    from ndcg_labeler.services import ensembles

    started = time.monotonic()
    team = ensembles.members_of(judge) if ensembles.is_ensemble(judge) else [judge]
    if not team:
        raise ServiceError(f"the ensemble '{judge.name}' has no member judges left")
    chosen, members = _plan(test_set, team, which, max_cost, ensembles.judge_shots)
    todo = [pair for pair in chosen if any(pair in m.todo for m in members)]
    report = RunReport(judge.name, members[0].shots.sha, len(chosen))
    report.skipped, report.max_cost = len(chosen) - len(todo), max_cost
    report.warnings = outbound.unset_secrets(m.judge.api_key_env or "" for m in members)
    asked = _ask_members(test_set, members, todo, own, progress)
    report.not_asked = len(todo) - asked
    if ensembles.is_ensemble(judge):
        counts = ensembles.combine_answers(test_set, judge)
        report.prompt_version = ensembles.judge_version(test_set, judge)
        report.labeled, report.unparsed, report.failed = (
            counts["labeled"],
            counts["unparsed"],
            counts["failed"],
        )
        report.members = [
            {
                "judge": m.judge.name,
                "prompt_tokens": m.prompt_tokens,
                "completion_tokens": m.completion_tokens,
                "cost": None if m.cost is None else round(m.cost, 6),
            }
            for m in members
        ]
    else:
        report.labeled, report.unparsed, report.failed = members[0].counts
    corrections.record_conflicts(test_set.id)  # answers far from people's grades
    db.session.commit()
    report.prompt_tokens = sum(m.prompt_tokens for m in members)
    report.completion_tokens = sum(m.completion_tokens for m in members)
    costs = [m.cost for m in members]
    report.cost = None if None in costs else sum(c for c in costs if c is not None)
    report.seconds = time.monotonic() - started
    return report


def _ask_members(
    test_set: TestSet,
    members: list[_Member],
    todo: list[tuple[int, int]],
    own: Sequence[str],
    progress: Callable[[int, int, dict[str, int]], None] | None,
) -> int:
    """Ask every member about its pairs of `todo`, batch by batch, each batch stored and
    committed; a pair is asked of all its members or of none. How many pairs were asked."""
    queries = {
        q.id: q
        for q in db.session.scalars(sa.select(Query).where(Query.test_set_id == test_set.id))
    }
    questions = sum(len(m.todo) for m in members)
    done = 0
    tokens = {"prompt_tokens": 0, "completion_tokens": 0}
    with ExitStack() as stack:
        client = stack.enter_context(outbound.outbound_client(own))
        for member in members:
            stack.enter_context(member.renderer)
            member.pool = stack.enter_context(ThreadPoolExecutor(member.judge.concurrency))
        begin = 0
        while begin < len(todo):
            batch = todo[begin : begin + BATCH]
            chunks = {
                c.id: c
                for c in db.session.scalars(
                    sa.select(Chunk).where(Chunk.id.in_({c for _, c in batch}))
                )
            }
            columns = [
                [
                    _with_shots(
                        m.shots,
                        q,
                        _prompt(m.renderer, prompt_variables(test_set, queries[q], chunks[c])),
                    )
                    if (q, c) in m.todo
                    else None
                    for q, c in batch
                ]
                for m in members
            ]
            fits = fit_together([m.budget for m in members], columns)
            if fits == 0:
                break
            batch = batch[:fits]
            for member, column in zip(members, columns, strict=True):
                mine = [
                    (pair, p) for pair, p in zip(batch, column[:fits], strict=True) if p is not None
                ]
                if not mine:
                    continue
                got: dict[int, Answer] = {}

                def came(
                    i: int, answer: Answer, m: _Member = member, got: dict[int, Answer] = got
                ) -> None:
                    nonlocal done
                    got[i] = answer
                    m.prompt_tokens += answer.prompt_tokens
                    m.completion_tokens += answer.completion_tokens
                    tokens["prompt_tokens"] += answer.prompt_tokens
                    tokens["completion_tokens"] += answer.completion_tokens
                    done += 1
                    if progress is not None:
                        progress(done, questions, tokens)  # may raise Cancelled

                pool = member.pool
                assert pool is not None
                try:
                    ask_each(
                        pool,
                        lambda p, m=member: _answer(client, m.config, p, m.limiter),
                        [p for _, p in mine],
                        came,
                    )
                finally:  # a cancelled batch keeps the answers that came
                    kept = sorted(got)
                    member.budget.spend([mine[i][1] for i in kept], [got[i] for i in kept])
                    found = _store(
                        member.judge,
                        member.shots.sha,
                        test_set,
                        [(mine[i][0], got[i]) for i in kept],
                    )
                    member.counts = tuple(a + b for a, b in zip(member.counts, found, strict=True))
            begin += len(batch)
    return begin
