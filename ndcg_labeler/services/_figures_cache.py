"""The figures cache: figures stored per test set, kind, options and version, in the
figures_cache table (the team pages' figures and run comparisons' statistics).

A page asks `cached()` for its figures. Fresh stored figures (same version) are returned at
once. Stale ones are recomputed inline when the test set is small; when it has more graded
judgments than NDCG_FIGURES_CACHE_INLINE_MAX, the page gets the last figures flagged `updating`
and ONE background thread recomputes them: the process that sets `refreshing_since` on the row
(a conditional UPDATE, so one winner among every server process) starts it. A thread that died
leaves a lease that lapses after LEASE. A large set's FIRST figures are computed in the
background too when the caller says it can show a "computing" page (`background=True`, the HTML
pages): a placeholder row holds the lease and `Computing` is raised until they are in.
The figures are stored as JSON with type tags for our own dataclasses only (no pickle:
nothing but known classes is ever rebuilt). `Kept` holds a few figures in a process's memory
in front of the table (compare pages polled every second).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

import sqlalchemy as sa
from flask import current_app

from ndcg_labeler.config import figures_cache_inline_max
from ndcg_labeler.extensions import db
from ndcg_labeler.models import FiguresCache, TestSet, utcnow
from ndcg_labeler.scoring import AgreementSummary, CohenPair, ConsensusAgreement
from ndcg_labeler.services import tallies
from ndcg_labeler.services._db import insert_if_absent, transaction

T = TypeVar("T")
LEASE = timedelta(minutes=10)
log = logging.getLogger(__name__)
_KNOWN: dict[str, type] = {
    cls.__name__: cls for cls in (AgreementSummary, CohenPair, ConsensusAgreement)
}


def register(*classes: type) -> None:
    """Allow these dataclasses in stored figures (each team module registers its own)."""
    _KNOWN.update({cls.__name__: cls for cls in classes})


# The version of a placeholder row: its first figures are still being computed.
FIRST = ""


class Computing(Exception):
    """A large set's first figures are being computed in the background; ask again soon."""

    def __init__(self, judgments: int) -> None:
        self.judgments = judgments  # 0 when the caller decided the size itself (`large`)
        super().__init__(f"computing the figures of {judgments:,} judgments for the first time")


@dataclass(frozen=True)
class Cached(Generic[T]):
    """A page's figures and whether newer ones are being computed."""

    value: T
    updating: bool


def encode(value: Any) -> Any:
    """JSON-ready form of figures: dataclasses, dicts, tuples and datetimes tagged."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if _KNOWN.get(name) is not type(value):
            raise TypeError(f"{name} is not registered for the figures cache")
        fields = {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"~": name, "f": fields}
    if isinstance(value, dict):
        return {"~": "dict", "i": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {"~": "tuple", "i": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, datetime):
        return {"~": "datetime", "v": value.isoformat()}
    if isinstance(value, float) and not math.isfinite(value):
        return {"~": "float", "v": repr(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot store {type(value).__name__} in the figures cache")


def decode(data: Any) -> Any:
    """The figures `encode` wrote, rebuilt (only registered dataclasses)."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    tag = data["~"]
    if tag == "dict":
        return {_key(decode(k)): decode(v) for k, v in data["i"]}
    if tag == "tuple":
        return tuple(decode(v) for v in data["i"])
    if tag == "datetime":
        return datetime.fromisoformat(data["v"])
    if tag == "float":
        return float(data["v"])
    return _KNOWN[tag](**{name: decode(v) for name, v in data["f"].items()})


