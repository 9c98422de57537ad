"""The GPU form of generated kernels: Pallas on GPU, lowered through Triton.

The templates recognise a reference the same way for both forms; only the module they write
differs. What is different on a GPU (docs/generation.md, "The GPU form"):

- every array the kernel computes on (a loaded block, a slice of one, a dot's result) has a
  power-of-two number of elements: blocks are powers of two that divide their dims;
- the grid is parallel: there is no sequential ("arbitrary") axis and no VMEM scratch, so a
  reduction over K (matmul) or over kv blocks (attention) is a `jax.lax.fori_loop` inside the
  kernel over `pl.ds` slices of a block that holds the whole reduced dim;
- a dot needs at least 16 rows, columns and depth (Triton's tl.dot);
- no TPU memory spaces or dimension_semantics; `plgpu.CompilerParams(num_warps, num_stages)`,
  both module constants the autotuner can vary;
- a tile's live values sit in registers, not VMEM: tiles are sized by elements, not bytes.

The form is chosen per request (`kernel_form`): "gpu" when the host is a GPU (the host says so
from its timing worker's hello; the generate op itself runs on a compile worker, on the CPU),
"tpu" otherwise. The compile check of a GPU-form module lowers it for CUDA
(`cost.trace.lower_gpu`), which the Pallas Triton lowering does without a GPU.
"""

from __future__ import annotations

import os

from mkworker import common as C

FORMS = ("tpu", "gpu")
FORM_ENV = "MAXKERNEL_KERNEL_FORM"

IMPORTS = [
    "import functools",
    "import jax",
    "import jax.numpy as jnp",
    "from jax.experimental import pallas as pl",
    "from jax.experimental.pallas import triton as plgpu",
]

# tl.dot's smallest dims.
MIN_DOT = 16
# Elements of one f32 tile kept live in registers (an accumulator, a row block): beyond this
# Triton spills to local memory.
MAX_TILE_ELEMENTS = 32 * 1024
DEFAULT_STAGES = 3
# Shared memory a kernel's pipelined loop may take (the dot operands of NUM_STAGES steps):
# Hopper has 227 KiB per block; the rest is Triton's own (layout conversions, reductions).
SMEM_BUDGET = 160 * 1024


def stages_and_depth(depths, bytes_per_depth: int, want_depth: int):
    """(num_stages, depth) for a pipelined loop whose step moves `bytes_per_depth` bytes of
    shared memory per unit of depth (BK): the deepest step not above `want_depth`, with as
    many stages (3, else 2, else 1) as fit SMEM_BUDGET; None when even one stage of the
    shallowest step does not fit."""
    for stages in (DEFAULT_STAGES, 2, 1):
        fit = [d for d in depths if d <= want_depth and stages * d * bytes_per_depth <= SMEM_BUDGET]
        if fit:
            return stages, max(fit)
    fit = [d for d in depths if d * bytes_per_depth <= SMEM_BUDGET]
    return (1, min(fit)) if fit else None


def kernel_form(requested, platform: str) -> str:
    """The form a generate request asks for: the request's `kernel_form`, else the
    MAXKERNEL_KERNEL_FORM environment variable, else the worker's own platform."""
    form = requested if requested is not None else os.environ.get(FORM_ENV) or None
    if form is None:
        return "gpu" if platform == "gpu" else "tpu"
    if form not in FORMS:
        raise C.WorkerError(C.BAD_REQUEST, f"kernel_form must be one of {', '.join(FORMS)}, "
                                           f"got {form!r}")
    return form


def is_pow2(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def pow2_divisors(dim: int, cap: int, minimum: int = 1) -> list[int]:
    """Powers of two in [minimum, cap] that divide `dim`, ascending."""
    out, b = [], 1
    while b <= min(cap, dim):
        if dim % b == 0 and b >= minimum:
            out.append(b)
        b *= 2
    return out


def largest_pow2(dim: int, cap: int, minimum: int = 1) -> int | None:
    c = pow2_divisors(dim, cap, minimum)
    return c[-1] if c else None


def warps_for(elements: int) -> int:
    """num_warps for a tile of `elements` values: about 256 values per warp, 4 to 16 warps."""
    w = 4
    while w < 16 and elements > w * 256:
        w *= 2
    return w


def params_code() -> str:
    return "plgpu.CompilerParams(num_warps=NUM_WARPS, num_stages=NUM_STAGES)"


def launch_constants(num_warps: int, num_stages: int = DEFAULT_STAGES) -> list:
    return [("NUM_WARPS", num_warps, "warps per program (32 threads each)"),
            ("NUM_STAGES", num_stages, "software-pipelining stages of the kernel's loops")]


def launch_tunables(num_warps: int, num_stages: int = DEFAULT_STAGES) -> dict:
    warps = sorted({max(2, num_warps // 2), num_warps, min(16, num_warps * 2)})
    return {"NUM_WARPS": warps, "NUM_STAGES": sorted({2, num_stages, 4})}


# Emitted into every GPU-form module instead of the TPU `_fit_block`.
FIT_POW2_HELPER = '''

def _fit_pow2(block, dim):
    """The largest power of two <= `block` that divides `dim` (Triton computes on
    power-of-two blocks): the same module runs at other sizes of the task."""
    b = 1
    while b * 2 <= block and dim % (b * 2) == 0:
        b *= 2
    return b
'''


# erf for modules in the GPU form, whose Triton lowering has none (JAX 0.10): Abramowitz and
# Stegun 7.1.26, absolute error below 1.5e-7, in float32.
ERF_HELPER = '''

def _erf(x):
    """erf(x) to within 1.5e-7 (Abramowitz and Stegun 7.1.26): Pallas on GPU has no erf."""
    a = jnp.abs(x.astype(jnp.float32))
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t
            + 0.254829592) * t
    y = 1.0 - poly * jnp.exp(-a * a)
    return jnp.where(x < 0, -y, y).astype(x.dtype)
'''


def helpers_code(helpers) -> str:
    """The module-level helpers a region's code calls (Region.helpers)."""
    return ERF_HELPER if "erf" in helpers else ""


def notes_for_form() -> str:
    return ("GPU form (Pallas on GPU through Triton): power-of-two tiles, a parallel grid, "
            "reductions as loops inside the kernel")
