"""The score store: a run's per-query scores under one setting, in memory and in the database.

A ScoreState is every measure of every test-set query for one run and one scoring setting, at
one labels version. It is stored as one `run_score` row (formats.score_storage: compact and
exact, ~0.8 MB at 7,000 queries), so every process and every server reads the same figures:
listings and dashboards load the row instead of the run's millions of entries, and a process
that finds the row behind the labels version re-scores only the queries whose grades changed
since.

Why the database and not files: several servers on PostgreSQL share nothing but the database,
and the row is small enough that reading it takes tens of milliseconds. In front of the rows, a
process keeps the states it used in memory (bounded), with each test set's queries.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

import sqlalchemy as sa
from flask import current_app
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm.attributes import set_committed_value

from ndcg_labeler import formats, sqlite
from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, RunScore, utcnow
from ndcg_labeler.services._db import select_rows
from ndcg_labeler.services.live.options import Resolved
from ndcg_labeler.services.live.state import QuerySet, TestSetState

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

# Score states a process keeps in memory: at most this many, and at most this many bytes of
# arrays (a state is ~4 MB at 7,000 queries), so that a worker stays bounded however many
# runs, settings and queries it serves; the least recently used go first (the store has them).
MEMORY_STATES = 64
MEMORY_BYTES = 160 * 1024 * 1024
# A state caught up after grades is written back once it is this many re-scored queries ahead
# of its stored row. Writing a few MB on every grade tripled a re-score's time; a process
# that loads the older row catches up the same few queries itself (about 1 ms each).
SAVE_AFTER_QUERIES = 20

# The layout of the stored measures, part of every settings key: bump it when the measures
# change, so that rows stored before are never read (they are recomputed under the new key).
# 2: the sensitivity to unjudged chunks (ndcg_if_unjudged_top_cut_k, ndcg_condensed_cut_k).
STORE_FORMAT = 2

# Arrays kept beside the measures (prefixed so they never collide with a measure's name).
_META = ("query_ids", "has_gain", "judged_any", "missing", "seen")


def settings_key(resolved: Resolved) -> str:
    """What the stored figures depend on besides the grades: one text key per setting."""
    cutoffs = ",".join(str(c) for c in resolved.cutoffs)
    judged_only = int(resolved.judged_only)
    return (
        f"{resolved.policy}|{resolved.threshold}|{resolved.gain}|{resolved.ideal}|"
        f"{judged_only}|{cutoffs}|top{resolved.top_grade}|v{STORE_FORMAT}|{resolved.labels}"
    )


@dataclass
class ScoreState:
    """Every measure of every test-set query for one run and one setting, kept current."""

    run_id: int
    settings: str
    labels_version: int
    max_event_id: int
    queries_key: int
    query_ids: np.ndarray
    arrays: dict[str, np.ndarray]
    has_gain: np.ndarray  # the query has a judged grade > 0
    judged_any: np.ndarray  # the query has any judged grade (0 included)
    missing: np.ndarray  # the run has no ranking for the query
    seen: frozenset[int] = frozenset()  # recent judgment event ids already applied
    evaluations: int = field(default=0, compare=False)  # one-query re-scorings (for tests)
    unsaved: int = field(default=0, compare=False)  # queries re-scored since the stored row

    @cached_property
    def nbytes(self) -> int:
        """Memory its arrays take (they change in place, never in size)."""
        meta = self.query_ids.nbytes + self.has_gain.nbytes + self.judged_any.nbytes
        return meta + self.missing.nbytes + sum(a.nbytes for a in self.arrays.values())

    def to_bytes(self) -> bytes:
        """The arrays in the compact, exact stored form (formats.score_storage): ~0.8 MB at
        7,000 queries instead of the .npz's 5.4 MB, every value back bit for bit."""
        import numpy as np  # here: a process that only lists runs never needs numpy

        meta = {
            "meta_query_ids": self.query_ids,
            "meta_has_gain": self.has_gain,
            "meta_judged_any": self.judged_any,
            "meta_missing": self.missing,
            "meta_seen": np.array(sorted(self.seen), dtype=np.int64),
        }
        return formats.encode_score_arrays({**meta, **self.arrays})

    @classmethod
    def from_row(cls, row: RunScore | StoredRow) -> ScoreState:
        """Rebuild from a stored row (either encoding: rows stored as .npz still read)."""
        found = formats.decode_score_arrays(row.data)
        meta = {name: found.pop(f"meta_{name}") for name in _META}
        return cls(
            run_id=row.run_id,
            settings=row.settings,
            labels_version=row.labels_version,
            max_event_id=row.max_event_id,
            queries_key=row.queries_key,
            query_ids=meta["query_ids"],
            arrays=found,
            has_gain=meta["has_gain"],
            judged_any=meta["judged_any"],
            missing=meta["missing"],
            seen=frozenset(meta["seen"].tolist()),
        )