def _key(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _row(test_set_id: int, kind: str, options: str) -> Any:
    table = FiguresCache.__table__
    return db.session.execute(
        sa.select(table.c.id, table.c.version, table.c.payload).where(
            table.c.test_set_id == test_set_id, table.c.kind == kind, table.c.options == options
        )
    ).first()


def _store(test_set_id: int, kind: str, options: str, version: str, value: Any) -> None:
    """Write the figures and clear the refresh lease; commits."""
    table = FiguresCache.__table__
    payload = json.dumps(encode(value))
    now = utcnow()
    key = {"test_set_id": test_set_id, "kind": kind, "options": options}
    with transaction():
        row = {**key, "version": version, "payload": payload, "computed_at": now}
        if not insert_if_absent(table, [row], list(key)):
            db.session.execute(
                sa.update(table)
                .where(*(table.c[k] == v for k, v in key.items()))
                .values(version=version, payload=payload, computed_at=now, refreshing_since=None)
            )


def stored(test_set_id: int, kind: str, options: str, version: str) -> Any:
    """The figures stored for exactly `version`, or None (nothing computed, nothing started)."""
    row = _row(test_set_id, kind, options)
    return decode(json.loads(row.payload)) if row is not None and row.version == version else None


def _placeholder(test_set_id: int, kind: str, options: str) -> None:
    """A row for figures not computed yet (version FIRST), unless one exists; commits."""
    row = {"test_set_id": test_set_id, "kind": kind, "options": options}
    with transaction():
        insert_if_absent(
            FiguresCache.__table__,
            [{**row, "version": FIRST, "payload": "null", "computed_at": utcnow()}],
            list(row),
        )


def _claim(row_id: int, version: str) -> bool:
    """Take the row's refresh lease unless a live one is held or the figures reached
    `version` meanwhile; commits. True: we took it (and must recompute)."""
    table = FiguresCache.__table__
    now = utcnow()
    with transaction():
        taken = db.session.execute(
            sa.update(table)
            .where(
                table.c.id == row_id,
                table.c.version != version,
                sa.or_(table.c.refreshing_since.is_(None), table.c.refreshing_since < now - LEASE),
            )
            .values(refreshing_since=now)
            .returning(table.c.id)
        ).first()
    return taken is not None


def _refresh(
    app: Any,
    test_set_id: int,
    kind: str,
    options: str,
    version: Callable[[TestSet], str],
    compute: Callable[[TestSet], Any],
) -> None:
    """Background: recompute and store the figures in a session of its own."""
    with app.app_context():
        try:
            test_set = db.session.get(TestSet, test_set_id)
            if test_set is not None:
                now_version = version(test_set)
                _store(test_set_id, kind, options, now_version, compute(test_set))
        except Exception:  # the lease lapses; the next request after LEASE tries again
            log.exception("recomputing %s of test set %s failed", kind, test_set_id)
        finally:
            db.session.remove()


def _start_refresh(
    row_id: int,
    current: str,
    test_set_id: int,
    kind: str,
    options: str,
    version: Callable[[TestSet], str],
    compute: Callable[[TestSet], Any],
) -> bool:
    """Start the one background recomputation unless another process holds the lease."""
    if not _claim(row_id, current):
        return False
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    args = (app, test_set_id, kind, options, version, compute)
    threading.Thread(target=_refresh, args=args, daemon=True).start()
    return True


def cached(
    test_set: TestSet,
    kind: str,
    options: str,
    version: Callable[[TestSet], str],
    compute: Callable[[TestSet], T],
    *,
    background: bool = False,
    inline: bool = False,
    large: bool | None = None,
) -> Cached[T]:
    """The page's figures for `options`, computed at most once per `version(test_set)`.

    `version` and `compute` take the test set (the background thread loads its own copy).
    With `background`, a large set's first figures are computed in the background as well:
    raises Computing until they are stored (the caller shows a page that asks again). With
    `inline`, stale figures are always recomputed at once (never shown while updating).
    `large` says whether the work is large (background-worthy); by default, whether the set has
    more graded judgments than NDCG_FIGURES_CACHE_INLINE_MAX.
    """
    current = version(test_set)
    row = _row(test_set.id, kind, options)
    if row is not None and row.version == current:
        return Cached(decode(json.loads(row.payload)), False)
    judgments = 0
    if large is None:
        limit = figures_cache_inline_max(current_app.config)
        # Inline pages never show stale figures, so they need not count the judgments.
        judgments = 0 if inline else tallies.pool_counts(test_set.id).graded_judgments
        large = judgments > limit
    large = large and not inline
    first = row is None or row.version == FIRST
    if first and large and background:
        if row is None:
            _placeholder(test_set.id, kind, options)
            row = _row(test_set.id, kind, options)
        _start_refresh(row.id, current, test_set.id, kind, options, version, compute)
        raise Computing(judgments)
    if first or not large:
        value = compute(test_set)
        _store(test_set.id, kind, options, current, value)
        return Cached(value, False)
    if not _start_refresh(row.id, current, test_set.id, kind, options, version, compute):
        # Someone else refreshes, or just did (then the stored figures are current).
        latest = _row(test_set.id, kind, options)
        if latest is not None and latest.version == current:
            return Cached(decode(json.loads(latest.payload)), False)
    return Cached(decode(json.loads(row.payload)), True)


class Kept(Generic[T]):
    """At most `limit` values by key in the app's extensions under `name`; the oldest goes
    first. Threads of one worker share it (a lock around every read and write)."""

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.limit = limit
        self._lock = threading.Lock()

    def _values(self) -> OrderedDict[object, T]:
        values: OrderedDict[object, T] = current_app.extensions.setdefault(self.name, OrderedDict())
        return values

    def get(self, key: object) -> T | None:
        """The value kept for `key`, or None."""
        with self._lock:
            return self._values().get(key)

    def keep(self, key: object, value: T) -> T:
        """Keep `value` for `key` (dropping the oldest past the limit); returns it."""
        with self._lock:
            values = self._values()
            values[key] = value
            while len(values) > self.limit:
                values.popitem(last=False)
        return value
