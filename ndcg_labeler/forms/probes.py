"""Forms of a judge's probes and costs: start a gullibility probe, set the judge's prices."""

from __future__ import annotations

from collections.abc import Callable

from flask_wtf import FlaskForm
from wtforms import Field, StringField, SubmitField
from wtforms.validators import ValidationError

from ndcg_labeler.services import ServiceError, judge_costs, probes

PRICE_LABELS = (
    "Price per million input tokens (dollars; empty: unknown)",
    "Price per million output tokens (dollars; empty: unknown)",
)


# Text inputs with a numeric keyboard, not number inputs: a browser sends a number input's
# unreadable text ("$2.50", "2,50") as "", which here means no budget at all (a run without
# a cap) or an unknown price. A text input sends what was typed, for the service's reader to
# refuse in the CLI's words.


def _budget_check(form: FlaskForm, field: Field) -> None:
    wrong = judge_costs.budget_error(field.data)
    if wrong is not None:
        raise ValidationError(wrong)


def _pairs_check(form: FlaskForm, field: Field) -> None:
    try:
        probes.read_pairs(field.data)
    except ServiceError as exc:
        raise ValidationError(str(exc)) from None


def _price_check(which: str) -> Callable[[FlaskForm, Field], None]:
    def check(form: FlaskForm, field: Field) -> None:
        wrong = judge_costs.price_error(field.data, which)
        if wrong is not None:
            raise ValidationError(wrong)

    return check


def budget_field() -> StringField:
    """An optional budget in dollars, as the run, ask-again and probe forms show it."""
    return StringField(
        "Budget in dollars (empty: none; needs the judge's prices)",
        validators=[_budget_check],
        render_kw={"inputmode": "decimal"},
    )


def price_fields() -> tuple[StringField, StringField]:
    """The two optional price fields, as the judge form and the prices form show them."""
    return tuple(  # type: ignore[return-value]
        StringField(label, validators=[_price_check(which)], render_kw={"inputmode": "decimal"})
        for label, which in zip(PRICE_LABELS, ("input", "output"), strict=True)
    )


def field_errors(form: FlaskForm) -> str:
    """Every field error of the form in one line, for a flash message."""
    return "; ".join(error for field in form for error in field.errors)


class ProbeForm(FlaskForm):
    """Start a gullibility probe of the judge on N pairs people graded 0 (a background job)."""

    pairs = StringField(
        "Pairs to probe (N; fewer graded 0: the lowest-graded fill up; empty: "
        f"{probes.DEFAULT_PAIRS})",
        default=str(probes.DEFAULT_PAIRS),
        validators=[_pairs_check],
        render_kw={"inputmode": "numeric"},
    )
    max_cost = budget_field()
    submit = SubmitField("Probe for gullibility")


class PricesForm(FlaskForm):
    """A judge's prices per million tokens (costs are shown only where they are known)."""

    input_price, output_price = price_fields()
    submit = SubmitField("Save prices")
