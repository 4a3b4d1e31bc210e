"""Defining judges: name, endpoint, model, key variable, sampling and speed settings; and
changing a judge's endpoint and speed settings afterwards (its answers stay as they are)."""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judge, User
from ndcg_labeler.services import ServiceError, audit, outbound, url_name
from ndcg_labeler.services.judges.prompts import check_template
from ndcg_labeler.services.judges.settings import DEFAULTS, read_settings

MAX_NAME = 100  # Judge.name's column
MAX_URL = 500  # Judge.base_url's column
# What edit_judge may change: where the judge is asked and how fast. Answers stored before keep
# their grades; the model and the prompt stay, as they are what the answers were given by.
EDITABLE = ("base_url", "concurrency", "timeout", "requests_per_minute")


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
    base_url = check_base_url(base_url)
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
        base_url=base_url,
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


def check_base_url(base_url: str) -> str:
    """The base URL as stored (no trailing slash), or a ServiceError saying what it must be.
    Where it may point (not this server, not a private address unless allowed) is the outbound
    policy's decision at each request, as for every judge."""
    if not re.match(r"^https?://", base_url or ""):
        raise ServiceError("the base URL must start with http:// or https://")
    if len(base_url) > MAX_URL:
        raise ServiceError(f"the base URL must be at most {MAX_URL} characters")
    return base_url.rstrip("/")


def edit_judge(judge: Judge, actor: User | None = None, **given: Any) -> dict[str, list[Any]]:
    """Change the judge's settings named in EDITABLE (None or empty text: keep), checked and
    refused in add_judge's words; audited as done by `actor` (None: the command line). The
    settings changed, each as [old, new] (empty when nothing changed: no audit event)."""
    if judge.ensemble:  # asked through its members: their settings are the ones that count
        raise ServiceError(f"{judge.name} is an ensemble: change the settings of its members")
    unknown = sorted(set(given) - set(EDITABLE))
    if unknown:
        raise ServiceError(f"a judge's {', '.join(unknown)} cannot be changed here")
    typed = {
        name: value
        for name, value in given.items()
        if value is not None and not (isinstance(value, str) and not value.strip())
    }
    new: dict[str, Any] = {}
    if "base_url" in typed:
        new["base_url"] = check_base_url(str(typed.pop("base_url")).strip())
    numbers, wrong = read_settings(**typed)
    if wrong:
        raise ServiceError("; ".join(wrong.values()))
    new.update(numbers)
    changed = {
        name: [getattr(judge, name), value]
        for name, value in new.items()
        if getattr(judge, name) != value
    }
    if not changed:
        return {}
    for name, (_, value) in changed.items():
        setattr(judge, name, value)
    audit.record(actor, "judge.settings", "judge", judge.id, name=judge.name, changed=changed)
    db.session.commit()
    return changed
