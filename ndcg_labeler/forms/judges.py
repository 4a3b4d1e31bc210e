"""Machine judge forms: define a judge, run it on a test set's pairs, draw its audit sample."""

from __future__ import annotations

from collections.abc import Callable

from flask_wtf import FlaskForm
from wtforms import (
    BooleanField,
    Field,
    SelectField,
    SelectMultipleField,
    StringField,
    SubmitField,
    TextAreaField,
)
from wtforms.fields.choices import SelectChoice
from wtforms.validators import (
    DataRequired,
    InputRequired,
    Length,
    Optional,
    ValidationError,
)

from ndcg_labeler.forms.probes import budget_field, price_fields
from ndcg_labeler.services import audit_samples, corrections, judges, read_number, shown


def _number(label: str, default: object = "", mode: str = "numeric") -> StringField:
    """A number typed as text with a numeric keyboard: a browser sends a number input's
    unreadable text as "" (the default, silently), while a text input sends what was typed
    for the service (judges.read_settings) to refuse in the CLI's words, naming the
    setting's range. Empty: the default."""
    return StringField(label, default=str(default), render_kw={"inputmode": mode})


class JudgeForm(FlaskForm):
    """An admin defines an LLM judge (the API key stays in the server's environment)."""

    name = StringField("Name", validators=[DataRequired(), Length(max=judges.MAX_NAME)])
    base_url = StringField(
        "Base URL (OpenAI-compatible, e.g. http://127.0.0.1:8000/v1)",
        validators=[DataRequired(), Length(max=500)],
    )
    model = StringField("Model", validators=[DataRequired(), Length(max=200)])
    api_key_env = StringField(
        "Environment variable holding the API key (its name, e.g. OPENAI_API_KEY: names "
        "matching NDCG_SECRET_ENV, never the key)",
        validators=[Optional(), Length(max=100)],
    )
    temperature = _number("Temperature (0 to 2)", f"{judges.DEFAULTS['temperature']:g}", "decimal")
    max_tokens = _number("Max tokens", judges.DEFAULTS["max_tokens"])
    timeout = _number("Timeout (seconds)", f"{judges.DEFAULTS['timeout']:g}", "decimal")
    concurrency = _number("Concurrency", judges.DEFAULTS["concurrency"])
    requests_per_minute = _number(
        "Requests per minute (0: no limit)", judges.DEFAULTS["requests_per_minute"]
    )
    prompt_template = TextAreaField(
        "Prompt template (Jinja; empty: the default)", validators=[Optional()]
    )
    few_shot = _number(
        "Few-shot examples (K: human-graded pairs of the test set in each prompt; 0: none)",
        judges.DEFAULTS["few_shot"],
    )
    input_price, output_price = price_fields()
    submit = SubmitField("Add judge")

    NUMBERS = ("temperature", "max_tokens", "timeout", "concurrency", "requests_per_minute")

    def numbers(self) -> dict[str, str]:
        """The numeric settings as typed, for add_judge (empty: the default)."""
        return {name: self[name].data or "" for name in (*self.NUMBERS, "few_shot")}

    def validate(self, extra_validators: dict | None = None) -> bool:
        """The fields' own checks, then the service's check of the numbers, said on each field."""
        valid = super().validate(extra_validators)
        for name, message in judges.read_settings(**self.numbers())[1].items():
            self[name].errors.append(message)
            valid = False
        return valid


def _whole(what: str, low: int, high: int | None = None) -> Callable[[FlaskForm, Field], None]:
    """A validator of a whole number typed as text (empty passes: the field's default or its
    own check), refusing in one sentence that names the range and what was typed."""
    wanted = f"of at least {low}" if high is None else f"from {low} to {high}"

    def check(form: FlaskForm, field: Field) -> None:
        text = (field.data or "").strip()
        if not text:
            return
        value = read_number(text, whole=True)
        if isinstance(value, str) or value < low or (high is not None and value > high):
            raise ValidationError(f"{what} must be a whole number {wanted}, not {shown(value)}")

    return check


class RunJudgeForm(FlaskForm):
    """Run a judge on a choice of the test set's pairs."""

    pairs = SelectField(
        "Pairs",
        choices=[
            SelectChoice("unjudged", "Unjudged pairs of the pool"),
            SelectChoice("human", "Pairs people graded (for calibration)"),
            SelectChoice("all", "Every pair of the pool"),
            SelectChoice("sample", "A random sample"),
        ],
        default="unjudged",
    )
    # Text, not a number input: a browser sends unreadable text ("1,000") as "", which would
    # be the default sample of 100, silently.
    sample = StringField(
        "Sample size (empty: 100)",
        default="100",
        validators=[_whole("the sample size", 1)],
        render_kw={"inputmode": "numeric"},
    )
    max_cost = budget_field()
    submit = SubmitField("Run judge")


