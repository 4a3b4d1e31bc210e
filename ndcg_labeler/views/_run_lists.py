"""The query string of a run list (runs page and API): search, tag, archive filter, sort, page."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ndcg_labeler.models import TestSet
from ndcg_labeler.services import ServiceError, read_page, runs, whole_number

_ARCHIVED = {"": None, "all": None, "yes": True, "true": True, "no": False, "false": False}


def list_filter(
    args: Mapping[str, str], per_page: int, max_per_page: int | None = None
) -> tuple[runs.RunFilter, int]:
    """(the filter, the page number) from ?q=&tag=&archived=&sort=&page= (and ?per_page= when
    `max_per_page` allows it); a ServiceError says what is malformed."""
    # read_page caps the page at 2**31: OFFSET (a signed 64-bit integer) never overflows.
    page = read_page(args.get("page"))
    if max_per_page is not None:
        per_page = whole_number(args.get("per_page", str(per_page)), "per_page", 1, max_per_page)
    archived = args.get("archived", "").strip().lower()
    if archived not in _ARCHIVED:
        raise ServiceError(f"archived must be yes, no or all, not '{archived}'")
    wanted = runs.RunFilter(
        search=args.get("q", "")[:200],
        tag=args.get("tag", "")[:64],
        archived=_ARCHIVED[archived],
        sort=args.get("sort", "oldest") or "oldest",
        limit=per_page,
        offset=(page - 1) * per_page,
    )
    return wanted.checked(), page


def shown_page(test_set: TestSet, wanted: runs.RunFilter, page: int) -> tuple[Any, int]:
    """(runs.find_runs' page, the page shown) for the runs page: a page past the end shows the
    last one, as every pager of the app does (the API answers the empty page instead)."""
    found = runs.find_runs(test_set, wanted)
    if found.runs or not found.total or page == 1:
        return found, page
    last = -(-found.total // wanted.limit)
    return runs.find_runs(test_set, replace(wanted, offset=(last - 1) * wanted.limit)), last