class StoredRow(NamedTuple):
    """The columns of a run_score row that a ScoreState is rebuilt from."""

    run_id: int
    settings: str
    labels_version: int
    max_event_id: int
    queries_key: int
    data: bytes


def load(run_id: int, settings: str) -> ScoreState | None:
    """The stored state of a run under a setting, or None when it was never computed."""
    table = RunScore.__table__
    # Read in binary on PostgreSQL: the data is MBs (every measure at every cutoff).
    rows = select_rows(
        sa.select(*(table.c[name] for name in StoredRow._fields)).where(
            table.c.run_id == run_id, table.c.settings == settings
        ),
        binary=True,
    )
    return ScoreState.from_row(StoredRow(*rows[0])) if rows else None


def save(state: ScoreState) -> bool:
    """Store the state unless a newer one is stored already; False when the write was skipped.

    Written on a connection of its own and committed at once: a page that only reads must not
    commit its request's session. A newer labels version never gets overwritten by an older
    one (two processes catching up at once). When the database is busy (SQLite's single
    writer), the write is skipped: the figures are right in memory and the next process that
    needs them recomputes the same ones.
    """
    values = {
        "run_id": state.run_id,
        "settings": state.settings,
        "labels_version": state.labels_version,
        "max_event_id": state.max_event_id,
        "queries_key": state.queries_key,
        "computed_at": utcnow(),
        "data": state.to_bytes(),
    }
    try:
        with db.engine.connect() as connection, sqlite.busy_timeout(connection, 200):
            _drop_older_machine_rows(connection, state)
            connection.execute(_upsert_newer(connection.dialect.name, values))
            connection.commit()
    except (OperationalError, IntegrityError) as exc:  # locked, or the run was just deleted
        log.info("score store: skipped saving run %s (%s)", state.run_id, exc.orig)
        return False
    return True


def remember_summary(run: Run, mean: float | None, summary: dict[str, object]) -> bool:
    """Store the run's mean NDCG@10 under the default options (lists sort by it) and its list
    line (services.live.summary) when they moved; written on a connection of its own, like
    `save`, and skipped when the database is busy (the next scoring writes them). False when
    nothing was written."""
    if run.mean_ndcg == mean and run.summary == summary:
        return False
    table = Run.__table__
    try:
        with db.engine.connect() as connection, sqlite.busy_timeout(connection, 200):
            connection.execute(
                table.update().where(table.c.id == run.id).values(mean_ndcg=mean, summary=summary)
            )
            connection.commit()
    except OperationalError as exc:
        log.info("score store: skipped the list figures of run %s (%s)", run.id, exc.orig)
        return False
    # The session's copy agrees with the row without marking the run changed.
    set_committed_value(run, "mean_ndcg", mean)
    set_committed_value(run, "summary", summary)
    return True


