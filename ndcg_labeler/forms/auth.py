"""Login, password change and user administration forms."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import BooleanField, Field, PasswordField, SelectField, StringField, SubmitField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, EqualTo, Length, Optional, ValidationError

from ndcg_labeler.services import ServiceError, accounts

ROLE_CHOICES = [SelectChoice("annotator", "Annotator"), SelectChoice("admin", "Admin")]


class LoginForm(FlaskForm):
    """Username and password."""

    username = StringField(
        "Username", validators=[DataRequired(), Length(max=accounts.MAX_USERNAME)]
    )
    password = PasswordField("Password", validators=[DataRequired()])
    remember = BooleanField("Keep me signed in")
    submit = SubmitField("Log in")


class ChangePasswordForm(FlaskForm):
    """Change one's own password; the current one is required."""

    current = PasswordField("Current password", validators=[DataRequired()])
    # No length rule of its own: the password rules (accounts) say it, in their words.
    new = PasswordField("New password", validators=[DataRequired()])
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

    # No rule of its own: accounts.check_username is the one `flask user create` follows too.
    username = StringField("Username")
    role = SelectField("Role", choices=ROLE_CHOICES)
    # The password rules (accounts) refuse a short one, in the words the CLI uses too.
    password = PasswordField("Password", validators=[DataRequired()])
    submit = SubmitField("Create user")

    def validate_username(self, field: Field) -> None:
        """accounts.check_username, so the page shows its reason beside the other fields'."""
        try:
            accounts.check_username(field.data or "")
        except ServiceError as exc:
            raise ValidationError(str(exc)) from None


class UserEditForm(FlaskForm):
    """An admin changes a user's role, activity or password."""

    role = SelectField("Role", choices=ROLE_CHOICES)
    active = BooleanField("Active (may log in)")
    password = PasswordField("New password (leave empty to keep)", validators=[Optional()])
    submit = SubmitField("Save")


class RevokeTheirTokenForm(FlaskForm):
    """An admin removes someone's API token (a leaked one) without deactivating them."""

    submit = SubmitField("Revoke their API token")
