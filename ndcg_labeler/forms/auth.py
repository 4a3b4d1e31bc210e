"""Login, password change and user administration forms."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import BooleanField, PasswordField, SelectField, StringField, SubmitField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, EqualTo, Length, Optional, Regexp

from ndcg_labeler.services import accounts

# User.username's column.
MAX_USERNAME = 80
ROLE_CHOICES = [SelectChoice("annotator", "Annotator"), SelectChoice("admin", "Admin")]


class LoginForm(FlaskForm):
    """Username and password."""

    username = StringField("Username", validators=[DataRequired(), Length(max=MAX_USERNAME)])
    password = PasswordField("Password", validators=[DataRequired()])
    remember = BooleanField("Keep me signed in")
    submit = SubmitField("Log in")


class ChangePasswordForm(FlaskForm):
    """Change one's own password; the current one is required."""

    current = PasswordField("Current password", validators=[DataRequired()])
    new = PasswordField(
        "New password", validators=[DataRequired(), Length(min=accounts.MIN_PASSWORD)]
    )
    confirm = PasswordField(
        "Repeat new password", validators=[DataRequired(), EqualTo("new", "Passwords differ.")]
    )
    submit = SubmitField("Change password")


class PreferencesForm(FlaskForm):
    """Per-user preferences."""

    shortcuts_enabled = BooleanField("Single-key shortcuts while labeling")
    submit = SubmitField("Save preferences")


class UserCreateForm(FlaskForm):
    """An admin creates an account."""

    username = StringField(
        "Username",
        validators=[
            DataRequired(),
            Length(max=MAX_USERNAME),
            Regexp(
                r"^[A-Za-z0-9_.@-]+$",
                message="Use the letters A–Z (no accents), digits and _ . @ - only.",
            ),
        ],
    )
    role = SelectField("Role", choices=ROLE_CHOICES)
    password = PasswordField(
        "Password", validators=[DataRequired(), Length(min=accounts.MIN_PASSWORD)]
    )
    submit = SubmitField("Create user")


class UserEditForm(FlaskForm):
    """An admin changes a user's role, activity or password."""

    role = SelectField("Role", choices=ROLE_CHOICES)
    active = BooleanField("Active (may log in)")
    password = PasswordField(
        "New password (leave empty to keep)",
        validators=[Optional(), Length(min=accounts.MIN_PASSWORD)],
    )
    submit = SubmitField("Save")
