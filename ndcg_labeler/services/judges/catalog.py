"""Defining judges: name, endpoint, model, key variable, sampling and speed settings."""

from __future__ import annotations

import re

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judge, User
from ndcg_labeler.services import ServiceError, audit, outbound, url_name
from ndcg_labeler.services.judges.prompts import check_template
from ndcg_labeler.services.judges.settings import DEFAULTS, read_settings

MAX_NAME = 100  # Judge.name's column


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
    temperature: float | str = DEFAULTS["temperature"],
    max_tokens: int | str = DEFAULTS["max_tokens"],
    timeout: float | str = DEFAULTS["timeout"],
    concurrency: int | str = DEFAULTS["concurrency"],
    requests_per_minute: int | str = DEFAULTS["requests_per_minute"],
    few_shot: int | str = DEFAULTS["few_shot"],
    actor: User | None = None,
) -> Judge:
    """Create a judge after checking every setting (the key itself is never stored); audited
    as done by `actor` (None: the command line). The numbers may be text as typed (the form's,
    the CLI's; empty: the default): read_settings reads them."""
    name = url_name("a judge", name, MAX_NAME)
    if db.session.scalar(sa.select(Judge.id).where(Judge.name == name)) is not None:
        raise ServiceError(f"a judge named '{name}' already exists")
    if not re.match(r"^https?://", base_url or ""):
        raise ServiceError("the base URL must start with http:// or https://")
    if not (model or "").strip():
        raise ServiceError("name the model the endpoint serves")
    if api_key_env:
        outbound.check_secret_name(api_key_env)
    numbers, wrong = read_settings(
        temperature=temperature,
        max_tokens=max_tokens,
        timeout=timeout,
        concurrency=concurrency,
        requests_per_minute=requests_per_minute,
        few_shot=few_shot,
    )
    if wrong:
        raise ServiceError("; ".join(wrong.values()))
    if prompt_template:
        check_template(prompt_template)
    judge = Judge(
        name=name,
        base_url=base_url.rstrip("/"),
        model=model.strip(),
        api_key_env=api_key_env,
        prompt_template=prompt_template,
        temperature=float(numbers["temperature"]),
        max_tokens=int(numbers["max_tokens"]),
        timeout=float(numbers["timeout"]),
        concurrency=int(numbers["concurrency"]),
        requests_per_minute=int(numbers["requests_per_minute"]),
        few_shot=int(numbers["few_shot"]),
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
        few_shot=judge.few_shot,
    )
    db.session.commit()
    return judge


def get_judge(judge_id: int) -> Judge | None:
    """The judge with this id, or None."""
    return db.session.get(Judge, judge_id)
