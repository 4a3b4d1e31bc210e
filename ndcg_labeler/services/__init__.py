"""Use cases: load from the database, call scoring/formats, write back."""

import re


class ServiceError(ValueError):
    """A use case refused the input; the message is shown to the user as is."""


# Endpoint and judge names go into URLs (/endpoints/<name>) and command lines (fill:JUDGE), so
# they keep to characters that need no escaping there: no '/', '?', '#', '%' or ':'.
_URL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]*")


def url_name(kind: str, name: str | None, limit: int) -> str:
    """`name` with its runs of spaces made one, or a ServiceError naming the allowed characters."""
    name = " ".join((name or "").split())
    if len(name) > limit or not _URL_NAME.fullmatch(name):
        raise ServiceError(
            f"{kind} name must be 1–{limit} letters, digits, spaces, '.', '_' or '-', "
            f"starting with a letter or digit (not '{name[:limit]}')"
        )
    return name


from ndcg_labeler.services._db import paginate  # noqa: E402  (after ServiceError: no cycle)
from ndcg_labeler.services._progress import Cancelled, Progress, no_progress  # noqa: E402

__all__ = ["Cancelled", "Progress", "ServiceError", "no_progress", "paginate", "url_name"]
