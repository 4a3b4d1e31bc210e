"""How a run's stored per-query scores (RunScore.data) are kept: compact, exact.

The stored scores are named 1-D arrays, one value per test-set query: ~90 float64 measures
(nDCG, DCG, IDCG, P, recall, Judged, the sensitivity at each cutoff; AP, RR), the int64 counts
and a few flags. As an .npz that is 8 bytes a value, ~5.4 MB at 7,000 queries, and raw float64
bits hardly compress. Version 1 (a three-byte header, b"\\xffS\\x01") stores each array in the
cheapest of these forms that gives back every bit, checked by decoding before choosing it:

- `ratio`: nothing at all, when the array is its sibling `d<name>` / `id<name>` exactly as
  scoring divides them (NaN where the denominator is 0): nDCG from DCG and IDCG;
- `count`: whole numbers c with c / d == value, d the cutoff the name ends in (P@k, Judged@k)
  or the query's num_rel (recall@k), as the change from the previous cutoff's counts;
- `xor`: the float64 bits XOR the previous cutoff's of the same measure (equal values at
  neighbouring cutoffs, the usual case past a query's last relevant entry, become zeros);
- `int` (int64: the change from the previous value), `bits` (bool: packed), `npy` (else).

Integer and XOR payloads keep a bitmap of their non-zero values, then those values' bytes
grouped by position (low bytes first, as many as the largest needs); everything is compressed
with zlib in one piece. decode(encode(x)) == x for any arrays: every form is checked or
lossless. Legacy rows (np.savez, which starts with b"PK") are told apart by the header.
"""

from __future__ import annotations

import io
import json
import re
import struct
import zlib

import numpy as np

_HEADER = b"\xffS\x01"  # never the start of an .npz (a zip: b"PK")
_VERSION = 1
# Level 6: after the forms above a 7,000-query state's payload compresses in ~0.1 s to
# ~0.75 MB (level 1: ~0.77 MB, hardly faster; 9: ~0.3 s more); it is written once per 20
# re-scored queries (services.live.store.SAVE_AFTER_QUERIES).
_LEVEL = 6
_CUTOFF = re.compile(r"^(.*?)_(\d+)$")
# What the store keeps beside the measures (query ids, flags) is named with this prefix.
_META = "meta_"


def is_compact_scores(blob: bytes | memoryview) -> bool:
    """The blob is in this versioned encoding (not a legacy .npz)."""
    return bytes(blob[:2]) == _HEADER[:2]


def encode_score_arrays(arrays: dict[str, np.ndarray]) -> bytes:
    """The stored form of named 1-D arrays, exact to the bit (see the module docstring)."""
    entries: dict[str, list[tuple[dict[str, object], bytes]]] = {
        "plain": [],
        "count": [],
        "ratio": [],
    }
    last_float: dict[str, np.ndarray] = {}
    last_count: dict[str, np.ndarray] = {}
    for name in sorted(arrays, key=_order_key):
        values = np.asarray(arrays[name])
        stem = _stem(name)
        if values.ndim != 1 or values.dtype.kind not in "fib" or values.dtype.itemsize > 8:
            entries["plain"].append(_npy(name, values))
        elif values.dtype == np.bool_:
            packed = np.packbits(values).tobytes()
            entries["plain"].append(({"n": name, "m": "bits", "len": values.size}, packed))
        elif values.dtype.kind == "i":
            as_int = values.astype("<i8")
            delta = np.diff(as_int, prepend=np.int64(0))
            entry = {"n": name, "m": "int", "d": values.dtype.str}
            entries["plain"].append((entry, _pack(_zigzag(delta))))
        elif values.dtype != np.float64:
            entries["plain"].append(_npy(name, values))
        elif _is_ratio(name, values, arrays):
            entries["ratio"].append(({"n": name, "m": "ratio"}, b""))
        else:
            counted = _as_counts(name, values, arrays)
            if counted is not None:
                denominator, counts = counted
                previous = last_count.get(stem)
                delta = counts if previous is None else counts - previous
                entry = {"n": name, "m": "count", "by": denominator, "prev": previous is not None}
                entries["count"].append((entry, _pack(_zigzag(delta))))
                last_count[stem] = counts
                continue
            bits = values.astype("<f8").view("<u8")
            previous = last_float.get(stem)
            payload = bits if previous is None else bits ^ previous
            entry = {"n": name, "m": "xor", "prev": previous is not None}
            entries["plain"].append((entry, _pack(payload)))
            last_float[stem] = bits
    ordered = entries["plain"] + entries["count"] + entries["ratio"]
    manifest = [entry for entry, _ in ordered]
    for entry, payload in ordered:
        entry["size"] = len(payload)
        entry.setdefault("len", int(np.asarray(arrays[str(entry["n"])]).size))
    head = json.dumps({"v": _VERSION, "arrays": manifest}, separators=(",", ":")).encode()
    body = struct.pack("<I", len(head)) + head + b"".join(payload for _, payload in ordered)
    return _HEADER + zlib.compress(body, _LEVEL)


