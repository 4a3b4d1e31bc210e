"""The floor under `flask --app app --help`: a Flask-tutorial-shaped app on the same libraries.

One model, one blueprint, one view, and the extensions the product uses (Flask-SQLAlchemy,
Flask-Login, Flask-WTF's CSRF; Flask-Migrate is left out, as the app attaches it on first
need), built by `create_app` in one go as Flask's
tutorial builds its app. bench.cli times creating it in a new process beside the real app's
start-up: what a plain factory on this stack costs before the first line of the product.
"""

from __future__ import annotations

from flask import Blueprint, Flask
from flask_login import LoginManager
from flask_sqlalchemy import SQLAlchemy
from flask_wtf import CSRFProtect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    """The declarative base of the one model."""


db = SQLAlchemy(model_class=Base)
pages = Blueprint("pages", __name__)


class Item(db.Model):  # type: ignore[name-defined]
    """A single table, so that the ORM configures a mapper as a real app does."""

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]


@pages.get("/")
def index() -> str:
    """The one page."""
    return "ok"


def create_app() -> Flask:
    """The tutorial's factory: configuration, extensions, blueprint."""
    app = Flask(__name__)
    app.config.update(SECRET_KEY="floor", SQLALCHEMY_DATABASE_URI="sqlite://")
    db.init_app(app)
    LoginManager(app)
    CSRFProtect(app)
    app.register_blueprint(pages)
    return app


if __name__ == "__main__":
    create_app()
