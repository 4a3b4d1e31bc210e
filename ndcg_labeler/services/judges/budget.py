"""A run's spending limit: how many of the next prompts fit in what is left of `max_cost`.

Before each batch the run asks how many of its rendered prompts fit: each prompt's cost is
predicted from its length (the tokens per character this run has seen, else 4 characters a
token) and the output tokens per answer seen so far (this run's, else the judge's earlier
answers on the set, else its max_tokens: an upper bound). The run stops before the first
prompt that would take the predicted total over the budget, so it stops cleanly between
batches and a later run resumes with the pairs not yet asked. An answer whose endpoint
reports no `usage` is counted at its predicted tokens, so a silent endpoint cannot overspend.
An ensemble's members share one budget (fit_together): the questions about one pair to every
member fit together or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judge, MachineJudgment
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services.judges.client import Answer

CHARS_PER_TOKEN = 4.0  # the usual rule of thumb for English text and BPE tokenizers


def seen_completion(test_set_id: int, judge: Judge, sha: str) -> float | None:
    """Mean output tokens of the judge's answers on the set under prompt `sha` (None: none)."""
    mj = MachineJudgment
    found = db.session.scalar(
        sa.select(sa.func.avg(mj.completion_tokens)).where(
            mj.test_set_id == test_set_id,
            mj.judge_id == judge.id,
            mj.prompt_sha256 == sha,
            mj.completion_tokens > 0,
        )
    )
    return None if found is None else float(found)


@dataclass
class Budget:
    """Spending of one run against `max_cost` dollars (None: no limit, only counting)."""

    judge: Judge
    max_cost: float | None
    seen_completion: float | None = None  # mean output tokens of earlier answers, if any
    prompt_tokens: int = 0
    completion_tokens: int = 0
    spent: float = 0.0  # dollars, reported usage or predicted where none was reported
    _chars: int = 0  # characters of the prompts whose usage was reported
    _reported: int = 0  # prompt tokens reported for them
    _answers: int = 0  # answers with reported completion tokens
    _out_reported: int = 0  # their completion tokens

    def __post_init__(self) -> None:
        if self.max_cost is None:
            return
        if self.max_cost <= 0:
            raise ServiceError("the budget (max cost) must be more than 0")
        if self.judge.input_price is None or self.judge.output_price is None:
            raise ServiceError(
                f"judge {self.judge.name} has no prices per million tokens: set them before "
                "giving a budget"
            )

    def _input(self, prompt: str) -> float:
        ratio = self._reported / self._chars if self._chars else 1 / CHARS_PER_TOKEN
        return len(prompt) * ratio

    def _output(self) -> float:
        if self._answers:
            return self._out_reported / self._answers
        if self.seen_completion is not None:
            return self.seen_completion
        return float(self.judge.max_tokens)

    def predicted(self, prompt: str | Answer) -> float:
        """Predicted dollars of asking one prompt (0 for one that will not be sent)."""
        if isinstance(prompt, Answer):
            return 0.0
        return self._dollars(self._input(prompt), self._output())

    def _dollars(self, prompt_tokens: float, completion_tokens: float) -> float:
        price_in, price_out = self.judge.input_price or 0.0, self.judge.output_price or 0.0
        return (prompt_tokens * price_in + completion_tokens * price_out) / 1_000_000

    def fit(self, prompts: list[str | Answer]) -> int:
        """How many of `prompts`, in order, fit in what is left of the budget."""
        if self.max_cost is None:
            return len(prompts)
        total = self.spent
        for count, prompt in enumerate(prompts):
            total += self.predicted(prompt)
            if total > self.max_cost + 1e-12:
                return count
        return len(prompts)

    def spend(self, prompts: list[str | Answer], answers: list[Answer]) -> None:
        """Count what the answers cost (their reported usage, else their predicted tokens)."""
        for prompt, answer in zip(prompts, answers, strict=True):
            if isinstance(prompt, Answer) or answer.text is None:
                continue  # not sent, or no answer: providers do not bill a failed request
            tokens_in = answer.prompt_tokens or round(self._input(prompt))
            tokens_out = answer.completion_tokens or round(self._output())
            if answer.prompt_tokens:
                self._chars += len(prompt)
                self._reported += answer.prompt_tokens
            if answer.completion_tokens:
                self._answers += 1
                self._out_reported += answer.completion_tokens
            self.prompt_tokens += tokens_in
            self.completion_tokens += tokens_out
            self.spent += self._dollars(tokens_in, tokens_out)

    @property
    def exhausted(self) -> bool:
        """True when the budget is set and no more can be spent."""
        return self.max_cost is not None and self.spent >= self.max_cost


def fit_together(budgets: list[Budget], columns: list[list[str | Answer | None]]) -> int:
    """How many of the next pairs fit in one budget shared by several judges (an ensemble's
    members, each at its own prices): `columns[i][j]` is judge i's prompt for pair j (None:
    it does not ask that pair). A pair fits only when every judge's question about it fits,
    so a run never stops between the members' answers to one pair."""
    pairs = len(columns[0]) if columns else 0
    limit = budgets[0].max_cost if budgets else None
    if limit is None:
        return pairs
    total = sum(budget.spent for budget in budgets)
    for pair in range(pairs):
        for budget, column in zip(budgets, columns, strict=True):
            prompt = column[pair]
            if prompt is not None:
                total += budget.predicted(prompt)
        if total > limit + 1e-12:
            return pair
    return pairs
