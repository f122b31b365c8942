"""Read an ONNX file's graph and tensor SHAPES without its weights.

``read_model_shapes(path)`` memory-maps the file and walks the protobuf wire format of
``ModelProto`` -> ``graph`` -> ``initializer``: every initializer whose stored data exceeds
``KEEP_BYTES`` is rebuilt without its data fields (its name, type and dims stay), everything
else is copied as is. Only the small rebuilt message is parsed, so import time and memory
follow the graph, not the weights: no protobuf 2 GB limit, and no external data file is ever
opened (a dynamo export whose ``.onnx.data`` is absent imports). Small tensors (shape targets
of Reshape, axes, ...) keep their values for shape inference's data propagation.
"""

from __future__ import annotations

import mmap
from pathlib import Path

KEEP_BYTES = 4096  # initializers up to this size keep their values
_GRAPH = 7  # ModelProto.graph
_INITIALIZER = 5  # GraphProto.initializer
_TENSOR_DATA = {4, 5, 6, 7, 9, 10, 11}  # TensorProto float/int32/string/int64/raw/double/uint64 data


class WireError(ValueError):
    """Not a protobuf message of the expected shape."""


def _varint(buf, i: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise WireError("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def _encode_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _fields(buf, start: int, end: int):
    """(field number, wire type, field start, payload start, payload end) for each field."""
    i = start
    while i < end:
        f0 = i
        key, i = _varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            _, j = _varint(buf, i)
        elif wt == 1:
            j = i + 8
        elif wt == 2:
            n, i = _varint(buf, i)
            j = i + n
        elif wt == 5:
            j = i + 4
        else:
            raise WireError(f"unsupported wire type {wt}")
        if j > end or field == 0:
            raise WireError("field runs past its message")
        yield field, wt, f0, i, j
        i = j


def _length_delimited(field: int, payload: bytes) -> bytes:
    return _encode_varint((field << 3) | 2) + _encode_varint(len(payload)) + payload


def _strip_tensor(buf, start: int, end: int) -> bytes | None:
    """The TensorProto without its data fields, or None to keep it as is (small)."""
    data_bytes = 0
    for field, _, _, a, b in _fields(buf, start, end):
        if field in _TENSOR_DATA:
            data_bytes += b - a
    if data_bytes <= KEEP_BYTES:
        return None
    return b"".join(bytes(buf[f0:b]) for field, _, f0, _, b in _fields(buf, start, end) if field not in _TENSOR_DATA)


def _strip_graph(buf, start: int, end: int) -> bytes:
    parts = []
    for field, wt, f0, a, b in _fields(buf, start, end):
        if field == _INITIALIZER and wt == 2:
            stripped = _strip_tensor(buf, a, b)
            if stripped is not None:
                parts.append(_length_delimited(_INITIALIZER, stripped))
                continue
        parts.append(bytes(buf[f0:b]))
    return b"".join(parts)


def strip_weights(buf) -> bytes:
    """A serialized ModelProto with the large initializers' data removed."""
    parts = []
    for field, wt, f0, a, b in _fields(buf, 0, len(buf)):
        if field == _GRAPH and wt == 2:
            parts.append(_length_delimited(_GRAPH, _strip_graph(buf, a, b)))
        else:
            parts.append(bytes(buf[f0:b]))
    return b"".join(parts)


def read_model_shapes(path: str | Path):
    """The ``onnx.ModelProto`` at path with large weights' data left out (see the module doc).
    Raises OSError for a missing file and WireError (or protobuf's DecodeError) for junk."""
    import onnx

    with open(path, "rb") as f:
        size = f.seek(0, 2)
        if size == 0:
            raise WireError("empty file")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            data = strip_weights(mm)
    model = onnx.ModelProto()
    model.ParseFromString(data)
    return model


def external_data_files(path: str | Path) -> list[Path]:
    """The files the ONNX model at ``path`` keeps tensors in (its initializers' and Constant
    nodes' ``external_data`` locations, resolved against the model's folder): inputs a report
    must not be written over. Read as ``read_model_shapes`` reads (no weights); a file that
    does not read as ONNX has none (its import says why)."""
    try:
        graph = read_model_shapes(path).graph
    except Exception:  # noqa: BLE001 - junk, a missing file: the import reports it
        return []
    tensors = list(graph.initializer) + [a.t for n in graph.node if n.op_type == "Constant"
                                         for a in n.attribute if a.HasField("t")]
    folder = Path(path).parent
    return [folder / e.value for t in tensors if t.data_location == 1 for e in t.external_data
            if e.key == "location" and e.value]
