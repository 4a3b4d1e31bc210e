"""Team forms: the review threshold, an adjudication, and withdrawing one."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import HiddenField, IntegerField, RadioField, SubmitField, TextAreaField
from wtforms.validators import InputRequired, Length, Optional

from ndcg_labeler.services import labeling


class ThresholdForm(FlaskForm):
    """How far apart grades must be for a pair to enter the review queue."""

    threshold = IntegerField(
        "Flag a pair when its grades differ by at least",
        # No range here: scales differ per test set, and team.set_threshold refuses a value
        # outside this set's own with a message that names it.
        validators=[InputRequired()],
    )
    submit = SubmitField("Apply")


class AdjudicationForm(FlaskForm):
    """The final grade of a pair and why; the view fills the grade choices from the scale."""

    grade = RadioField("Final grade", coerce=int, validators=[InputRequired()])
    note = TextAreaField(
        "Reason (kept in the history)", validators=[Optional(), Length(max=labeling.MAX_NOTE)]
    )
    # What the page showed of the pair's grades (team.pair_detail's `seen`): a final grade is
    # refused when they changed since, never saved over an answer nobody saw.
    seen = HiddenField()
    submit = SubmitField("Save final grade")


class RemoveAdjudicationForm(FlaskForm):
    """Withdraw the adjudication: the aggregation policy decides again."""

    submit = SubmitField("Remove the final grade")
