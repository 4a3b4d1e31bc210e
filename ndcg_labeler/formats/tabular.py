"""Row iteration for JSON lines and CSV/TSV with header, keeping the file's line numbers."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from typing import Any

from .errors import FormatError

_CSV_FIELD_LIMIT = 64 * 1024 * 1024
_TSV_QUOTING = (
    "; TSV is read with CSV quoting: a field that starts with a double quote must end with "
    'one, and a quote inside it is doubled ("")'
)


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


_DECODER = json.JSONDecoder(parse_constant=_no_constants)  # one, not one per json.loads call


def iter_json_objects(
    lines: Iterable[tuple[int, str]], filename: str
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield `(line_no, object)` for each non-blank line; each must be one JSON object."""
    for line_no, text in lines:
        if not text.strip():
            continue
        try:
            obj = _DECODER.decode(text)
        except json.JSONDecodeError as exc:
            reason = f"invalid JSON: {exc.msg} (column {exc.colno})"
            raise FormatError(filename, line_no, reason) from None
        except ValueError as exc:
            raise FormatError(filename, line_no, f"invalid JSON: {exc}") from None
        except RecursionError:  # "[[[[…" deeper than the decoder's recursion limit
            raise FormatError(filename, line_no, "invalid JSON: nested too deeply") from None
        if not isinstance(obj, dict):
            raise FormatError(filename, line_no, "expected a JSON object {...} on each line")
        yield line_no, obj


def iter_csv_rows(
    lines: Iterable[tuple[int, str]], filename: str, delimiter: str
) -> Iterator[tuple[int, list[str]]]:
    """Yield `(first_line_no, fields)` per CSV record (quoted fields may span lines)."""
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        # The default (128 KiB) is smaller than real chunks of text.
        csv.field_size_limit(_CSV_FIELD_LIMIT)
    reader = csv.reader((text for _, text in lines), delimiter=delimiter, strict=True)
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            where = f" (record starts at line {start})" if start < reader.line_num else ""
            # A TSV of raw texts trips on a text that begins with '"'; say the rule it broke.
            rule = _TSV_QUOTING if delimiter == "\t" else ""
            said = str(exc).replace("\t", "<TAB>")  # csv's message holds a raw TAB
            raise FormatError(filename, reader.line_num, f"bad CSV: {said}{where}{rule}") from None
        if row and any(field.strip() for field in row):
            yield start, row
        start = reader.line_num + 1


def header_names(line: str, delimiter: str) -> list[str]:
    """Lower-cased, unquoted column names of a would-be header line (for sniffing only)."""
    return [name.strip().strip('"').strip().lower() for name in line.split(delimiter)]


def sniff_delimiter(header: str) -> str:
    """Pick TAB when the header line contains one, otherwise comma."""
    return "\t" if "\t" in header else ","


def read_header(
    rows: Iterator[tuple[int, list[str]]],
    filename: str,
    *,
    required: tuple[str, ...],
    optional: tuple[str, ...] = (),
    extra_ok: bool = False,
) -> dict[str, int]:
    """Consume the header row and map lower-cased column names to their positions."""
    try:
        line_no, header = next(rows)
    except StopIteration:
        raise FormatError(filename, None, "file is empty") from None
    names = [name.strip().lower() for name in header]
    columns: dict[str, int] = {}
    for pos, name in enumerate(names):
        if name in columns:
            raise FormatError(filename, line_no, f"column '{name}' appears twice in the header")
        columns[name] = pos
    missing = [name for name in required if name not in columns]
    expected = ", ".join([*required, *(f"[{n}]" for n in optional)])
    if missing:
        reason = f"header lacks column '{missing[0]}' (expected {expected})"
        raise FormatError(filename, line_no, reason)
    if not extra_ok:
        unknown = [name for name in names if name not in required and name not in optional]
        if unknown:
            reason = f"unknown column '{unknown[0]}' in header (expected {expected})"
            raise FormatError(filename, line_no, reason)
    return columns


def check_width(row: list[str], width: int, filename: str, line: int) -> None:
    """Reject a CSV record whose field count differs from the header's."""
    if len(row) != width:
        reason = f"expected {width} fields as in the header, found {len(row)}"
        raise FormatError(filename, line, reason)
