"""The estimate shown before a run starts: "about 12,400 pairs, ~$3.10", and what it rests on.

From the judge's answers on the set under its current prompt version when it has some with
reported tokens (their mean input and output tokens); otherwise from the prompt length of a
sample of the pairs (4 characters a token) with the judge's max_tokens as output: an upper
bound, since most answers are shorter. An ensemble's estimate is the sum of its members'
(each at its own prices) over the pairs any of them would ask.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judge, MachineJudgment, Query, TestSet
from ndcg_labeler.services import ServiceError, counted, judges
from ndcg_labeler.services.judge_costs.prices import money

SAMPLE = 20  # pairs whose prompts are rendered for a prompt-length estimate
CHARS_PER_TOKEN = 4.0
SEED = 20261126


@dataclass(frozen=True)
class Estimate:
    """Pairs a run would ask, with the tokens and dollars they would take."""

    pairs: int
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    basis: str  # "seen" (answers so far) or "prompt" (prompt length)
    answers: int  # answers the "seen" basis averages over (sampled prompts for "prompt")
    max_tokens: int
    unit: str = "pair"  # what `pairs` counts, singular ("question" for a probe)
    detail: str = ""  # said after the count ("(4 pairs, 9 variants each)" for a probe)
    members: tuple[tuple[str, Estimate], ...] = ()  # an ensemble's, by member name
    # The first sampled prompt's error when none of the sampled prompts rendered.
    render_error: str = ""

    def text(self) -> str:
        """One line for people: pairs, dollars, and what the figure rests on."""
        if self.render_error and not self.answers:
            # A count and a price of questions that cannot be put would mislead.
            return f"nothing can be asked: {self._why()}"
        if not self.pairs:  # "about 0 pairs, ~$0.00" would read as a run that costs nothing
            return "nothing to ask"
        cost = "cost unknown (no prices set)" if self.cost is None else f"~{money(self.cost)}"
        detail = f" {self.detail}" if self.detail else ""
        return f"about {counted(self.pairs, self.unit)}{detail}, {cost} ({self._why()})"

    def _why(self) -> str:
        """What the figure rests on."""
        if self.members:
            parts = "; ".join(
                f"{name} {'cost unknown' if e.cost is None else '~' + money(e.cost)} {e._why()}"
                for name, e in self.members
            )
            return f"the sum over its {len(self.members)} members: {parts}"
        if self.basis == "seen":
            why = f"from the average tokens of {counted(self.answers, 'answer')} so far"
        elif self.answers:
            why = (
                f"from the prompt length of {counted(self.answers, self.unit)}, about "
                f"{CHARS_PER_TOKEN:g} characters a token, and up to {self.max_tokens:,} output "
                "tokens each: an upper bound"
            )
        elif self.render_error:
            why = f"the sampled prompts all failed to render; the first: {self.render_error}"
        else:
            why = "nothing to ask"
        return why

    def to_json(self) -> dict[str, Any]:
        """The estimate as JSON (the CLI's --estimate)."""
        return {
            "pairs": self.pairs,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": None if self.cost is None else round(self.cost, 6),
            "basis": self.basis,
            "answers": self.answers,
            "text": self.text(),
            **({"render_error": self.render_error} if self.render_error else {}),
            **(
                {"members": {name: e.to_json() for name, e in self.members}} if self.members else {}
            ),
        }


def _todo(test_set: TestSet, judge: Judge, which: str, sha: str) -> list[tuple[int, int]]:
    """The pairs a run over `which` would ask (those answered before are skipped; with
    `again:STATUSES`, those answered so, asked afresh)."""
    mj = MachineJudgment
    if which.startswith("again:"):
        statuses = judges.AGAIN_CHOICES.get(which.removeprefix("again:"))
        if statuses is None:
            raise ServiceError(f"ask again: choose {', '.join(judges.AGAIN_CHOICES)}")
        rows = db.session.execute(
            sa.select(mj.query_id, mj.chunk_id).where(
                mj.judge_id == judge.id,
                mj.prompt_sha256 == sha,
                mj.test_set_id == test_set.id,
                mj.status.in_(statuses),
            )
        )
        return [(int(q), int(c)) for q, c in rows]
    chosen = judges.select_pairs(test_set, which)
    answered = {
        (q, c)
        for q, c in db.session.execute(
            sa.select(mj.query_id, mj.chunk_id).where(
                mj.judge_id == judge.id,
                mj.prompt_sha256 == sha,
                mj.test_set_id == test_set.id,
                mj.status != "failed",
            )
        )
    }
    return [pair for pair in chosen if pair not in answered]


def estimate_run(test_set: TestSet, judge: Judge, which: str = "unjudged") -> Estimate:
    """What a run over `which` (a select_pairs choice, or again:STATUSES) would ask and cost,
    and on what basis."""
    return estimate_runs(test_set, judge, [which])[0]


def estimate_runs(test_set: TestSet, judge: Judge, choices: list[str]) -> list[Estimate]:
    """estimate_run for several choices at once (one prompt sample, one renderer)."""
    from ndcg_labeler.services import ensembles  # it builds on judges: imported late

    if ensembles.is_ensemble(judge):
        return _ensemble(test_set, ensembles.members_of(judge), choices)
    return [found for found, _ in _estimates(test_set, judge, choices)]


def _ensemble(test_set: TestSet, members: list[Judge], choices: list[str]) -> list[Estimate]:
    """An ensemble's estimate per choice: its members' summed over the pairs any would ask."""
    each = [_estimates(test_set, member, choices) for member in members]
    found = []
    for place in range(len(choices)):
        parts = [found_m[place] for found_m in each]
        costs = [e.cost for e, _ in parts]
        found.append(
            Estimate(
                len(set().union(*(todo for _, todo in parts))),
                sum(e.prompt_tokens for e, _ in parts),
                sum(e.completion_tokens for e, _ in parts),
                None if None in costs or not parts else sum(c or 0.0 for c in costs),
                "members",
                sum(e.answers for e, _ in parts),
                max((m.max_tokens for m in members), default=0),
                members=tuple((m.name, e) for m, (e, _) in zip(members, parts, strict=True)),
            )
        )
    return found


def _estimates(
    test_set: TestSet, judge: Judge, choices: list[str]
) -> list[tuple[Estimate, set[tuple[int, int]]]]:
    """One judge's estimate per choice, with the pairs it would ask."""
    from ndcg_labeler.services import ensembles

    # The version a run answers under: with a few-shot judge's examples, as its prompts have.
    shots = ensembles.judge_shots(test_set, judge)
    with judges.Asker(judge) as asker:
        todos = [_todo(test_set, judge, which, shots.sha) for which in choices]
        mj = MachineJudgment
        count, mean_in, mean_out = db.session.execute(
            sa.select(
                sa.func.count(), sa.func.avg(mj.prompt_tokens), sa.func.avg(mj.completion_tokens)
            ).where(
                mj.test_set_id == test_set.id,
                mj.judge_id == judge.id,
                mj.prompt_sha256 == shots.sha,
                mj.prompt_tokens > 0,
            )
        ).one()
        render_error = ""
        if count:
            basis, answers = "seen", int(count)
            per_in, per_out = float(mean_in), float(mean_out or 0)
        else:
            pool = sorted({pair for todo in todos for pair in todo})
            sample = random.Random(SEED).sample(pool, min(SAMPLE, len(pool)))
            prompts = _prompts(test_set, asker, sample)
            lengths = [
                len(shots.prefix(q)) + len(p)
                for (q, _), p in zip(sample, prompts, strict=True)
                if isinstance(p, str)
            ]
            basis, answers = "prompt", len(lengths)
            render_error = first_render_error(prompts)
            per_in = sum(lengths) / len(lengths) / CHARS_PER_TOKEN if lengths else 0.0
            per_out = float(judge.max_tokens) if lengths else 0.0
    db.session.commit()  # the prompt version, stored once
    found = []
    for todo in todos:
        tokens_in, tokens_out = round(per_in * len(todo)), round(per_out * len(todo))
        cost = judge.cost(tokens_in, tokens_out)
        found.append(
            (
                Estimate(
                    len(todo),
                    tokens_in,
                    tokens_out,
                    cost,
                    basis,
                    answers,
                    judge.max_tokens,
                    render_error=render_error,
                ),
                set(todo),
            )
        )
    return found


def first_render_error(prompts: list[Any]) -> str:
    """The first failed render's error when no prompt of `prompts` rendered, else ""."""
    if any(isinstance(p, str) for p in prompts):
        return ""
    return next((p.error for p in prompts), "")


def _prompts(test_set: TestSet, asker: Any, pairs: list[tuple[int, int]]) -> list[Any]:
    """The rendered prompts of `pairs` (a failed render is left out by the caller)."""
    if not pairs:
        return []
    queries = {
        q.id: q
        for q in db.session.scalars(sa.select(Query).where(Query.id.in_({q for q, _ in pairs})))
    }
    chunks = {
        c.id: c
        for c in db.session.scalars(sa.select(Chunk).where(Chunk.id.in_({c for _, c in pairs})))
    }
    return [asker.render(asker.variables(test_set, queries[q], chunks[c])) for q, c in pairs]
