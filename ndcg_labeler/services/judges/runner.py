"""Running a judge over a test set's pairs: pick the pairs, ask in parallel, store each answer.

Resumable: pairs this judge already answered under the same prompt version are skipped
(failed ones are asked again), unless the run asks again (`again:STATUSES`, lifecycle.py):
then the chosen answers are asked afresh and replaced. One pair's failure (timeout, refusal,
unreadable answer) is recorded and the run goes on. Threads only talk HTTP; the database is
written by the caller's thread, in batches, each batch committed (a cut-off run keeps what it
got).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import parse_answer_grade
from ndcg_labeler.models import Chunk, Judge, Judgment, MachineJudgment, Pair, Query, TestSet
from ndcg_labeler.services import ServiceError, corrections, outbound
from ndcg_labeler.services._db import insert_if_absent
from ndcg_labeler.services.judges.asking import judge_config
from ndcg_labeler.services.judges.budget import Budget, seen_completion
from ndcg_labeler.services.judges.client import Answer, JudgeConfig, RateLimiter, ask
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

    def to_json(self) -> dict[str, Any]:
        """The CLI's JSON object (keys as documented)."""
        return {
            "judge": self.judge,
            "prompt_version": self.prompt_version,
            "requested": self.requested,
            "labeled": self.labeled,
            "unparsed": self.unparsed,
            "failed": self.failed,
            "seconds": round(self.seconds, 3),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": None if self.cost is None else round(self.cost, 6),
            "max_cost": self.max_cost,
            "stopped_at_budget": self.not_asked > 0,
            "not_asked": self.not_asked,
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
            "error": answer.error,
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
    `max_cost`: stop, between batches, before the dollars spent would pass it (budget.py)."""
    # Few-shot prompts and ensembles build on this package: imported late, no import cycle.
    from ndcg_labeler.services import ensembles

    if ensembles.is_ensemble(judge):
        return ensembles.run_ensemble(test_set, judge, which, progress, own)  # type: ignore[no-any-return]
    started = time.monotonic()
    shots = ensembles.judge_shots(test_set, judge)
    sha = shots.sha
    db.session.commit()
    if which.startswith("again:"):
        chosen = answered_pairs(test_set.id, judge, sha, again_statuses(which))
        todo = list(chosen)
    else:
        chosen = select_pairs(test_set, which)
        answered = _answered(judge, sha, test_set.id)
        todo = [pair for pair in chosen if pair not in answered]
    report = RunReport(judge.name, sha, len(chosen), skipped=len(chosen) - len(todo))
    budget = Budget(judge, max_cost, seen_completion(test_set.id, judge, sha))
    report.max_cost = max_cost
    queries = {
        q.id: q
        for q in db.session.scalars(sa.select(Query).where(Query.test_set_id == test_set.id))
    }
    config, limiter = judge_config(judge), RateLimiter(judge.requests_per_minute)
    tokens = {"prompt_tokens": 0, "completion_tokens": 0}
    with (
        outbound.outbound_client(own) as client,
        ThreadPoolExecutor(judge.concurrency) as pool,
        PromptRenderer(judge.prompt_template) as renderer,
    ):
        begin = 0
        while begin < len(todo):
            batch = todo[begin : begin + BATCH]
            chunks = {
                c.id: c
                for c in db.session.scalars(
                    sa.select(Chunk).where(Chunk.id.in_({c for _, c in batch}))
                )
            }
            prompts = [
                _with_shots(
                    shots, q, _prompt(renderer, prompt_variables(test_set, queries[q], chunks[c]))
                )
                for q, c in batch
            ]
            fits = budget.fit(prompts)
            if fits == 0:
                report.not_asked = len(todo) - begin
                break
            batch, prompts = batch[:fits], prompts[:fits]
            answers = list(pool.map(lambda p: _answer(client, config, p, limiter), prompts))
            budget.spend(prompts, answers)
            for answer in answers:
                tokens["prompt_tokens"] += answer.prompt_tokens
                tokens["completion_tokens"] += answer.completion_tokens
            labeled, unparsed, failed = _store(
                judge, sha, test_set, list(zip(batch, answers, strict=True))
            )
            report.labeled += labeled
            report.unparsed += unparsed
            report.failed += failed
            begin += len(batch)
            if progress is not None:
                progress(begin, len(todo), tokens)
    corrections.record_conflicts(test_set.id)  # answers far from people's grades
    db.session.commit()
    report.prompt_tokens = tokens["prompt_tokens"]
    report.completion_tokens = tokens["completion_tokens"]
    report.cost = judge.cost(report.prompt_tokens, report.completion_tokens)
    if budget.max_cost is not None:
        report.cost = budget.spent  # with predicted tokens where the endpoint reported none
    report.seconds = time.monotonic() - started
    return report