def _upsert_newer(dialect: str, values: dict[str, object]) -> sa.Insert:
    """INSERT the row, or UPDATE the stored one when it is older (labels version) or for
    other queries: never an older state over a newer one."""
    # The dialects' insert (ON CONFLICT), imported here: the PostgreSQL dialect module costs
    # ~20 ms of start-up that SQLite never needs.
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    table = RunScore.__table__
    stmt = insert(table).values(**values)
    newer = sa.or_(
        table.c.labels_version < stmt.excluded.labels_version,
        table.c.queries_key != stmt.excluded.queries_key,
    )
    return stmt.on_conflict_do_update(
        index_elements=["run_id", "settings"],
        set_={name: stmt.excluded[name] for name in values if name not in ("run_id", "settings")},
        where=newer,
    )


def _drop_older_machine_rows(connection: sa.Connection, state: ScoreState) -> None:
    """With machine labels the key ends in "@<the judge's creation time>.<its newest answer
    id>" (grades.machine_version): the rows of the judge's earlier answers will never be read
    again."""
    base, at, version = state.settings.rpartition("@")
    if not (at and version.replace(".", "", 1).isdigit()):
        return
    table = RunScore.__table__
    connection.execute(
        table.delete().where(
            table.c.run_id == state.run_id,
            table.c.settings.startswith(base + "@", autoescape=True),
            table.c.settings != state.settings,
        )
    )


@dataclass
class Memory:
    """One app's in-process copies; `lock` guards them (one app may serve many threads)."""

    lock: threading.RLock = field(default_factory=threading.RLock)
    states: OrderedDict[tuple[object, ...], ScoreState] = field(default_factory=OrderedDict)
    query_sets: dict[int, QuerySet] = field(default_factory=dict)
    # People's grades by (test set, policy), caught up like the scores (engine.grades_by_query).
    grades: OrderedDict[tuple[int, str], object] = field(default_factory=OrderedDict)

    def find(
        self,
        run: Run,
        settings: str,
        state: TestSetState,
        computed: ScoreState | None = None,
    ) -> ScoreState | None:
        """The run's state under `settings` from memory, else from the database, else
        `computed` (scored ahead by an upload); None when none is for the test set's current
        queries. Grades given since any of them was read are for the caller to catch up."""
        current = self.states.get(_key(run, settings))
        if not _fits(current, state):
            current = load(run.id, settings)
        if not _fits(current, state) and computed is not None and computed.settings == settings:
            current = computed
        return current if _fits(current, state) else None

    def keep(self, run: Run, current: ScoreState) -> None:
        """Remember `current` as the run's newest state under its setting, and store it when it
        is far enough ahead of its row."""
        key = _key(run, current.settings)
        added = key not in self.states
        self.states[key] = current
        self.states.move_to_end(key)
        if added:
            self._evict()
        if current.unsaved >= SAVE_AFTER_QUERIES and save(current):
            current.unsaved = 0

    def _evict(self) -> None:
        """Drop the least recently used states past MEMORY_STATES or MEMORY_BYTES (never the
        newest: it is in use)."""
        sizes = [state.nbytes for state in self.states.values()]
        total = sum(sizes)
        for size in sizes[:-1]:
            if len(self.states) <= MEMORY_STATES and total <= MEMORY_BYTES:
                break
            self.states.popitem(last=False)
            total -= size

    def forget(self, run_id: int) -> None:
        """Drop a run's states (the database rows go with the run)."""
        for key in [k for k in self.states if k[0] == run_id]:
            del self.states[key]


def _fits(found: ScoreState | None, state: TestSetState) -> bool:
    """`found` was scored for the test set's current queries."""
    return found is not None and found.queries_key == state.queries_key


def _key(run: Run, settings: str) -> tuple[object, ...]:
    """A state's key in memory: the run's content as well as its id (ids may be reused after a
    delete on SQLite), and the setting."""
    return (run.id, run.sha256, run.num_entries, settings)


_EXTENSION = "ndcg_live_scores"


def memory() -> Memory:
    """This app's in-process copies (made on first use)."""
    found = current_app.extensions.get(_EXTENSION)
    if found is None:
        found = current_app.extensions.setdefault(_EXTENSION, Memory())
    return found
