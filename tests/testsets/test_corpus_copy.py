"""A new corpus on PostgreSQL goes through COPY (services/imports/bulk.py): the same rows, the
same refusals naming both lines of a repeated docid (within a segment, across segments, after
blank lines), the earlier of a repeat and a bad line, and cancel leaving nothing. On SQLite the
same expectations hold for the row-by-row path, so both paths are held to one behaviour."""

from __future__ import annotations

import json
import os

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.formats.errors import FormatError
from ndcg_labeler.models import Chunk, TestSet
from ndcg_labeler.services import testsets
from ndcg_labeler.services._progress import Cancelled
from ndcg_labeler.services.imports import bulk, import_files
from ndcg_labeler.services.imports import corpus as corpus_module
from tests.factory import make_test_set
from tests.testsets.helpers import mem


@pytest.fixture(autouse=True)
def _small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 10 records and segments of 3 blocks: a COPY every 30 records."""
    monkeypatch.setattr(corpus_module, "BLOCK", 10)
    monkeypatch.setattr(bulk, "SEGMENT_BLOCKS", 3)


def _line(docid: str, text: str, **extra: object) -> str:
    return json.dumps({"_id": docid, "title": "", "text": text, **extra}) + "\n"


def _lines(start: int, stop: int) -> list[str]:
    return [_line(f"d{i}", f"text of chunk {i} about walrus{i}") for i in range(start, stop)]


def _refused(app: Flask, text: str, name: str = "Set") -> FormatError:
    ts = make_test_set(app, name)
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        with pytest.raises(FormatError) as caught:
            import_files(test_set, corpus=mem("corpus.jsonl", text))
        count = db.session.scalar(sa.select(sa.func.count()).where(Chunk.test_set_id == ts))
        assert count == 0  # all or nothing
    return caught.value


def test_the_copied_rows_are_those_of_the_file(app: Flask) -> None:
    ts = make_test_set(app)
    text = "".join(_lines(1, 70)) + _line("d10b", "a walrus", metadata={"url": "u", "n": 2})
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        report = import_files(test_set, corpus=mem("corpus.jsonl", text))
        assert (
            report.chunks is not None and str(report.chunks) == "70 created, 0 updated, 0 unchanged"
        )
        chunk = db.session.scalars(
            sa.select(Chunk).where(Chunk.test_set_id == ts, Chunk.docid == "d10b")
        ).one()
        assert (chunk.title, chunk.text, chunk.meta) == (None, "a walrus", {"url": "u", "n": 2})
        plain = db.session.scalars(
            sa.select(Chunk).where(Chunk.test_set_id == ts, Chunk.docid == "d7")
        ).one()
        assert plain.meta is None and plain.text == "text of chunk 7 about walrus7"
        # natural order: d9 < d10 < d10b < d11, and the full-text index has the copied rows
        first = testsets.chunks_page(test_set, 1, per_page=12).items
        assert [c.docid for c in first][8:12] == ["d9", "d10", "d10b", "d11"]
        found = testsets.chunks_page(test_set, 1, search="walrus65").items
        assert [c.docid for c in found] == ["d65"]


def test_a_repeat_segments_later_after_blank_lines_names_both_lines(app: Flask) -> None:
    # Lines 1-4: d1-d4; line 5 blank; lines 6-8: d5-d7; line 9 blank; lines 10-74: d8-d72;
    # line 75 repeats d6 (first at line 7), 3 segments of 30 records after it was written.
    lines = [*_lines(1, 5), "\n", *_lines(5, 8), "\n", *_lines(8, 73)]
    lines.append(_line("d6", "again"))
    lines += _lines(73, 80)
    error = _refused(app, "".join(lines))
    assert (error.line, error.filename) == (75, "corpus.jsonl")
    assert "docid 'd6' appears twice (first at line 7)" in str(error)


def test_a_repeat_within_a_segment_names_both_lines(app: Flask) -> None:
    lines = [*_lines(1, 40), _line("d35", "again"), *_lines(40, 50)]
    error = _refused(app, "".join(lines))
    assert error.line == 40 and "docid 'd35' appears twice (first at line 35)" in str(error)


def test_the_earlier_of_a_repeat_and_a_bad_line_is_reported(app: Flask) -> None:
    bad = '{"_id": "dx", "text": 7}\n'
    repeat_first = [*_lines(1, 40), _line("d3", "again"), *_lines(40, 45), bad]
    error = _refused(app, "".join(repeat_first))
    assert error.line == 40 and "appears twice (first at line 3)" in str(error)
    bad_first = [*_lines(1, 40), bad, *_lines(40, 45), _line("d3", "again")]
    assert _refused(app, "".join(bad_first), "Other").line == 40


def test_cancel_in_a_later_segment_leaves_nothing(app: Flask) -> None:
    ts = make_test_set(app)
    seen: list[int] = []

    def progress(phase: str, done: int, total: int, rows: int) -> None:
        if phase == "corpus":
            seen.append(rows)
            if rows >= 50:
                raise Cancelled("cancelled by a user")

    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        with pytest.raises(Cancelled):
            import_files(test_set, corpus=mem("c.jsonl", "".join(_lines(1, 90))), progress=progress)
        assert seen == [10, 20, 30, 40, 50]
        count = db.session.scalar(sa.select(sa.func.count()).where(Chunk.test_set_id == ts))
        assert count == 0


@pytest.mark.parametrize("many", [3, 12, 10_000])
def test_a_search_pages_the_same_whether_the_hits_or_the_order_drive_it(
    app: Flask, monkeypatch: pytest.MonkeyPatch, many: int
) -> None:
    """Up to MANY_HITS hits are counted and ranked themselves; past it the pages walk the
    natural order and say "more than": the same chunks on every page either way."""
    from ndcg_labeler.services.testsets import listing

    monkeypatch.setattr(listing, "MANY_HITS", many)
    ts = make_test_set(app)
    text = "".join(_lines(1, 130)) + _line("e1", "walrus12 again") + _line("d120x", "other")
    text += _line("e2", "the word walrus1_2 is two tokens") + _line("e3", "Walrus120 WALRUS")
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        import_files(test_set, corpus=mem("corpus.jsonl", text))

        def shown(search: str, number: int, hits: int) -> tuple[list[str], bool]:
            page = testsets.chunks_page(test_set, number, search=search, per_page=5)
            if hits <= many:
                assert (page.total, getattr(page, "at_least", None)) == (hits, None)
            else:
                assert page.at_least == many
            return [c.docid for c in page.items], page.has_next

        # docids d12, d120-d129 and d120x start with "d12"; no text has a word starting so
        assert shown("d12", 1, 12) == (["d12", "d120", "d120x", "d121", "d122"], True)
        assert shown("d12", 3, 12) == (["d128", "d129"], False)
        # the texts of d12, d120-d129, e1 and e3 have a word starting with "walrus12"
        assert shown("walrus12", 1, 13) == (["d12", "d120", "d121", "d122", "d123"], True)
        assert shown("walrus12", 3, 13) == (["d129", "e1", "e3"], False)
        # two words, one in upper case in the text; a word that the parsers split in two
        assert shown("WALRUS walrus120", 1, 2) == (["d120", "e3"], False)
        assert shown("walrus1_2", 1, 1) == (["e2"], False)
        # a whole word in 129 texts (PostgreSQL stops at its whole-word hits past the cap)
        assert shown("about", 1, 129) == (["d1", "d2", "d3", "d4", "d5"], True)
        assert shown("about", 26, 129) == (["d126", "d127", "d128", "d129"], False)


def test_postgresql_needs_no_prefix_bitmap_when_the_whole_words_pass_the_cap(
    app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ndcg_labeler.services.testsets import listing

    monkeypatch.setattr(listing, "MANY_HITS", 3)
    ts = make_test_set(app)
    text = "".join(_lines(1, 6)) + _line("e1", "walruses only") + _line("e2", "walrusy")
    with app.app_context():
        import_files(db.session.get(TestSet, ts), corpus=mem("corpus.jsonl", text))
        asked: list[bool] = []
        real = listing._text_hits

        def spy(*args: object, whole: bool = False, **kwargs: object) -> object:
            asked.append(whole)
            return real(*args, whole=whole, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(listing, "_text_hits", spy)
        postgresql = db.session.get_bind().dialect.name == "postgresql"
        # "walrus1" .. "walrus5": no whole word "walrus", 7 chunks with the prefix
        assert listing._hit_ids(ts, "walrus") is None
        assert asked == ([True, False] if postgresql else [False])
        asked.clear()
        # "about" is whole in 5 texts: past the cap of 3 without the prefixes' bitmap
        assert listing._hit_ids(ts, "about") is None
        assert asked == ([True] if postgresql else [False])
        asked.clear()
        found = listing._hit_ids(ts, "walruses")
        assert found is not None and [db.session.get(Chunk, i).docid for i in found] == ["e1"]
        assert asked == ([True, False] if postgresql else [False])


@pytest.mark.parametrize("app", ["sqlite"], indirect=True)
def test_sqlite_imports_with_a_large_page_cache_and_gives_it_back(app: Flask) -> None:
    from ndcg_labeler import sqlite

    ts = make_test_set(app)
    during: list[int] = []

    def cache_size() -> int:
        raw = db.session.connection().connection.driver_connection
        return int(raw.execute("PRAGMA cache_size").fetchone()[0])

    def progress(phase: str, done: int, total: int, rows: int) -> None:
        if phase == "corpus":
            during.append(cache_size())

    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        before = cache_size()
        corpus = mem("c.jsonl", "".join(_lines(1, 25)))
        import_files(test_set, corpus=corpus, progress=progress)
        assert set(during) == {-sqlite.BULK_CACHE_MIB * 1024} and before != during[0]
        assert cache_size() == before


@pytest.mark.parametrize("app", ["sqlite"], indirect=True)
def test_sqlite_indexes_with_large_fts_segments_and_puts_the_defaults_back(app: Flask) -> None:
    """The new rows are indexed with a 64 MB term hash and 16 segments a merge; afterwards the
    index's stored settings are FTS5's defaults again and the index is consistent."""
    ts = make_test_set(app)
    seen: list[dict[str, int]] = []

    def settings() -> dict[str, int]:
        rows = db.session.execute(sa.text("SELECT k, v FROM chunk_fts_config"))
        return {str(k): int(v) for k, v in rows if k in ("hashsize", "automerge")}

    def progress(phase: str, done: int, total: int, rows: int) -> None:
        if phase == "index":
            seen.append(settings())

    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        corpus = mem("c.jsonl", "".join(_lines(1, 25)))
        import_files(test_set, corpus=corpus, progress=progress)
        assert seen and seen[0] == {"hashsize": 64 * 1024 * 1024, "automerge": 16}
        assert settings() == {"hashsize": 1024 * 1024, "automerge": 4}
        db.session.execute(sa.text("INSERT INTO chunk_fts(chunk_fts) VALUES ('integrity-check')"))
        found = testsets.chunks_page(test_set, 1, search="walrus2").items
        assert [c.docid for c in found] == ["d2", "d20", "d21", "d22", "d23", "d24"]


@pytest.mark.parametrize("app", ["sqlite"], indirect=True)
def test_sqlite_finds_a_words_hits_through_the_index_not_chunk_by_chunk(app: Flask) -> None:
    """Counting a word's hits in one test set: SQLite's plan reads the full-text index and
    looks each hit up by rowid (the other way round asks the index about every chunk: minutes
    at 1M chunks), or takes the index's hits as they are while no other set has chunks."""
    from ndcg_labeler.services.testsets import listing

    def plan(ts: int) -> list[str]:
        stmt = listing._text_hits(ts, ["walrus"], own=True).limit(10)
        sql = str(stmt.compile(db.engine, compile_kwargs={"literal_binds": True}))
        return [str(row[-1]) for row in db.session.execute(sa.text(f"EXPLAIN QUERY PLAN {sql}"))]

    first, second = make_test_set(app, "First"), make_test_set(app, "Second")
    with app.app_context():
        import_files(db.session.get(TestSet, first), corpus=mem("c.jsonl", "".join(_lines(1, 4))))
        alone = plan(first)
        assert alone[0].startswith("SCAN chunk_fts") and len(alone) == 1
        found = testsets.chunks_page(db.session.get(TestSet, first), 1, search="walrus")
        assert found.total == 3
        import_files(db.session.get(TestSet, second), corpus=mem("c.jsonl", "".join(_lines(1, 6))))
        joined = plan(first)
        assert joined[0].startswith("SCAN chunk_fts") and "PRIMARY KEY" in joined[1]
        found = testsets.chunks_page(db.session.get(TestSet, first), 1, search="walrus")
        assert found.total == 3 and [c.docid for c in found.items] == ["d1", "d2", "d3"]
        assert testsets.chunks_page(db.session.get(TestSet, second), 1, search="walrus").total == 5


