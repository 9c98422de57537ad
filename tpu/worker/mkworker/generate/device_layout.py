"""The layout XLA gives an array in TPU memory, predicted from its shape, and the transpose that
turns it into the row-major view a Pallas kernel's operand must have.

XLA's TPU compiler does not keep a program's arrays row-major: it picks, per array, the dimension
that goes in the 128 lanes and the one in the sublanes so as to pad least, and keeps the others
in their order above them (f32[2, 1024, 1024, 64] lives as W in the lanes and C in the sublanes).
Mosaic takes row-major operands only, so a kernel that reads such an array as it is written in
JAX makes XLA copy it into row-major first, and its output back: for a 2x2 average pooling of
that array the two copies cost 2.4 times the kernel itself (bench/RESULTS.md). A kernel that
reads `jnp.transpose(x, order)` instead, with `order` the array's dimensions from major to minor
in XLA's layout, gets a bitcast: no copy.

The rule (lanes: the dimension padded least to a multiple of 128; sublanes: of the rest, the one
padded least to a multiple of 8; ties go to the later dimension) is read off libtpu 0.0.42.1's
choices; tests/worker/test_device_layout.py holds it against the compiler's own."""

from __future__ import annotations

LANES, SUBLANES = 128, 8


def _padding(n: int, m: int) -> float:
    return (-(-n // m) * m) / n if n > 0 else 1.0


def major_to_minor(shape) -> tuple[int, ...]:
    """The dimensions of an array of `shape` from major to minor in XLA's TPU layout."""
    dims = list(range(len(shape)))
    if len(dims) < 2:
        return tuple(dims)
    # min over (padding, -index): the least padding, the later dimension on a tie
    lane = min(dims, key=lambda d: (_padding(shape[d], LANES), -d))
    rest = [d for d in dims if d != lane]
    sub = min(rest, key=lambda d: (_padding(shape[d], SUBLANES), -d))
    return tuple(d for d in rest if d != sub) + (sub, lane)


def is_row_major(shape) -> bool:
    order = major_to_minor(shape)
    return order == tuple(range(len(shape)))
