"""What crosses the wire between a party and the coordinator (issue 38): data only, never code.

:func:`encode` turns a payload (nested dicts with string keys, lists, tuples, strings, numbers, booleans, None,
bytes, numpy arrays of plain numeric dtypes, and privdist's :class:`~privdist.privacy.release.Release` declarations)
into bytes: a magic tag, a JSON header describing the tree and the arrays, then the arrays' raw little-endian bytes.
:func:`decode` is its inverse and accepts nothing else: no pickle, no object arrays, no class named by the sender
other than a dp-accounting event rebuilt field by field (:func:`privdist.privacy.events.event_from_dict`). A
malformed payload is a :class:`WireFormatError`, never an arbitrary exception or an executed object.
"""

from __future__ import annotations

import json
import math
import struct

import numpy as np

from ...errors import PrivdistError

__all__ = ["encode", "decode", "WireFormatError", "DTYPES"]

MAGIC = b"PDW1"
#: The array dtypes that may cross the wire (little-endian on the wire).
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")


class WireFormatError(PrivdistError, ValueError):
    """A payload that is not privdist's wire format (truncated, tampered, or carrying a type it does not admit)."""


def _tree(value, arrays: list):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else {"__float__": repr(v)}
    if isinstance(value, np.ndarray):
        if value.dtype.name not in DTYPES:
            raise WireFormatError(f"arrays of dtype {value.dtype} do not cross the wire (only {DTYPES})")
        arrays.append(np.ascontiguousarray(value.astype(value.dtype.newbyteorder("<"), copy=False)))
        return {"__nd__": len(arrays) - 1, "dtype": value.dtype.name, "shape": list(value.shape)}
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (bytes, bytearray)):
        arrays.append(np.frombuffer(bytes(value), dtype=np.uint8))
        return {"__bytes__": len(arrays) - 1, "dtype": "uint8", "shape": [len(value)]}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise WireFormatError("only string keys cross the wire")
        if any(k.startswith("__") for k in value):
            raise WireFormatError("keys starting with '__' are reserved by the wire format")
        return {k: _tree(v, arrays) for k, v in value.items()}
    if isinstance(value, tuple):
        return {"__tuple__": [_tree(v, arrays) for v in value]}
    if isinstance(value, list):
        return [_tree(v, arrays) for v in value]
    from ...privacy.release import Release

    if isinstance(value, Release):
        return {"__release__": _tree(value.to_dict(), arrays)}
    raise WireFormatError(f"a {type(value).__name__} does not cross the wire (data only)")


def encode(value) -> bytes:
    """The bytes of ``value`` (module docstring). Raises :class:`WireFormatError` for a type that may not cross."""
    arrays: list[np.ndarray] = []
    tree = _tree(value, arrays)
    offsets, pos = [], 0
    for a in arrays:
        offsets.append([pos, a.nbytes])
        pos += a.nbytes
    header = json.dumps({"tree": tree, "arrays": offsets}, separators=(",", ":"), allow_nan=False).encode()
    return b"".join([MAGIC, struct.pack("<I", len(header)), header, *(a.tobytes() for a in arrays)])


def _untree(node, arrays):
    if isinstance(node, list):
        return [_untree(v, arrays) for v in node]
    if not isinstance(node, dict):
        return node
    if "__nd__" in node:
        return arrays(node)
    if "__bytes__" in node:
        return arrays({**node, "__nd__": node["__bytes__"]}).tobytes()
    if "__float__" in node:
        if node["__float__"] not in ("inf", "-inf", "nan"):
            raise WireFormatError(f"bad float {node['__float__']!r}")
        return float(node["__float__"])
    if "__tuple__" in node:
        return tuple(_untree(v, arrays) for v in node["__tuple__"])
    if "__release__" in node:
        from ...privacy.release import Release

        try:
            return Release.from_dict(_untree(node["__release__"], arrays))
        except PrivdistError:
            raise
        except Exception as exc:  # a declaration that does not rebuild is a malformed payload
            raise WireFormatError(f"a release declaration that does not rebuild: {exc}") from None
    if any(k.startswith("__") for k in node):
        raise WireFormatError(f"unknown reserved key in {sorted(node)}")
    return {k: _untree(v, arrays) for k, v in node.items()}


def decode(data: bytes):
    """The payload of :func:`encode`'s bytes (arrays are read-only views copied into writable arrays)."""
    if not isinstance(data, (bytes, bytearray, memoryview)) or bytes(data[:4]) != MAGIC or len(data) < 8:
        raise WireFormatError("not a privdist payload (bad magic or too short)")
    (n,) = struct.unpack("<I", bytes(data[4:8]))
    try:
        header = json.loads(bytes(data[8:8 + n]))
        tree, offsets = header["tree"], header["arrays"]
    except (ValueError, KeyError, TypeError):
        raise WireFormatError("a payload whose header does not parse") from None
    body = memoryview(data)[8 + n:]

    def array(node):
        try:
            start, size = offsets[int(node["__nd__"])]
            dtype = np.dtype(node["dtype"]).newbyteorder("<")
            shape = tuple(int(s) for s in node["shape"])
        except (IndexError, KeyError, TypeError, ValueError):
            raise WireFormatError("a payload with a bad array entry") from None
        if node["dtype"] not in DTYPES or start < 0 or start + size > len(body) or \
                size != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
            raise WireFormatError("a payload whose array does not match its declared size (truncated?)")
        return np.frombuffer(body[start:start + size], dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))

    return _untree(tree, array)
