"""Test set forms: create, settings (grade names, guidelines, policy), annotators and import."""

from __future__ import annotations

from flask_wtf import FlaskForm
from flask_wtf.file import FileField
from wtforms import (
    BooleanField,
    Form,
    FormField,
    IntegerField,
    SelectField,
    SelectMultipleField,
    StringField,
    SubmitField,
    TextAreaField,
)
from wtforms.fields import Field, FieldList
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, InputRequired, Length, NumberRange, Optional
from wtforms.widgets import CheckboxInput, ListWidget

from ndcg_labeler.services import imports, testsets

SCALE_CHOICES = [
    SelectChoice("3", "0–3 (four grades)"),
    SelectChoice("4", "0–4 (five grades)"),
]


class TestSetCreateForm(FlaskForm):
    """An admin creates an empty test set."""

    __test__ = False  # not a pytest class

    name = StringField("Name", validators=[DataRequired(), Length(max=testsets.MAX_NAME)])
    scale = SelectField("Grade scale", choices=SCALE_CHOICES, default="3")
    submit = SubmitField("Create test set")


class GradeForm(Form):
    """Name and one-line definition of one grade (a sub-form: the outer form carries CSRF)."""

    name = StringField("Name", validators=[DataRequired(), Length(max=testsets.MAX_GRADE_NAME)])
    definition = StringField(
        "Definition", validators=[Optional(), Length(max=testsets.MAX_DEFINITION)]
    )


class SettingsForm(FlaskForm):
    """Editable settings; the view sets the grade-dependent choices."""

    name = StringField("Name", validators=[DataRequired(), Length(max=testsets.MAX_NAME)])
    grades = FieldList(
        FormField(GradeForm),
        min_entries=min(testsets.SCALES) + 1,
        max_entries=max(testsets.SCALES) + 1,
    )
    guidelines = TextAreaField("Guidelines (Markdown)", validators=[Length(max=100_000)])
    aggregation = SelectField("Aggregation of several annotators' grades")
    relevance_threshold = SelectField("Relevant from grade (for binary measures)")
    judgments_per_pair = IntegerField(
        "Judgments wanted per pair",
        validators=[InputRequired(), NumberRange(min=1, max=testsets.MAX_JUDGMENTS_PER_PAIR)],
    )
    disagreement_threshold = IntegerField(
        "Flag a pair when grades differ by at least",
        validators=[InputRequired(), NumberRange(min=1, max=max(testsets.SCALES))],
    )
    show_machine_suggestions = BooleanField(
        "Show machine judges' grades to annotators while they label"
    )
    series_separator = StringField(
        "Runs join the series named by their name up to the first",
        validators=[Length(max=8)],
    )
    submit = SubmitField("Save settings")

    def fit_scale(self, scale_max: int) -> None:
        """Bound the disagreement threshold by the test set's own scale: the class allows the
        largest scale's, which a 0–3 set would state ("between 1 and 4") and refuse later."""
        field = self.disagreement_threshold
        field.validators = [InputRequired(), NumberRange(min=1, max=scale_max)]
        field.flags.max = scale_max  # the input's max attribute

    def field_for(self, setting: str | None) -> Field:
        """The field a refusal about `setting` (a ServiceError's field: a Settings name, or
        grade_labels[.N[.name|definition]]) is shown under; the name when it names none."""
        if setting and setting.startswith("grade_labels"):
            _, _, rest = setting.partition(".")
            grade, _, part = rest.partition(".")
            entries = list(self.grades)
            entry = entries[int(grade)] if grade.isdigit() and int(grade) < len(entries) else None
            return getattr((entry or entries[0]).form, part or "name")
        found = self._fields.get(setting or "")
        return found if found is not None and found is not self.submit else self.name


class MultiCheckboxField(SelectMultipleField):
    """Several checkboxes, one per choice."""

    widget = ListWidget(prefix_label=False)
    option_widget = CheckboxInput()


class AnnotatorsForm(FlaskForm):
    """Which annotators may label the test set; the view fills the choices."""

    annotators = MultiCheckboxField("Annotators", coerce=int)
    submit = SubmitField("Save annotators")


class ImportForm(FlaskForm):
    """Up to four files imported together, all or nothing."""

    queries = FileField("Queries (BEIR queries.jsonl, TREC topics TSV, or CSV qid,text)")
    corpus = FileField("Chunks (BEIR corpus.jsonl, or CSV docid,text[,title])")
    pool = FileField("Pairs to judge (TREC run, or TSV/CSV qid,docid)")
    qrels = FileField("Existing judgments (TREC qrels, or BEIR qrels TSV)")
    source = StringField(
        "Name of the judgments' source", validators=[Optional(), Length(max=imports.MAX_SOURCE)]
    )
    only_referenced = BooleanField(
        "Keep only the chunks that the pools, qrels and runs name (a large corpus)"
    )
    submit = SubmitField("Import")


PEER_CHOICES = [
    SelectChoice("quepid", "Quepid judgments CSV (query, docid, rating)"),
    SelectChoice("srw-judgments", "OpenSearch SRW judgment list (JSON)"),
    SelectChoice("srw-queries", "OpenSearch SRW query set (JSON or JSON lines)"),
    SelectChoice("ir-datasets", "ir_datasets dataset (from the server's local cache)"),
]


class PeerImportForm(FlaskForm):
    """One file from Quepid or OpenSearch SRW, or an ir_datasets name, imported all or nothing."""

    fmt = SelectField("What to import", choices=PEER_CHOICES, validators=[InputRequired()])
    file = FileField("File (Quepid or SRW)")
    dataset = StringField("ir_datasets name", validators=[Optional(), Length(max=200)])
    rating_map = StringField(
        "Rating map (Quepid and SRW judgments)", validators=[Optional(), Length(max=500)]
    )
    source = StringField(
        "Name of the judgments' source", validators=[Optional(), Length(max=imports.MAX_SOURCE)]
    )
    submit = SubmitField("Import peer data")
