"""Opening uploads: gzip by magic bytes, size guard, BOM, CRLF, UTF-8 and NUL checks."""

import gzip
import io

import pytest

from ndcg_labeler.formats.errors import FormatError
from ndcg_labeler.formats.textio import display_name, first_line, iter_lines, open_source

from .util import OneWay, upload


def lines_of(stream, max_line_bytes=1 << 20, **kw):
    with open_source(stream, "f.txt", **kw) as opened:
        return list(iter_lines(opened, max_line_bytes=max_line_bytes))


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("bom", [False, True])
@pytest.mark.parametrize("crlf", [False, True])
def test_lines_are_numbered_and_clean(gz, bom, crlf):
    stream = upload("a b\n\nc d\n", gz=gz, bom=bom, crlf=crlf)
    assert lines_of(stream) == [(1, "a b"), (2, ""), (3, "c d")]


def test_last_line_without_newline():
    assert lines_of(upload("x\ny")) == [(1, "x"), (2, "y")]


def test_gzip_is_detected_by_content_not_name(tmp_path):
    path = tmp_path / "plain.txt"  # no .gz suffix
    path.write_bytes(gzip.compress(b"hello\n"))
    with open_source(path) as opened:
        assert opened.gzipped
        assert opened.filename == str(path)
        assert list(iter_lines(opened)) == [(1, "hello")]
    gz_named = tmp_path / "x.gz"
    gz_named.write_bytes(b"not gzip\n")
    with open_source(gz_named) as opened:
        assert not opened.gzipped


def test_multi_member_gzip():
    data = gzip.compress(b"a\n") + gzip.compress(b"b\n")
    assert lines_of(io.BytesIO(data)) == [(1, "a"), (2, "b")]


def test_keepends_keeps_the_line_ending():
    with open_source(upload("a\r\nb\n"), "f") as opened:
        assert list(iter_lines(opened, keepends=True)) == [(1, "a\r\n"), (2, "b\n")]


def test_invalid_utf8_names_the_line():
    with pytest.raises(FormatError) as info:
        lines_of(io.BytesIO(b"ok\nbad \xff here\n"))
    assert str(info.value) == "f.txt:2: invalid UTF-8 at byte 5 of the line"


def test_nul_is_rejected():
    with pytest.raises(FormatError, match=r"^f.txt:1: line contains a NUL character$"):
        lines_of(io.BytesIO(b"a\x00b\n"))


def test_decompressed_size_guard():
    bomb = upload("0" * 100_000 + "\n", gz=True)
    assert len(bomb.getvalue()) < 1000
    with pytest.raises(FormatError) as info:
        lines_of(bomb, max_bytes=10_000)
    assert str(info.value) == "f.txt: decompressed size exceeds 10000 bytes"


def test_plain_size_guard():
    with pytest.raises(FormatError, match=r"^f.txt: file size exceeds 1 KiB$"):
        lines_of(upload("x" * 2000), max_bytes=1024)


def test_size_exactly_at_limit_is_fine():
    assert lines_of(upload("abc\n"), max_bytes=4) == [(1, "abc")]


@pytest.mark.parametrize(
    "data",
    [gzip.compress(b"hello world\n" * 50, mtime=0)[:-12], b"\x1f\x8b" + b"\x00" * 30],
    ids=["truncated", "zeroed-header"],
)
def test_corrupt_gzip(data):
    with pytest.raises(FormatError, match=r"^f.txt: corrupt gzip data: "):
        lines_of(io.BytesIO(data))


def test_long_line_guard():
    with pytest.raises(FormatError, match=r"^f.txt:2: line is longer than 10 bytes$"):
        lines_of(upload("short\n" + "x" * 50 + "\n"), max_line_bytes=10)


def test_empty_input():
    with open_source(io.BytesIO(b""), "e") as opened:
        assert opened.head == b""
        assert list(iter_lines(opened)) == []


def test_non_seekable_stream():
    assert lines_of(OneWay(gzip.compress(b"a\nb\n"))) == [(1, "a"), (2, "b")]


def test_caller_stream_stays_open_path_is_closed(tmp_path):
    stream = upload("a\n")
    lines_of(stream)
    assert not stream.closed
    path = tmp_path / "f"
    path.write_text("a\n")
    with open_source(path) as opened:
        raw = opened.stream
    assert raw.readable()  # our wrapper; the underlying file is closed on exit


def test_first_line_skips_blank_lines():
    assert first_line(b"\n  \r\n  qid,text\nx") == "qid,text"
    assert first_line(b" \n\n") is None
    assert first_line(b"# c\n\n1 Q0 d", skip_hash=True) == "1 Q0 d"
    assert first_line(b"# c\n#d\n", skip_hash=True) == "# c"


def test_display_name():
    assert display_name(io.BytesIO(), None) == "<input>"
    assert display_name(io.BytesIO(), "up.tsv") == "up.tsv"
    assert display_name("/tmp/x.run", None) == "/tmp/x.run"
