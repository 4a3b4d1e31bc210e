"""Defining judges: name, endpoint, model, key variable, sampling and speed settings."""

from __future__ import annotations

import re

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judge, User
from ndcg_labeler.services import ServiceError, audit, outbound, url_name
from ndcg_labeler.services.judges.prompts import check_template

DEFAULT_MAX_TOKENS = 512  # tokens a judge may generate per answer, unless told otherwise
# The largest settings add_judge accepts (and the judge form's ranges).
MAX_NAME = 100  # Judge.name's column
MAX_TOKENS = 100_000
MAX_CONCURRENCY = 64  # requests in flight
MAX_TIMEOUT = 600  # seconds per request


def list_judges(*, archived: bool = False) -> list[Judge]:
    """The judges in use, by name; with `archived`, the archived ones too."""
    stmt = sa.select(Judge).order_by(Judge.name)
    if not archived:
        stmt = stmt.where(Judge.archived_at.is_(None))
    return list(db.session.scalars(stmt))


def require_judge(name: str) -> Judge:
    """The judge with this name, or a ServiceError naming it."""
    judge = db.session.scalar(sa.select(Judge).where(Judge.name == name))
    if judge is None:
        raise ServiceError(f"unknown judge '{name}'")
    return judge


def add_judge(
    name: str,
    base_url: str,
    model: str,
    *,
    api_key_env: str = "",
    prompt_template: str = "",
    temperature: float = 0.0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    timeout: float = 60.0,
    concurrency: int = 8,
    requests_per_minute: int = 0,
    few_shot: int = 0,
    actor: User | None = None,
) -> Judge:
    """Create a judge after checking every setting (the key itself is never stored); audited
    as done by `actor` (None: the command line)."""
    name = url_name("a judge", name, MAX_NAME)
    if db.session.scalar(sa.select(Judge.id).where(Judge.name == name)) is not None:
        raise ServiceError(f"a judge named '{name}' already exists")
    if not re.match(r"^https?://", base_url or ""):
        raise ServiceError("the base URL must start with http:// or https://")
    if not (model or "").strip():
        raise ServiceError("name the model the endpoint serves")
    if api_key_env:
        outbound.check_secret_name(api_key_env)
    if not 0.0 <= temperature <= 2.0:
        raise ServiceError("temperature must be between 0 and 2")
    if not 1 <= max_tokens <= MAX_TOKENS or not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ServiceError(f"max tokens must be 1–{MAX_TOKENS} and concurrency 1–{MAX_CONCURRENCY}")
    if not 0 < timeout <= MAX_TIMEOUT:
        raise ServiceError(f"the timeout must be more than 0 and at most {MAX_TIMEOUT} s")
    if requests_per_minute < 0:
        raise ServiceError("requests per minute must be at least 0 (0: no limit)")
    if prompt_template:
        check_template(prompt_template)
    from ndcg_labeler.services import ensembles  # it builds on this package: imported late

    ensembles.check_few_shot(few_shot)
    judge = Judge(
        name=name,
        base_url=base_url.rstrip("/"),
        model=model.strip(),
        api_key_env=api_key_env,
        prompt_template=prompt_template,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout=timeout,
        concurrency=concurrency,
        requests_per_minute=requests_per_minute,
        few_shot=few_shot,
    )
    db.session.add(judge)
    db.session.flush()  # the judge's id for its audit event, in the same transaction
    audit.record(
        actor,
        "judge.create",
        "judge",
        judge.id,
        name=name,
        base_url=judge.base_url,
        model=judge.model,
        api_key_env=api_key_env,  # the variable's name: the key itself is never read here
        few_shot=few_shot,
    )
    db.session.commit()
    return judge


def get_judge(judge_id: int) -> Judge | None:
    """The judge with this id, or None."""
    return db.session.get(Judge, judge_id)
