"""Judge prompts: versions by sha256 of the text, a sandbox for the templates admins type."""

from __future__ import annotations

import hashlib

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import PromptVersion
from ndcg_labeler.services import ServiceError, judges
from ndcg_labeler.services.judges.prompts import check_template, prompt_version


def _versions() -> dict[str, str]:
    rows = db.session.execute(sa.select(PromptVersion.sha256, PromptVersion.template))
    return dict(rows.all())


def test_each_distinct_template_text_is_one_version(app: Flask) -> None:
    custom = "Grade {{ passage }} for {{ query }} from 0 to {{ scale_max }}.\n##final score: N"
    with app.app_context():
        default_sha = prompt_version("")
        custom_sha = prompt_version(custom)
        assert prompt_version(custom) == custom_sha  # the same text: the same version
        db.session.commit()
        stored = _versions()
    assert default_sha == hashlib.sha256(judges.DEFAULT_TEMPLATE.encode()).hexdigest()
    assert custom_sha == hashlib.sha256(custom.encode()).hexdigest()
    assert stored == {default_sha: judges.DEFAULT_TEMPLATE, custom_sha: custom}


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "not allowed"),
        ("{{ query.__class__ }}{{ grades.__init__.__globals__ }}", "not allowed"),
        ("{% for g in grades %}{{ g.name }", "does not compile"),
        # a misspelt variable used to render as "": prompts went out without the passage
        ("{{ query }} {{ passge }}", "undefined name: 'passge' is undefined .*passage"),
        ("{% for g in grades %}{{ g.nmae }}{% endfor %}", "undefined name"),
    ],
)
def test_unsafe_or_broken_templates_are_refused(app: Flask, template: str, reason: str) -> None:
    with app.app_context(), pytest.raises(ServiceError, match=reason):
        check_template(template)


def test_the_default_and_a_plain_custom_template_are_accepted(app: Flask) -> None:
    with app.app_context():
        check_template(judges.DEFAULT_TEMPLATE)
        check_template("{{ query }} / {{ passage }} / {{ narrative }} ##final score: N")
        check_template("{{ extra | default('') }}{% if extra is defined %}x{% endif %}")