class AuditSampleForm(FlaskForm):
    """Draw a judge's audit sample of N queries, or extend it to N (admins)."""

    # Text, read by the service (audit_samples.draw_audit) as the CLI's --queries is: "four"
    # or "1.5" gets the sentence naming the test set's count, as 0 or 9 does.
    queries = StringField(
        "Queries in the sample (N)",
        validators=[InputRequired()],
        render_kw={"inputmode": "numeric"},
    )
    # Text, as the sample size: an unreadable seed sent as "" would draw (and store) a random
    # one.
    seed = StringField(
        "Seed (first draw only; empty: a random seed)",
        validators=[_whole("the seed", 0, audit_samples.MAX_SEED)],
        render_kw={"inputmode": "numeric"},
    )

    def seed_number(self) -> int | None:
        """The seed typed (checked by the field), None when empty."""
        text = (self.seed.data or "").strip()
        return int(text) if text else None

    reseed = BooleanField("Draw a new sample, replacing the stored one")
    submit = SubmitField("Draw sample")


class JudgeStateForm(FlaskForm):
    """Archive or restore a judge (one button; the CSRF token is the form)."""

    submit = SubmitField("Archive")


class JudgeSettingsForm(FlaskForm):
    """An admin changes where a judge is asked and how fast (the create form's fields and
    checks; empty: keep the current value)."""

    base_url = StringField(JudgeForm.base_url.args[0], validators=[Length(max=500)])
    timeout = _number("Timeout (seconds)", mode="decimal")
    concurrency = _number("Concurrency")
    requests_per_minute = _number("Requests per minute (0: no limit)")
    submit = SubmitField("Save settings")

    def settings(self) -> dict[str, str]:
        """The settings as typed, for edit_judge."""
        return {name: self[name].data or "" for name in judges.EDITABLE}

    def validate(self, extra_validators: dict | None = None) -> bool:
        """The fields' own checks, then the service's check of the numbers typed, on each field."""
        valid = super().validate(extra_validators)
        typed = {k: v for k, v in self.settings().items() if k != "base_url" and v.strip()}
        for name, message in judges.read_settings(**typed)[1].items():
            self[name].errors.append(message)
            valid = False
        return valid


class DeleteJudgeForm(FlaskForm):
    """Delete a judge with its machine labels: confirmed by typing its name."""

    confirm = StringField(
        "Type the judge's name to confirm", validators=[DataRequired(), Length(max=judges.MAX_NAME)]
    )
    submit = SubmitField("Delete the judge and its machine labels")


class AskAgainForm(FlaskForm):
    """Ask a judge again about pairs it answered under its current prompt version."""

    which = SelectField(
        "Answers to ask again",
        choices=[
            SelectChoice("failed,unparsed", "Failed or unparsed answers"),
            SelectChoice("failed", "Failed answers (no answer)"),
            SelectChoice("unparsed", "Unparsed answers (no readable grade)"),
            SelectChoice("all", "Every answer"),
        ],
        default="failed,unparsed",
    )
    max_cost = budget_field()
    submit = SubmitField("Ask again")


class FewShotForm(FlaskForm):
    """Change how many human-graded examples a judge's prompts carry (a new prompt version)."""

    # Text, read by the service (ensembles.set_few_shot) as `judges few-shot K` is.
    k = StringField(
        "Few-shot examples (K; 0: zero-shot)",
        validators=[InputRequired()],
        render_kw={"inputmode": "numeric"},
    )
    submit = SubmitField("Set few-shot examples")


class EnsembleForm(FlaskForm):
    """Define an ensemble of two or more judges."""

    name = StringField("Name", validators=[DataRequired(), Length(max=judges.MAX_NAME)])
    members = SelectMultipleField("Member judges (two or more)", choices=[])
    combine = SelectField(
        "Combine by",
        choices=[
            SelectChoice("median", "Median (of an even count, the lower middle grade)"),
            SelectChoice("majority", "Majority (a tie: the lower grade)"),
        ],
        default="median",
    )
    submit = SubmitField("Add ensemble")


class ResolveConflictForm(FlaskForm):
    """Close a "machine vs people" conflict, saying who was right."""

    resolution = SelectField(
        "Who was right",
        choices=[SelectChoice(k, v) for k, v in corrections.RESOLUTIONS.items()],
    )
    submit = SubmitField("Resolve")
