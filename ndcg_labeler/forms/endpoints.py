"""Retriever endpoint forms: define an endpoint, try one query, fetch a run."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import (
    BooleanField,
    Field,
    IntegerField,
    SelectField,
    StringField,
    SubmitField,
    TextAreaField,
)
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, Length, NumberRange, Optional, ValidationError

from ndcg_labeler.services import ServiceError, endpoints, runs

PRESET_CHOICES = [
    SelectChoice("", "Custom (JMESPath below)"),
    SelectChoice("elasticsearch", "Elasticsearch"),
    SelectChoice("opensearch", "OpenSearch"),
    SelectChoice("solr", "Solr"),
    SelectChoice("vespa", "Vespa"),
    SelectChoice("list", "A plain JSON list"),
]


class EndpointForm(FlaskForm):
    """An admin defines a retriever endpoint; secrets stay in environment variables."""

    name = StringField("Name", validators=[DataRequired(), Length(max=endpoints.MAX_NAME)])
    url = StringField("URL, with {query}, {qid} and {k}", validators=[DataRequired()])
    method = SelectField(
        "Method", choices=[SelectChoice("GET", "GET"), SelectChoice("POST", "POST")]
    )
    body = TextAreaField("JSON body template (POST)", validators=[Optional()])
    headers = TextAreaField(
        "Headers, one 'Name: value' a line; ${ENV_VAR} for secrets (names matching NDCG_SECRET_ENV)"
    )
    preset = SelectField("Response shape", choices=PRESET_CHOICES, default="")
    text_field = StringField("Text field (with a preset)", validators=[Optional()])
    hits = StringField("Hits (JMESPath)", validators=[Optional()])
    id_expr = StringField("Docid of a hit (JMESPath)", validators=[Optional()])
    score = StringField("Score of a hit (JMESPath, optional)", validators=[Optional()])
    text = StringField("Chunk text of a hit (JMESPath, optional)", validators=[Optional()])
    submit = SubmitField("Add endpoint")


class TryForm(FlaskForm):
    """Ask one endpoint for one query and show the mapped results."""

    query = StringField("Query text", validators=[DataRequired(), Length(max=2000)])
    submit = SubmitField("Try")


class FetchForm(FlaskForm):
    """Fetch a run of every query, as a background job."""

    run = StringField("Run name", validators=[DataRequired(), Length(max=runs.MAX_NAME)])
    k = IntegerField(
        "Results per query",
        default=endpoints.DEFAULT_K,
        validators=[NumberRange(1, runs.MAX_DEPTH)],
    )
    accept_partial = BooleanField("Store the run even if some queries fail (they are listed)")
    submit = SubmitField("Fetch run")


class ScheduleForm(FlaskForm):
    """Fetch, score and gate a run on a schedule into a series (empty schedule: none)."""

    schedule = StringField(
        "Schedule (UTC)",
        validators=[Optional(), Length(max=100)],
        description='"daily 03:00" or a cron expression such as "30 2 * * 1-5"; empty: none.',
    )
    # No Optional(): it would stop validate_series, which says an empty one is missing.
    series = StringField("Series", validators=[Length(max=runs.MAX_NAME)])
    k = IntegerField(
        "Results per query",
        default=endpoints.DEFAULT_K,
        validators=[NumberRange(1, runs.MAX_DEPTH)],
    )
    submit = SubmitField("Save schedule")

    def validate_series(self, field: Field) -> None:
        """A schedule needs a valid series name: said on this field, not the schedule's."""
        try:
            name = runs.clean_series(field.data)
        except ServiceError as exc:
            raise ValidationError(str(exc)) from exc
        if (self.schedule.data or "").strip() and not name:
            raise ValidationError("a schedule needs the series its runs join")
