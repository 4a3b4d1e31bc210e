"""Integer arguments of a page's query string or form: services.whole_number, a 400 if not one."""

from __future__ import annotations

from typing import TypeVar

from flask import abort, request

from ndcg_labeler.services import MAX_WHOLE, ServiceError, whole_number

Default = TypeVar("Default", int, None)


def whole_arg(name: str, default: Default, low: int = 0, high: int = MAX_WHOLE) -> int | Default:
    """request.values[name] as a whole number (`default` when absent or blank); else a 400
    that says which argument was wrong and why."""
    text = request.values.get(name, "")
    if not text.strip():
        return default
    try:
        return whole_number(text, name, low, high)
    except ServiceError as exc:
        abort(400, description=str(exc))
