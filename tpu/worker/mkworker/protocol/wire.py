"""What crosses between the judge and a candidate's process: one JSON header (8-byte length first)
and raw byte blobs (each 8-byte length first). Arrays cross as raw bytes with a dtype name and a
shape that the judge checks (never a pickle); programs cross as serialized StableHLO."""

from __future__ import annotations

import json
import select
import struct
import time

import numpy as np

# Array dtypes that may cross; anything else (object arrays above all) is refused.
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
          "bfloat16", "float32", "float64", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2",
          "float8_e4m3b11fnuz", "float8_e4m3fnuz", "float8_e5m2fnuz", "int4", "uint4")
MAX_HEADER = 64 << 20
MAX_TOTAL = 8 << 30


class WireError(Exception):
    def __init__(self, kind, message, ended=False):
        super().__init__(message)
        self.kind, self.message = kind, message
        self.ended = ended  # the other end closed its socket: the process is gone


def send(sock, header: dict, blobs: list[bytes]) -> None:
    header = dict(header, blobs=[len(b) for b in blobs])
    data = json.dumps(header).encode("utf-8")
    sock.sendall(struct.pack(">Q", len(data)) + data)
    for b in blobs:
        sock.sendall(struct.pack(">Q", len(b)))
        sock.sendall(b)


def recv(sock, deadline: float, cancel=None, what="the peer") -> tuple[dict, list[bytes]]:
    n = struct.unpack(">Q", _exact(sock, 8, deadline, cancel, what))[0]
    if n > MAX_HEADER:
        raise WireError("runtime", f"{what} sent a header of {n} bytes")
    try:
        header = json.loads(_exact(sock, n, deadline, cancel, what))
    except ValueError:
        raise WireError("runtime", f"{what} sent a header that is not JSON") from None
    if not isinstance(header, dict) or not isinstance(header.get("blobs"), list) or not all(
            isinstance(x, int) and x >= 0 for x in header["blobs"]) or sum(header["blobs"]) > MAX_TOTAL:
        raise WireError("runtime", f"{what} sent a malformed header")
    blobs = []
    for _ in header["blobs"]:
        size = struct.unpack(">Q", _exact(sock, 8, deadline, cancel, what))[0]
        blobs.append(_exact(sock, size, deadline, cancel, what))
    if [len(b) for b in blobs] != header["blobs"]:
        raise WireError("runtime", f"{what} sent blobs of other sizes than announced")
    return header, blobs


def _exact(sock, n, deadline, cancel, what) -> bytes:
    parts, got = [], 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise WireError("timeout", f"{what} gave no answer in time; it was killed")
        ready = select.select([sock], [], [], min(left, 0.25))[0]
        if cancel is not None and cancel.cancelled:
            raise WireError("cancelled", "cancelled by request")
        if not ready:
            continue
        part = sock.recv(min(n - got, 1 << 22))
        if not part:
            raise WireError("runtime", f"{what} ended without an answer (it exited, raised past its "
                                       f"handler, or was killed by a limit)", ended=True)
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def array_meta(a: np.ndarray) -> dict:
    return {"dtype": a.dtype.name, "shape": list(a.shape)}


def to_blob(a) -> bytes:
    return np.ascontiguousarray(np.asarray(a)).tobytes()


def from_blob(meta, blob: bytes) -> np.ndarray:
    """An array from raw bytes, its dtype and shape checked (a header is the child's word)."""
    import jax.numpy as jnp
    if not isinstance(meta, dict) or meta.get("dtype") not in DTYPES or not isinstance(meta.get("shape"), list) \
            or not all(isinstance(d, int) and 0 <= d < 1 << 40 for d in meta["shape"]):
        raise WireError("runtime", "an array crossed with a malformed dtype or shape")
    dt = jnp.dtype(meta["dtype"])
    count = int(np.prod(meta["shape"], dtype=np.int64))
    if count * dt.itemsize != len(blob):
        raise WireError("runtime", "an array's bytes do not match its dtype and shape")
    a = np.frombuffer(blob, dtype=dt, count=count).reshape(meta["shape"]).copy()
    a.flags.writeable = False
    return a
