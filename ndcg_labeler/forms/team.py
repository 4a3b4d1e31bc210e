"""Team forms: the review threshold, an adjudication, and withdrawing one."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import IntegerField, RadioField, SubmitField, TextAreaField
from wtforms.validators import InputRequired, Length, NumberRange, Optional

from ndcg_labeler.services import labeling, testsets


class ThresholdForm(FlaskForm):
    """How far apart grades must be for a pair to enter the review queue."""

    threshold = IntegerField(
        "Flag a pair when its grades differ by at least",
        validators=[InputRequired(), NumberRange(min=1, max=max(testsets.SCALES))],
    )
    submit = SubmitField("Apply")


class AdjudicationForm(FlaskForm):
    """The final grade of a pair and why; the view fills the grade choices from the scale."""

    grade = RadioField("Final grade", coerce=int, validators=[InputRequired()])
    note = TextAreaField(
        "Reason (kept in the history)", validators=[Optional(), Length(max=labeling.MAX_NOTE)]
    )
    submit = SubmitField("Save final grade")


class RemoveAdjudicationForm(FlaskForm):
    """Withdraw the adjudication: the aggregation policy decides again."""

    submit = SubmitField("Remove the final grade")
