"""Labeling forms: one CSRF-protected form whose submit buttons carry the answer."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import HiddenField, IntegerField, StringField, TextAreaField
from wtforms.validators import AnyOf, Length, Optional

from ndcg_labeler.services import labeling

ACTIONS = ("cant_tell", "skip")


class LabelForm(FlaskForm):
    """Grade, can't tell or skip one pair.

    The template renders the grade buttons itself (`name="grade" value="N"`, and
    `name="action" value="cant_tell|skip"`): only the pressed button is submitted, so the
    fields below read which one it was.
    """

    # No range here: scales differ per test set, and the judging service refuses a grade
    # outside this set's own scale with a message that names it.
    grade = IntegerField("Grade", validators=[Optional()])
    action = StringField("Action", validators=[Optional(), AnyOf(ACTIONS)])
    note = TextAreaField("Note", validators=[Optional(), Length(max=labeling.MAX_NOTE)])
    # Milliseconds the tab was visible since the pair was shown (0 without JavaScript). Not
    # validated here: a garbled timer must never cost the grade (the view reads it leniently
    # and the service clamps it).
    active_ms = HiddenField("Active time", default="0")
    next = HiddenField("Next")
    # The version of my judgment the page was rendered with (0: none yet); absent, no check.
    version = HiddenField("Version")


class ShortcutsForm(FlaskForm):
    """Switch single-key shortcuts on or off (the button says which)."""

    enabled = HiddenField("Enabled")
    next = HiddenField("Next")
