"""A judge's prices (dollars per million input and output tokens, as providers quote them),
and what its answers on a test set have cost so far."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judge, MachineJudgment, Probe, User
from ndcg_labeler.services import ServiceError, audit, read_number, shown
from ndcg_labeler.services._db import transaction

MAX_PRICE = 10_000.0  # dollars per million tokens: far above any listed model's price
MAX_BUDGET = MAX_PRICE * 100  # dollars a run, an ask-again or a probe may be given


def price_error(value: float | str | None, which: str) -> str | None:
    """What is wrong with a price (a number, or text as typed; None or empty: unknown), in one
    sentence naming its range and the value given; None when nothing is."""
    if _empty(value):
        return None
    price = read_number(value)
    if isinstance(price, (str, bool)) or not 0 <= price <= MAX_PRICE:
        # `not 0 <= price` also refuses NaN
        return (
            f"the {which} price must be a number from 0 to {MAX_PRICE:g} dollars per million "
            f"tokens, not {shown(price)}"
        )
    return None


def check_price(value: float | str | None, which: str) -> float | None:
    """The price (None: unknown, as is empty text), or a ServiceError saying price_error's."""
    wrong = price_error(value, which)
    if wrong is not None:
        raise ServiceError(wrong)
    return None if _empty(value) else float(read_number(value))


def _empty(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def budget_error(value: float | str | None) -> str | None:
    """What is wrong with a budget in dollars (a number, or text as typed; None or empty: no
    budget), in one sentence naming its range and the value given; None when nothing is."""
    if _empty(value):
        return None
    budget = read_number(value)
    if isinstance(budget, (str, bool)) or not 0 < budget <= MAX_BUDGET:  # also refuses NaN
        return (
            f"the budget must be a number of dollars more than 0 and at most {MAX_BUDGET:.0f}, "
            f"not {shown(budget)}"
        )
    return None


def read_budget(value: float | str | None) -> float | None:
    """The budget in dollars (None: none, as is empty text), or a ServiceError saying
    budget_error's sentence."""
    wrong = budget_error(value)
    if wrong is not None:
        raise ServiceError(wrong)
    return None if _empty(value) else float(read_number(value))


def set_prices(
    judge: Judge, input_price: float | None, output_price: float | None, actor: User | None = None
) -> None:
    """Set (or clear, with None) the judge's prices per million tokens; audited."""
    input_price = check_price(input_price, "input")
    output_price = check_price(output_price, "output")
    with transaction():
        judge.input_price, judge.output_price = input_price, output_price
        audit.record(
            actor,
            "judge.prices",
            "judge",
            judge.id,
            name=judge.name,
            input_price=input_price,
            output_price=output_price,
        )


def money(dollars: float | None) -> str:
    """Dollars for people: "$3.10", "$0.0042" for small sums, "unknown" without prices."""
    if dollars is None:
        return "unknown (no prices set)"
    if dollars == 0 or dollars >= 0.1:
        return f"${dollars:,.2f}"
    if dollars < 0.0001:  # two significant digits, written out: "%g" would say "2.1e-05"
        return f"${Decimal(f'{dollars:.2g}'):f}"
    return f"${dollars:.4f}"


def unpriced(judge: Judge) -> list[str]:
    """The judges without both prices that a budget for `judge` needs: itself, or for an
    ensemble its members (each is billed at its own prices)."""
    from ndcg_labeler.services import ensembles  # it builds on judges: imported late

    team = ensembles.members_of(judge) if ensembles.is_ensemble(judge) else [judge]
    return [j.name for j in team if j.input_price is None or j.output_price is None]


def spending(test_set_id: int, judge: Judge) -> dict[str, Any]:
    """Tokens and dollars of the judge's answers on the set (runs) and of its probes there;
    an ensemble's runs are its members' answers on the set (its own rows carry no tokens),
    each at its member's prices, under "members" their names."""
    from ndcg_labeler.services import ensembles

    found = _spending(test_set_id, judge)
    if ensembles.is_ensemble(judge):
        members = ensembles.members_of(judge)
        runs = [_spending(test_set_id, m)["runs"] for m in members]
        costs = [r["cost"] for r in runs]
        cost = None if None in costs or not runs else sum(c or 0.0 for c in costs)
        found["runs"] = {
            "prompt_tokens": sum(r["prompt_tokens"] for r in runs),
            "completion_tokens": sum(r["completion_tokens"] for r in runs),
            "cost": cost,
            "money": money(cost),
        }
        found["members"] = [m.name for m in members]
    return found


def _spending(test_set_id: int, judge: Judge) -> dict[str, Any]:
    """spending() of one judge, from its own rows."""
    mj = MachineJudgment
    runs_in, runs_out = db.session.execute(
        sa.select(
            sa.func.coalesce(sa.func.sum(mj.prompt_tokens), 0),
            sa.func.coalesce(sa.func.sum(mj.completion_tokens), 0),
        ).where(mj.test_set_id == test_set_id, mj.judge_id == judge.id)
    ).one()
    probes_in, probes_out = db.session.execute(
        sa.select(
            sa.func.coalesce(sa.func.sum(Probe.prompt_tokens), 0),
            sa.func.coalesce(sa.func.sum(Probe.completion_tokens), 0),
        ).where(Probe.test_set_id == test_set_id, Probe.judge_id == judge.id)
    ).one()
    found: dict[str, Any] = {}
    for key, tokens_in, tokens_out in (
        ("runs", int(runs_in), int(runs_out)),
        ("probes", int(probes_in), int(probes_out)),
    ):
        cost = judge.cost(tokens_in, tokens_out)
        found[key] = {
            "prompt_tokens": tokens_in,
            "completion_tokens": tokens_out,
            "cost": cost,
            "money": money(cost),
        }
    return found