# Only PostgreSQL keeps planner statistics; without TEST_DATABASE_URL there is none to test.
@pytest.mark.parametrize(
    "app", ["postgresql"] if os.environ.get("TEST_DATABASE_URL") else [], indirect=True
)
def test_postgresql_statistics_follow_the_corpus_on_either_path(app: Flask) -> None:
    ts = make_test_set(app)

    def counted() -> float:
        return float(
            db.session.scalar(
                sa.text("SELECT reltuples FROM pg_class WHERE oid = 'chunk'::regclass")
            )
        )

    with app.app_context():
        db.session.execute(sa.text("ANALYZE chunk"))  # earlier tests' figures: an empty table
        assert counted() == 0
        test_set = db.session.get(TestSet, ts)
        import_files(test_set, corpus=mem("corpus.jsonl", "".join(_lines(1, 11))))  # COPY
        assert counted() == 10
        # The set has chunks now: the row-by-row path, 200 new rows and 10 unchanged.
        import_files(test_set, corpus=mem("corpus.jsonl", "".join(_lines(1, 211))))
        assert counted() == 210
        # 15 new rows are under a tenth of 210: autovacuum's business, not the import's.
        import_files(test_set, corpus=mem("corpus.jsonl", "".join(_lines(1, 226))))
        assert counted() == 210
