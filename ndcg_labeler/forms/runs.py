"""Run forms: upload a run file (or a Quepid snapshot) with a name, depth and notes."""

from __future__ import annotations

from flask_wtf import FlaskForm
from flask_wtf.file import FileField, FileRequired
from wtforms import (
    Field,
    IntegerField,
    SelectField,
    StringField,
    SubmitField,
    TextAreaField,
)
from wtforms.fields.choices import SelectChoice
from wtforms.validators import Length, NumberRange, Optional, ValidationError

from ndcg_labeler.services import ServiceError, runs


class RunUploadForm(FlaskForm):
    """An admin uploads a retriever's run to a test set."""

    file = FileField(
        "Run file (TREC, CSV/TSV, JSONL or MS MARCO; gzip accepted)",
        validators=[FileRequired("Choose a run file.")],
    )
    # The CLI's --format and the API's `format`: empty, one of our run formats (detected).
    format = SelectField(
        "File format",
        choices=[
            SelectChoice("", "A run: TREC, CSV/TSV, JSONL or MS MARCO (detected)"),
            SelectChoice(
                "quepid-snapshot", "A Quepid case snapshot CSV (queries named by their text)"
            ),
        ],
        default="",
    )
    name = StringField(
        "Run name",
        validators=[Optional(), Length(max=runs.MAX_NAME)],
        description="Left empty, the file's name is used (bm25.trec.gz names the run bm25).",
    )
    depth = IntegerField(
        "Depth (ranked chunks kept per query)",
        validators=[Optional(), NumberRange(min=1, max=runs.MAX_DEPTH)],
    )
    notes = TextAreaField("Notes", validators=[Optional(), Length(max=runs.MAX_NOTES)])
    series = StringField("Series", validators=[Optional(), Length(max=runs.MAX_NAME)])
    submit = SubmitField("Upload run")

    def validate_series(self, field: Field) -> None:
        """The series name's own rules, on its field (not the file's, after the upload)."""
        try:
            runs.clean_series(field.data)
        except ServiceError as exc:
            raise ValidationError(str(exc)) from exc


class TokenForm(FlaskForm):
    """Create (or replace) one's personal API token."""

    submit = SubmitField("Create a new API token")


class RevokeTokenForm(FlaskForm):
    """Remove one's personal API token."""

    submit = SubmitField("Remove my API token")