def decode_score_arrays(blob: bytes | memoryview) -> dict[str, np.ndarray]:
    """The named arrays of a stored blob, either encoding (fresh, writable arrays)."""
    if not is_compact_scores(blob):
        return _from_npz(blob)
    if bytes(blob[:3]) != _HEADER:
        raise ValueError("stored scores have an unknown encoding version")
    body = zlib.decompress(memoryview(blob)[3:])
    (head_size,) = struct.unpack_from("<I", body)
    head = json.loads(body[4 : 4 + head_size])
    at = 4 + head_size
    out: dict[str, np.ndarray] = {}
    last_float: dict[str, np.ndarray] = {}
    last_count: dict[str, np.ndarray] = {}
    for entry in head["arrays"]:
        name, mode, size = entry["n"], entry["m"], entry["size"]
        payload = body[at : at + size]
        at += size
        stem = _stem(name)
        if mode == "npy":
            out[name] = np.load(io.BytesIO(payload), allow_pickle=False)
        elif mode == "bits":
            out[name] = np.unpackbits(np.frombuffer(payload, np.uint8), count=entry["len"]).astype(
                bool
            )
        elif mode == "int":
            values = np.cumsum(_unzigzag(_unpack(payload, entry["len"])), dtype=np.int64)
            out[name] = values.astype(np.dtype(entry["d"]))
        elif mode == "xor":
            bits = _unpack(payload, entry["len"])
            if entry["prev"]:
                bits ^= last_float[stem]
            last_float[stem] = bits
            out[name] = bits.view("<f8").astype(np.float64)
        elif mode == "count":
            counts = _unzigzag(_unpack(payload, entry["len"]))
            if entry["prev"]:
                counts += last_count[stem]
            last_count[stem] = counts
            out[name] = _divide(counts, _denominator(entry["by"], out, counts.size))
        elif mode == "ratio":
            top, bottom = _ratio_sources(name)
            out[name] = _divide(out[top], out[bottom])
        else:
            raise ValueError(f"unknown stored score form {mode!r}")
    return out


def legacy_score_blob(arrays: dict[str, np.ndarray]) -> bytes:
    """The .npz form releases before version 1 read (a migration's downgrade writes it): the
    `meta_*` arrays under their names, each measure as `m_<name>`."""
    out = io.BytesIO()
    named = {name if name.startswith(_META) else f"m_{name}": a for name, a in arrays.items()}
    np.savez(out, **named)
    return out.getvalue()


def _from_npz(blob: bytes | memoryview) -> dict[str, np.ndarray]:
    """The arrays of a legacy .npz: `meta_*` as they are, measures from `m_<name>` members or
    the `names_<n>` / `values_<n>` groups (one 2-D array per dtype)."""
    out: dict[str, np.ndarray] = {}
    with np.load(io.BytesIO(bytes(blob)), allow_pickle=False) as found:
        for member in found.files:
            if member.startswith(_META):
                out[member] = found[member]
            elif member.startswith("m_"):
                out[member[2:]] = found[member]
            elif member.startswith("names_"):
                values = found[f"values_{member[6:]}"]
                out.update(zip(found[member].tolist(), values, strict=True))
    return {name: np.array(values) for name, values in out.items()}


def _order_key(name: str) -> tuple[str, int, str]:
    """Arrays of one measure next to each other, by cutoff (the previous cutoff predicts)."""
    found = _CUTOFF.match(name)
    return (found.group(1), int(found.group(2)), name) if found else (name, -1, name)


def _stem(name: str) -> str:
    """The measure without its cutoff: `ndcg_cut_10` -> `ndcg_cut`."""
    found = _CUTOFF.match(name)
    return found.group(1) if found else name


def _npy(name: str, values: np.ndarray) -> tuple[dict[str, object], bytes]:
    """Any other array, as numpy writes it (no pickles)."""
    out = io.BytesIO()
    np.save(out, values, allow_pickle=False)
    return {"n": name, "m": "npy"}, out.getvalue()


def _zigzag(values: np.ndarray) -> np.ndarray:
    """int64 -> uint64 with small magnitudes small (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...)."""
    values = values.astype("<i8", copy=False)
    return ((values << 1) ^ (values >> 63)).view("<u8")


