"""Forms of a judge's probes and costs: start a gullibility probe, set the judge's prices."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import DecimalField, IntegerField, SubmitField
from wtforms.validators import DataRequired, NumberRange, Optional

from ndcg_labeler.services import judge_costs, probes

PRICE_LABELS = (
    "Price per million input tokens (dollars; empty: unknown)",
    "Price per million output tokens (dollars; empty: unknown)",
)


def budget_field() -> DecimalField:
    """An optional budget in dollars, as the run, ask-again and probe forms show it."""
    return DecimalField(
        "Budget in dollars (empty: none; needs the judge's prices)",
        places=2,
        validators=[Optional(), NumberRange(min=0.01, max=judge_costs.MAX_PRICE * 100)],
    )


def price_fields() -> tuple[DecimalField, DecimalField]:
    """The two optional price fields, as the judge form and the prices form show them."""
    return tuple(  # type: ignore[return-value]
        DecimalField(
            label, places=4, validators=[Optional(), NumberRange(0, judge_costs.MAX_PRICE)]
        )
        for label in PRICE_LABELS
    )


class ProbeForm(FlaskForm):
    """Start a gullibility probe of the judge on N pairs people graded 0 (a background job)."""

    pairs = IntegerField(
        "Pairs to probe (N; fewer graded 0: the lowest-graded fill up)",
        default=probes.DEFAULT_PAIRS,
        validators=[DataRequired(), NumberRange(1, probes.MAX_PAIRS)],
    )
    max_cost = budget_field()
    submit = SubmitField("Probe for gullibility")


class PricesForm(FlaskForm):
    """A judge's prices per million tokens (costs are shown only where they are known)."""

    input_price, output_price = price_fields()
    submit = SubmitField("Save prices")
