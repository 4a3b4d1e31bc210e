"""What a PostgreSQL full-text index costs a corpus import, by design (issue 30, item 5).

`python -m bench.pg_index_probe --url postgresql+psycopg://postgres@127.0.0.1:5432/t_probe
[--chunks 200000]` copies the same seeded synthetic chunks (the vocabulary and shape of
bench.corpus_import) in one COPY and one transaction into a scratch table `probe_chunk` of that
database (dropped and recreated for each design) and prints, per design, the wall time, the
chunks per second, and the CPU a chunk of this process (the client) and of the server's
backends (read from /proc: the server must run on this machine):

- `tsvector, kept`: the product's GIN index on `to_tsvector('simple', title || ' ' || text)`,
  present while the rows are copied (what an import into the shared chunk table pays);
- `tsvector, after`: the same index built after the rows (what a table of its own per import
  would pay), with 512 MB of maintenance_work_mem;
- `hashed words, kept` / `after`: the client splits each chunk into lower-cased words and sends
  the CRC-32 of each distinct word as an `int4[]` column, indexed by GIN's array operators (no
  prefix search: a design probe, not the product).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

from bench.corpus_import import WORDS

_WORD = re.compile(r"\w+")
_TSVECTOR = "to_tsvector('simple', coalesce(title, '') || ' ' || coalesce(text, ''))"


def chunks(count: int, seed: int = 30) -> list[tuple[str, str, str]]:
    """`count` (docid, title, text) rows of ~80 words, as bench.corpus_import writes them."""
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        words = rng.choices(WORDS, k=80)
        rows.append((f"d{i}", " ".join(words[:4]), " ".join(words)))
    return rows


def hashed_words(title: str, text: str) -> str:
    """The `int4[]` literal of the CRC-32s of the distinct lower-cased words of a chunk."""
    words = {zlib.crc32(w.encode()) - 2**31 for w in _WORD.findall(f"{title} {text}".lower())}
    return "{" + ",".join(map(str, words)) + "}"


def backend_seconds() -> float:
    """CPU seconds (user + sys) used so far by every process named postgres on this machine."""
    ticks = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() != "postgres":
                continue
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _rows(design: str, rows: list[tuple[str, str, str]]) -> Iterator[tuple[str, ...]]:
    """The COPY rows of `design`: the words' hashes computed here, in the client, when needed."""
    if design.startswith("hashed"):
        for docid, title, text in rows:
            yield docid, title, text, hashed_words(title, text)
    else:
        yield from rows


def measure(url: str, design: str, rows: list[tuple[str, str, str]]) -> dict[str, float]:
    """Copy `rows` into a fresh scratch table under `design`; seconds and CPU a chunk."""
    import psycopg

    hashed = design.startswith("hashed")
    index = "(words)" if hashed else f"({_TSVECTOR})"
    columns = "docid, title, text" + (", words" if hashed else "")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS probe_chunk")
        conn.execute(
            "CREATE TABLE probe_chunk (id bigserial PRIMARY KEY, docid text, title text, "
            "text text, words int4[])"
        )
        if design.endswith("kept"):
            conn.execute(f"CREATE INDEX ON probe_chunk USING gin {index}")
        server, client, start = backend_seconds(), time.process_time(), time.perf_counter()
        with (
            conn.transaction(),
            conn.cursor().copy(f"COPY probe_chunk ({columns}) FROM STDIN") as copy,
        ):
            for row in _rows(design, rows):
                copy.write_row(row)
        if design.endswith("after"):
            conn.execute("SET maintenance_work_mem = '512MB'")
            conn.execute(f"CREATE INDEX ON probe_chunk USING gin {index}")
        wall = time.perf_counter() - start
        client = time.process_time() - client
        server = backend_seconds() - server
        conn.execute("DROP TABLE probe_chunk")
    n = len(rows)
    return {
        "wall": wall,
        "rate": n / wall,
        "client_us": client / n * 1e6,
        "server_us": server / n * 1e6,
    }


def main() -> None:
    """Print one Markdown table: a row per index design."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True, help="a PostgreSQL URL (psycopg 3) on this machine")
    parser.add_argument("--chunks", type=int, default=200_000)
    args = parser.parse_args()
    url = args.url.replace("postgresql+psycopg://", "postgresql://")
    rows = chunks(args.chunks)
    print(f"{args.chunks:,} chunks, one COPY in one transaction\n")
    print("| design | wall | chunks/s | client CPU a chunk | server CPU a chunk |")
    print("| --- | --- | --- | --- | --- |")
    for design in (
        "tsvector, kept",
        "tsvector, after",
        "hashed words, kept",
        "hashed words, after",
    ):
        m = measure(url, design, rows)
        print(
            f"| {design} | {m['wall']:.1f} s | {m['rate']:,.0f} | {m['client_us']:.1f} µs "
            f"| {m['server_us']:.1f} µs |"
        )


if __name__ == "__main__":
    main()