def _unzigzag(values: np.ndarray) -> np.ndarray:
    """The int64 values _zigzag mapped (a fresh array)."""
    return ((values >> np.uint64(1)).view("<i8") ^ -(values & np.uint64(1)).view("<i8")).copy()


def _pack(values: np.ndarray) -> bytes:
    """uint64 values, most of them 0: a bitmap of the others, their byte width, then their
    bytes grouped by position (low bytes first). zlib then sees a few hundred KB, not MB:
    compressing took most of an encode's time."""
    values = np.ascontiguousarray(values, dtype="<u8")
    nonzero = values != 0
    kept = values[nonzero]
    width = (int(kept.max(initial=0)).bit_length() + 7) // 8
    planes = kept.view(np.uint8).reshape(-1, 8)[:, :width].T.tobytes()
    return bytes((width,)) + np.packbits(nonzero).tobytes() + planes


def _unpack(payload: bytes, size: int) -> np.ndarray:
    """The `size` uint64 values _pack stored (a fresh, writable array)."""
    width = payload[0]
    mask_bytes = (size + 7) // 8
    nonzero = np.unpackbits(np.frombuffer(payload, np.uint8, mask_bytes, 1), count=size)
    nonzero = nonzero.astype(bool)
    count = int(nonzero.sum())
    planes = np.frombuffer(payload, np.uint8, width * count, 1 + mask_bytes).reshape(width, count)
    wide = np.zeros((count, 8), dtype=np.uint8)
    wide[:, :width] = planes.T
    out = np.zeros(size, dtype="<u8")
    out[nonzero] = wide.view("<u8").ravel()
    return out


def _divide(numerator: np.ndarray, denominator: np.ndarray | int) -> np.ndarray:
    """numerator / denominator in float64, NaN where the denominator is 0 (as scoring's
    ratios: only then does a ratio or count form give back the stored bits)."""
    top = numerator.astype(np.float64)
    bottom = np.broadcast_to(np.asarray(denominator, dtype=np.float64), top.shape)
    result = np.full(top.shape, np.nan)
    with np.errstate(all="ignore"):  # huge / tiny overflows to inf, as scoring's would
        np.divide(top, bottom, out=result, where=bottom > 0)
    return result


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal to the bit (NaN payloads and the sign of zero included)."""
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


def _ratio_sources(name: str) -> tuple[str, str]:
    """`ndcg...` -> (`dcg...`, `idcg...`)."""
    rest = name[len("ndcg") :]
    return f"dcg{rest}", f"idcg{rest}"


def _is_ratio(name: str, values: np.ndarray, arrays: dict[str, np.ndarray]) -> bool:
    """The array is exactly DCG / IDCG of the same cutoff (both stored as plain floats)."""
    if not name.startswith("ndcg"):
        return False
    top, bottom = (arrays.get(n) for n in _ratio_sources(name))
    if top is None or bottom is None:
        return False
    # The sources are never ratios themselves (no "dcg..." starts with "ndcg"): the decoder
    # reads the ratios last, from arrays it has already decoded.
    if any(a.dtype != np.float64 or a.shape != values.shape for a in (top, bottom)):
        return False
    return _same_bits(_divide(top, bottom), values)


def _denominator(by: object, arrays: dict[str, np.ndarray], size: int) -> np.ndarray | int:
    """The cutoff (an int) or the named int64 array (num_rel) that counts are divided by."""
    if isinstance(by, int):
        return by
    found = arrays[str(by)]
    if found.shape != (size,):
        raise ValueError(f"stored counts' denominator {by!r} has the wrong length")
    return found


def _as_counts(
    name: str, values: np.ndarray, arrays: dict[str, np.ndarray]
) -> tuple[int | str, np.ndarray] | None:
    """(denominator, whole-number counts) giving back `values` bit for bit, or None: by the
    cutoff the name ends in, else by the query's num_rel."""
    found = _CUTOFF.match(name)
    choices: list[int | str] = [int(found.group(2))] if found and int(found.group(2)) > 0 else []
    num_rel = arrays.get("num_rel")
    if num_rel is not None and num_rel.dtype.kind == "i" and num_rel.shape == values.shape:
        choices.append("num_rel")
    for by in choices:
        bottom = by if isinstance(by, int) else arrays[by]
        with np.errstate(all="ignore"):  # inf and NaN products only rule the form out
            scaled = values * np.asarray(bottom, dtype=np.float64)
        finite = np.isfinite(scaled)
        # Counts past 2**53 would not be exact float64: never the case for a share of a list.
        if np.abs(np.where(finite, scaled, 0.0)).max(initial=0.0) >= 2.0**53:
            continue
        counts = np.rint(np.where(finite, scaled, 0.0)).astype(np.int64)
        if _same_bits(_divide(counts, bottom), values):
            return by, counts
    return None
