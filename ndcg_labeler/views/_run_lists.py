"""The query string of a run list (runs page and API): search, tag, archive filter, sort, page."""

from __future__ import annotations

from collections.abc import Mapping

from ndcg_labeler.services import ServiceError, runs

_ARCHIVED = {"": None, "all": None, "yes": True, "true": True, "no": False, "false": False}
# OFFSET is a signed 64-bit integer: a page number is capped well below where it overflows.
_LAST_PAGE = 2**31


def _digits(text: str) -> bool:
    """True for ASCII digits only: str.isdigit() also takes '²', which int() refuses."""
    return text.isascii() and text.isdigit()


def list_filter(
    args: Mapping[str, str], per_page: int, max_per_page: int | None = None
) -> tuple[runs.RunFilter, int]:
    """(the filter, the page number) from ?q=&tag=&archived=&sort=&page= (and ?per_page= when
    `max_per_page` allows it); a ServiceError says what is malformed."""
    page_text = args.get("page", "1").strip() or "1"
    if not (_digits(page_text) and 1 <= int(page_text) <= _LAST_PAGE):
        raise ServiceError(f"page must be a whole number of at least 1, not '{page_text}'")
    if max_per_page is not None:
        size = args.get("per_page", str(per_page)).strip()
        if not (_digits(size) and 1 <= int(size) <= max_per_page):
            raise ServiceError(f"per_page must be a whole number from 1 to {max_per_page}")
        per_page = int(size)
    archived = args.get("archived", "").strip().lower()
    if archived not in _ARCHIVED:
        raise ServiceError(f"archived must be yes, no or all, not '{archived}'")
    page = int(page_text)
    wanted = runs.RunFilter(
        search=args.get("q", "")[:200],
        tag=args.get("tag", "")[:64],
        archived=_ARCHIVED[archived],
        sort=args.get("sort", "oldest") or "oldest",
        limit=per_page,
        offset=(page - 1) * per_page,
    )
    return wanted.checked(), page
