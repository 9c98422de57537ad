"""Transposed convolutions for the conv template: a conv_general_dilated with input dilation
s > 1 (what `jax.lax.conv_transpose` and PyTorch's ConvTranspose become) rewritten as one
stride-1 convolution of the undilated input whose output channels are (phase, channel).

Along an axis with dilation s, window K and padding (lo, hi), output y = s*u + r (phase r) sums
the taps d with (r + d - lo) % s == 0: d = d0 + s*t with d0 = (lo - r) % s, reading input
u + t + off_r with off_r = (r + d0 - lo) / s. So every phase is a stride-1 window over the
input; with `base` the smallest off_r, window position q = t + off_r - base of phase r reads
weight tap d0 + s*t (or a zero tap where the phase has none there). The dilated input's zeros
are never read or multiplied: the kernel is the stride-1 conv kernel on the input, the weight
is gathered into (window..., cin, phases * cout) once in the entry, and the (u, phase) output is
interleaved back into y = s*u + r after the kernel.
"""

from __future__ import annotations

import math
from typing import NamedTuple


class AxisPhases(NamedTuple):
    s: int  # the input dilation (the transposed convolution's stride)
    k: int  # the weight's window
    base: int  # the input index window position 0 reads, relative to u (negative: padding)
    window: int  # the stride-1 window every phase fits in
    taps: tuple  # per phase r, per window position q: the weight tap, or k (the zero tap)


def axis_phases(s: int, k: int, lo: int) -> AxisPhases:
    runs = []  # per phase: (first tap d0, taps T, input offset)
    for r in range(s):
        d0 = (lo - r) % s
        runs.append((d0, max(0, -(-(k - d0) // s)), (r + d0 - lo) // s))
    live = [(d0, t, off) for d0, t, off in runs if t > 0]
    base = min(off for _, _, off in live)
    window = max(off - base + t for _, t, off in live)
    taps = tuple(tuple(d0 + s * (q - (off - base)) if 0 <= q - (off - base) < t else k
                       for q in range(window)) for d0, t, off in runs)
    return AxisPhases(s, k, base, window, taps)


def used_taps(axes) -> float:
    """The share of the gathered weight's taps that are not zero (the MXU work that counts)."""
    used = math.prod(sum(d < a.k for row in a.taps for d in row) for a in axes)
    return used / math.prod(a.s * a.window for a in axes)


def weight_lines(wv: str, axes, q_names) -> list[str]:
    """Entry lines that build `w_phases` (window..., cin, phases * co) from the channels-last
    weight `wv` (k..., cin, co), the columns ordered (phase..., channel). Static slices and
    concatenations only: a gather here made libtpu's static cycle profile abort."""
    k = len(axes)
    phases = ", ".join(f"range({a.s})" for a in axes)
    window = ", ".join(q_names)
    pick = ", ".join(f"taps[{i}][r[{i}]][q[{i}]]" for i in range(k))
    return [
        "# Transposed: along each axis, window position q of output phase r reads weight tap",
        "# taps[axis][r][q] (the last index is an appended zero tap), so all phases are one",
        "# stride-1 convolution of the undilated input with (phase, channel) output columns.",
        f"taps = {tuple(a.taps for a in axes)!r}",
        f"w_zero = jnp.pad({wv}, ({'(0, 1), ' * k}(0, 0), (0, 0)))",
        "w_phases = jnp.stack([",
        f"    jnp.concatenate([w_zero[{pick}] for r in itertools.product({phases})], axis=-1)",
        f"    for q in itertools.product(*map(range, ({window}{',' if k == 1 else ''})))",
        f"]).reshape({window}, cin, {math.prod(a.s for a in axes)} * co)",
    ]


def interleave_lines(axes, u_names, full_names) -> list[str]:
    """Entry lines that turn the kernel's `out` (n, u..., phases * co) into (n, y..., co) with
    y = s*u + r, cut to the reference's output extents."""
    k = len(axes)
    s = [a.s for a in axes]
    perm = [0] + [p for i in range(k) for p in (1 + i, 1 + k + i)] + [2 * k + 1]
    cut = ", ".join(f":{f}" for f in full_names)
    return [
        "# Phases back into place: output y = s*u + r (the last phases past the end cut off).",
        (f"out = out.reshape(n, {', '.join(u_names)}, {', '.join(map(str, s))}, co)"
         f".transpose({', '.join(map(str, perm))})"),
        (f"out = out.reshape(n, {', '.join(f'{u} * {si}' for u, si in zip(u_names, s))}, co)"
         f"[:, {cut}]"),
    ]
