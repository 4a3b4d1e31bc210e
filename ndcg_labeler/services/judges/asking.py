"""Asking a judge about prompts of our own making (probes, estimates) with the machinery a run
uses: its prompt template in the sandbox, its endpoint under the outbound policy, its speed
limits, and optionally a budget (budget.py). Nothing is stored here: the caller decides where
the answers go."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

from ndcg_labeler.models import Chunk, Judge, Query, TestSet
from ndcg_labeler.services import outbound
from ndcg_labeler.services.judges.budget import Budget
from ndcg_labeler.services.judges.client import (
    Answer,
    JudgeConfig,
    RateLimiter,
    ask,
    ask_each,
)
from ndcg_labeler.services.judges.prompts import (
    PromptRenderer,
    TemplateRefused,
    prompt_variables,
    prompt_version,
)


def judge_config(judge: Judge) -> JudgeConfig:
    """What a worker thread needs to ask this judge (the key read here, in the caller's thread)."""
    # The key's name is checked again here: a judge saved before NDCG_SECRET_ENV may name any.
    key = outbound.secret(judge.api_key_env, required=False) if judge.api_key_env else ""
    return JudgeConfig(
        judge.base_url,
        judge.model,
        key,
        judge.temperature,
        judge.max_tokens,
        judge.timeout,
        judge.requests_per_minute,
        judge.api_key_env or "",
    )


class Asker:
    """`with Asker(judge) as asker:` render prompts from variables, and ask them in parallel.

    `sha` is the judge's current prompt version (stored once, as a run stores it). With
    `max_cost`, `fit` tells how many prompts fit in what is left, and `ask_all` counts what the
    answers cost (`budget.spent`)."""

    def __init__(self, judge: Judge, own: Any = (), max_cost: float | None = None) -> None:
        self.judge = judge
        self.budget = Budget(judge, max_cost)  # checks the prices when a budget is given
        self.own = tuple(own)
        self.sha = prompt_version(judge.prompt_template)
        self.config = judge_config(judge)
        self.limiter = RateLimiter(judge.requests_per_minute)
        self.stack = ExitStack()
        self.renderer = PromptRenderer(judge.prompt_template)
        self.client: Any = None
        self.pool: ThreadPoolExecutor | None = None

    def __enter__(self) -> Asker:
        self.stack.enter_context(self.renderer)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()

    @staticmethod
    def variables(test_set: TestSet, query: Query, chunk: Chunk) -> dict[str, Any]:
        """What the template sees for one pair (override "passage" to ask about another text)."""
        return prompt_variables(test_set, query, chunk)

    def render(self, variables: dict[str, Any]) -> str | Answer:
        """The prompt, or a failed Answer when the template goes over a limit for it."""
        try:
            return self.renderer.render(variables)
        except TemplateRefused as exc:
            return Answer(None, str(exc), 0, 0, 0)

    def fit(self, prompts: list[str | Answer]) -> int:
        """How many of `prompts`, in order, fit in what is left of the budget (all: none set)."""
        return self.budget.fit(prompts)

    def ask_all(
        self, prompts: list[str | Answer], each: Callable[[int], None] | None = None
    ) -> list[Answer]:
        """The judge's answers, in order; a prompt that failed to render is not sent.

        `each(n)` is called in this thread after the n-th answer came (for progress)."""
        if self.pool is None:
            self.client = self.stack.enter_context(outbound.outbound_client(self.own))
            self.pool = self.stack.enter_context(ThreadPoolExecutor(self.judge.concurrency))
        client, pool = self.client, self.pool
        came = 0

        def one(prompt: str | Answer) -> Answer:
            if isinstance(prompt, Answer):
                return prompt
            return ask(client, self.config, prompt, self.limiter)

        def counted(_: int, __: Answer) -> None:
            nonlocal came
            came += 1
            if each is not None:
                each(came)

        answers = ask_each(pool, one, prompts, counted)
        self.budget.spend(prompts, answers)
        return answers
