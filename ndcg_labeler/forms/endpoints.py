"""Retriever endpoint forms: define an endpoint, try one query, fetch a run."""

from __future__ import annotations

from typing import Any

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
    # Text inputs with a numeric keyboard, not number inputs: a browser sends a number input's
    # unreadable text as "" (the default, silently), while a text input sends what was typed
    # for the service (read_limits) to refuse in the CLI's words, naming the limit's range.
    # Empty: the default.
    concurrency = StringField(
        "Concurrency (queries asked at a time)",
        default=str(endpoints.DEFAULT_CONCURRENCY),
        render_kw={"inputmode": "numeric"},
    )
    requests_per_minute = StringField(
        "Requests per minute (0: no limit)",
        default=str(endpoints.DEFAULT_RPM),
        render_kw={"inputmode": "numeric"},
    )
    timeout = StringField(
        "Timeout per request (seconds)",
        default=str(endpoints.DEFAULT_TIMEOUT),
        render_kw={"inputmode": "decimal"},
    )
    submit = SubmitField("Add endpoint")

    def limits(self) -> dict[str, Any]:
        """concurrency, requests_per_minute and timeout as typed, the defaults where empty."""
        given = (self.concurrency.data, self.requests_per_minute.data, self.timeout.data)
        defaults = (endpoints.DEFAULT_CONCURRENCY, endpoints.DEFAULT_RPM, endpoints.DEFAULT_TIMEOUT)
        names = ("concurrency", "requests_per_minute", "timeout")
        return {
            name: default if value is None or str(value).strip() == "" else value
            for name, value, default in zip(names, given, defaults, strict=True)
        }

    def validate(self, extra_validators: dict | None = None) -> bool:
        """The fields' own checks, then the service's check of the limits, said on each field."""
        valid = super().validate(extra_validators)
        for name, message in endpoints.limit_errors(**self.limits()).items():
            self[name].errors.append(message)
            valid = False
        return valid

    def settings(self) -> dict[str, Any]:
        """The endpoint as the form gives it, in add_endpoint's (and edit_endpoint's) keywords."""
        return {
            "name": self.name.data or "",
            "url": self.url.data or "",
            "method": self.method.data or "GET",
            "body": self.body.data or "",
            "headers": [h for h in (self.headers.data or "").splitlines() if h.strip()],
            "hits": self.hits.data or "",
            "id_expr": self.id_expr.data or "",
            "score": self.score.data or "",
            "text": self.text.data or "",
            "preset_name": self.preset.data or "",
            "text_field": self.text_field.data or "",
            **self.limits(),
        }


class EndpointEditForm(EndpointForm):
    """The add form, prefilled with an endpoint; its header values are never shown (they may
    be secret), so empty headers keep the current ones and a checkbox removes them."""

    clear_headers = BooleanField("Remove all headers")
    submit = SubmitField("Save changes")

    @classmethod
    def of(cls, settings: dict[str, Any]) -> EndpointEditForm:
        """The form for an endpoint's settings (endpoints.settings_of); posted data wins."""
        data = {key: settings[key] for key in ("name", "url", "method", "body", "hits")}
        data |= {"id_expr": settings["id_expr"], "score": settings["score"]}
        data |= {"text": settings["text"], "concurrency": settings["concurrency"]}
        data |= {"requests_per_minute": settings["requests_per_minute"]}
        return cls(data={**data, "timeout": settings["timeout"], "preset": "", "headers": ""})

    def settings(self) -> dict[str, Any]:
        """The changes for edit_endpoint: headers only when typed in or removed."""
        given = super().settings()
        if self.clear_headers.data:
            given["headers"] = []
        elif not given["headers"]:
            del given["headers"]
        return given


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
