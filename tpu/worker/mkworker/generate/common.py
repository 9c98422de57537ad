"""Shared pieces of the kernel generator (the `generate` op, docs/generation.md).

What a template gets (GenContext), what it returns (Generated), how it refuses (NoTemplate), the
TPU block-size and VMEM rules, and the writer that turns named constants and code text into a
module a kernel engineer would keep.

Template interface: `generate(ctx: GenContext) -> Generated | None`. None means "not my class"
(the dispatcher tries the next template); NoTemplate means "my class, but a part is not covered".
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import textwrap

import jax.numpy as jnp
import numpy as np

MIB = 1024 * 1024
# Physical VMEM per TensorCore of each generation (knowledge/data/tpu_generations.json, from
# JAX's TpuInfo; a unit test keeps the two equal). The 16/32 MiB scoped limit is only a default:
# a generated kernel plans against the physical VMEM and sets vmem_limit_bytes to its plan.
GENERATION_VMEM = {"v4": 16 * MIB, "v5e": 128 * MIB, "v5p": 64 * MIB, "v6e": 128 * MIB,
                   "v7": 64 * MIB}
GENERATION_ALIASES = {"tpu v4": "v4", "v4p": "v4", "tpu v4 pod": "v4", "v5 lite": "v5e",
                      "v5litepod": "v5e", "v5lite": "v5e", "tpu v5 lite": "v5e", "tpu v5e": "v5e",
                      "v5": "v5p", "tpu v5": "v5p", "tpu v5p": "v5p", "trillium": "v6e",
                      "v6 lite": "v6e", "tpu v6 lite": "v6e", "tpu v6e": "v6e", "v7x": "v7",
                      "tpu7x": "v7", "tpu7": "v7", "ironwood": "v7"}
DEFAULT_TARGET = {"name": "v5e"}
# The VMEM a generated kernel may plan for: the capacity less headroom for Mosaic's own internal
# scratch (the epilogue's temporaries, semaphores, DMA descriptors).
VMEM_HEADROOM = 0.75
# vmem_limit_bytes = the plan x this + VMEM_LIMIT_SLACK (Mosaic's temporaries), within capacity.
VMEM_LIMIT_FACTOR = 1.25
VMEM_LIMIT_SLACK = 4 * MIB


def generation_of(name) -> str | None:
    """The generation key ("v5e"...) a target name or device kind names, else None."""
    if not isinstance(name, str):
        return None
    key = name.strip().lower()
    return key if key in GENERATION_VMEM else GENERATION_ALIASES.get(key)


def target_vmem_capacity(target: dict) -> int:
    """The VMEM a kernel for this target can use: an explicit target.vmem_limit_bytes, else the
    generation's physical VMEM per core, else 16 MiB (an unknown generation: the safe default)."""
    v = target.get("vmem_limit_bytes")
    if v:
        return int(v)
    return GENERATION_VMEM.get(generation_of(target.get("name")), 16 * MIB)


def target_vmem_limit(target: dict) -> int:
    return target_vmem_capacity(target)


def vmem_limit_for(plan_bytes: int, capacity: int) -> int:
    """The vmem_limit_bytes a kernel sets for a plan of `plan_bytes` per step: the plan with room
    for Mosaic's temporaries, whole MiB, at least 16 MiB (the default scoped limit, never
    lowered) and at most the capacity."""
    want = int(plan_bytes * VMEM_LIMIT_FACTOR) + VMEM_LIMIT_SLACK
    want = -(-want // MIB) * MIB
    return max(min(want, capacity), min(16 * MIB, capacity))
LANE = 128
# Block sizes the generators prefer, largest first: MXU-friendly, and big enough that the
# per-step overhead (about 0.35 us) is small against the step's work.
PREFERRED_BLOCKS = (512, 256, 1024, 128, 2048, 64, 32, 16, 8)

STANDARD_IMPORTS = [
    "import functools",
    "import jax",
    "import jax.numpy as jnp",
    "from jax.experimental import pallas as pl",
    "from jax.experimental.pallas import tpu as pltpu",
]


class NoTemplate(Exception):
    """The reference belongs to a template's class but uses something it does not cover.

    `primitives` are the jaxpr primitive names at fault; `reason` says why in a sentence."""

    def __init__(self, message: str, primitives=(), locations=None):
        super().__init__(message)
        self.message = message
        self.primitives = list(primitives)
        self.locations = list(locations or [])


@dataclasses.dataclass
class Generated:
    kernel_class: str
    description: str
    source: str
    entry: str
    imports: list
    body: str
    tunables: dict
    notes: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class GenContext:
    """The reference as the templates see it.

    closed_jaxpr  the reference traced at the task's shapes, static arguments folded in, with
                  nested jit / custom_jvp / custom_vjp calls INLINED (one flat equation list)
    raw_jaxpr     the same trace before inlining (its equations keep the reference's source
                  lines; used for messages)
    in_avals      ShapedArray of each dynamic (array) argument, positional order
    arg_names     the reference's parameter names of those arguments
    static_args   {name: value} for arguments that are Python numbers / bools
    params        every parameter name in the reference's order (arrays and statics)
    signature     the entry's parameter list text, e.g. "x, w, b, eps"
    entry         the name the generated module must define
    target        {"name": ..., "vmem_limit_bytes": ...}
    out_avals     output ShapedArrays (the reference may return a tuple)
    out_tree      the output pytree structure (a single array or a tuple/list...)
    reference_name, reference_file, reference_source: for readable text and line numbers
    form          "tpu" (Mosaic) or "gpu" (Triton, generate.gpu_form): the module the template writes
    retrace       specs -> the reference traced at other array shapes (None with keyword arrays)
    """

    closed_jaxpr: object
    in_avals: list
    arg_names: list
    static_args: dict
    params: list
    signature: str
    entry: str
    target: dict
    out_avals: list
    out_tree: object = None
    raw_jaxpr: object = None
    reference_name: str = "reference"
    reference_file: str | None = None
    reference_source: str | None = None
    form: str = "tpu"  # "tpu" or "gpu" (generate.gpu_form): which Pallas backend the module targets
    # The reference traced again at other shapes of its array arguments (a list of
    # ShapeDtypeStruct, positional; static arguments as before): a flat ClosedJaxpr. None
    # where the reference takes keyword arrays.
    retrace: object = None

    # -- conveniences
    @property
    def jaxpr(self):
        return self.closed_jaxpr.jaxpr

    @property
    def eqns(self):
        return self.closed_jaxpr.jaxpr.eqns

    @property
    def consts(self):
        return self.closed_jaxpr.consts

    @property
    def vmem_limit(self) -> int:
        """The VMEM capacity the kernel plans against (target_vmem_capacity). The GPU form keeps
        the 16 MiB plan it always had: a Triton block lives in registers and shared memory."""
        cap = target_vmem_capacity(self.target)
        return min(cap, 16 * MIB) if self.form == "gpu" else cap

    @property
    def vmem_budget(self) -> int:
        return int(self.vmem_limit * VMEM_HEADROOM)

    @property
    def single_output(self) -> bool:
        """True when the reference returns one array (not a tuple of one)."""
        if len(self.out_avals) != 1:
            return False
        if self.out_tree is None:
            return True
        import jax
        return jax.tree_util.treedef_is_leaf(self.out_tree)

    def primitive_names(self) -> list[str]:
        seen = []
        for e in self.eqns:
            if e.primitive.name not in seen:
                seen.append(e.primitive.name)
        return seen

    def name_of_invar(self, var) -> str | None:
        """The reference's parameter name of a top-level input variable."""
        for v, n in zip(self.jaxpr.invars, self.arg_names):
            if v is var:
                return n
        return None

    def static_name_for(self, value) -> str | None:
        """A static argument whose value is exactly `value` (so generated code can say `eps`
        rather than 1e-05), unless the value is too common to attribute (0, 1, 2, -1, 0.5)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if value in (0, 1, 2, -1, 0.5, -0.5):
            return None
        hits = [n for n, v in self.static_args.items()
                if not isinstance(v, bool) and isinstance(v, (int, float)) and v == value]
        return hits[0] if len(hits) == 1 else None


# ---------------------------------------------------------------------------
# Dtypes and the TPU tiling rules.

def dtype_name(dtype) -> str:
    return jnp.dtype(dtype).name


def dtype_code(dtype) -> str:
    """`jnp.float32` etc. for generated text."""
    return f"jnp.{jnp.dtype(dtype).name}"


def itemsize(dtype) -> int:
    return jnp.dtype(dtype).itemsize


def sublane_multiple(dtype) -> int:
    """Rows of the native (sublane, 128) tile: 8 for 32-bit, 16 for 16-bit, 32 for 8-bit."""
    return {4: 8, 2: 16, 1: 32}.get(itemsize(dtype), 8)


def padded_bytes(shape, dtype) -> int:
    """Bytes a block of `shape` occupies in VMEM, the last two dims padded to the native tile."""
    shape = [int(d) for d in shape]
    if not shape:
        return itemsize(dtype) * sublane_multiple(dtype) * LANE
    dims = list(shape)
    dims[-1] = _round_up(dims[-1], LANE)
    if len(dims) >= 2:
        dims[-2] = _round_up(dims[-2], sublane_multiple(dtype))
    else:
        dims = [sublane_multiple(dtype)] + dims
    return int(math.prod(dims)) * itemsize(dtype)


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def block_ok(block: int, dim: int, align: int) -> bool:
    """The TPU rule for one of the last two block dims: a multiple of `align`, or the full dim.
    The block must also divide the dim (generated kernels never pad)."""
    return block == dim or (block % align == 0 and dim % block == 0)


def block_candidates(dim: int, align: int, cap: int | None = None) -> list[int]:
    """Valid block sizes for a dim, ascending: divisors that are multiples of `align`, and the
    full dim. `cap` drops candidates larger than it (the full dim is kept only if <= cap)."""
    dim = int(dim)
    out = set()
    if align <= dim:
        for b in range(align, dim + 1, align):
            if dim % b == 0:
                out.add(b)
    out.add(dim)
    if cap is not None:
        out = {b for b in out if b <= cap}
    return sorted(out)


def leading_candidates(dim: int, cap: int | None = None) -> list[int]:
    """Block sizes for a leading (non-tiled) dim: any divisor."""
    out = [b for b in range(1, int(dim) + 1) if dim % b == 0]
    return [b for b in out if cap is None or b <= cap]


def prefer_block(cands, preferred=PREFERRED_BLOCKS, fits=None) -> int | None:
    """The first preferred size among `cands` that `fits(b)` accepts, else the largest that
    fits, else None."""
    ok = [b for b in cands if fits is None or fits(b)]
    if not ok:
        return None
    for p in preferred:
        if p in ok:
            return p
    return max(ok)


def step_vmem(inputs=(), outputs=(), scratch=()) -> int:
    """Per-grid-step VMEM: every blocked input and output double-buffered, plus scratch.
    Each item is (block_shape, dtype)."""
    total = 0
    for shape, dt in inputs:
        total += 2 * padded_bytes(shape, dt)
    for shape, dt in outputs:
        total += 2 * padded_bytes(shape, dt)
    for shape, dt in scratch:
        total += padded_bytes(shape, dt)
    return total


def around(values, chosen, keep: int = 6) -> list:
    """At most `keep` of the sorted `values`, centred on the chosen one (a tunable's list stays a
    small autotuning space)."""
    values = sorted(set(values))
    if len(values) <= keep or chosen not in values:
        return values[:keep] if chosen not in values else values
    i = values.index(chosen)
    lo = max(0, min(i - keep // 2, len(values) - keep))
    return values[lo:lo + keep]


def mib(n: int) -> str:
    return f"{n / (1024 * 1024):.2f} MiB"


def shape_text(shape) -> str:
    return "x".join(str(int(d)) for d in shape) if len(shape) else "scalar"


# ---------------------------------------------------------------------------
# The module writer.

def literal(value) -> str:
    """Python text for a constant from the jaxpr (floats exact, inf/nan spelled via jnp)."""
    if isinstance(value, (bool, np.bool_)):
        return "True" if bool(value) else "False"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    f = float(value)
    if math.isnan(f):
        return "jnp.nan"
    if math.isinf(f):
        return "jnp.inf" if f > 0 else "-jnp.inf"
    return repr(f)


def static_name(ctx: GenContext, value, dtype) -> str | None:
    """The static argument whose value, in the literal's dtype, is the literal (eps folded into
    an f32 constant), unless the value is too common to attribute (0, 1, 2, -1, 0.5)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            value in (0, 1, 2, -1, 0.5, -0.5):
        return None
    hits = [n for n, sv in ctx.static_args.items()
            if not isinstance(sv, bool) and isinstance(sv, (int, float))
            and np.asarray(sv).astype(dtype_name(dtype)) == np.asarray(value).astype(dtype_name(dtype))]
    return hits[0] if len(hits) == 1 else None


def literal_code(ctx: GenContext, value, dtype, statics: list) -> str:
    """A literal of the reference as kernel text: the static argument it came from (added to
    `statics`, the arguments the kernel reads), else the number, parenthesised when negative."""
    name = static_name(ctx, value, dtype)
    if name is not None:
        if name not in statics:
            statics.append(name)
        return name
    text = literal(value)
    return f"({text})" if text.startswith("-") else text


def load_operand(writer, var, name: str, kind: str) -> str:
    """An epilogue writer's input read from its ref, in f32: recorded in the writer's
    `operands` (what the entry passes), `names` and `kind`, and loaded once in `lines`."""
    writer.operands.append((var, name, kind))
    writer.names[id(var)] = name
    writer.kind[id(var)] = kind
    writer.lines.append(f"{name} = {name}_ref[...].astype(jnp.float32)")
    return name


def assign_once(expr: str, seen: dict, lines: list, fresh) -> str:
    """The local holding `expr`: a new one (named by `fresh()`, its line added to `lines`) the
    first time, the same one after (jnp.var recomputes its mean: computed once)."""
    name = seen.get(expr)
    if name is None:
        name = seen[expr] = fresh()
        lines.append(f"{name} = {expr}")
    return name


def compiler_params_code(semantics, ctx: GenContext, vmem_needed: int | None = None) -> str:
    """`pltpu.CompilerParams(...)` text, with vmem_limit_bytes always set from the plan
    (vmem_limit_for): the scoped default (16 MiB on v5e) is only a default."""
    sem = ", ".join(f'"{s}"' for s in semantics)
    if len(semantics) == 1:
        sem += ","
    extra = ""
    if vmem_needed is not None:
        limit = vmem_limit_for(vmem_needed, ctx.vmem_limit)
        extra = f", vmem_limit_bytes={limit // MIB} * 1024 * 1024"
    return f"pltpu.CompilerParams(dimension_semantics=({sem}){extra})"


def write_module(*, description: str, ctx: GenContext, kernel_class: str, constants,
                 code: str, imports=None) -> tuple[str, list, str]:
    """(source, imports, body): a docstring, the imports, the named block constants (one per
    line, with a comment each) and the code (kernel functions + the entry).

    `constants` is a list of (NAME, value, comment). The body is the module without its import
    lines (what an editor inserts beside the reference)."""
    imports = list(imports or STANDARD_IMPORTS)
    if "functools." not in code:
        imports = [i for i in imports if i != "import functools"]
    about = (f"Generated by MaxKernel (class {kernel_class}) from the reference "
             f"`{ctx.reference_name}`; the block constants below are what the autotuner varies.")
    doc = ('"""' + textwrap.fill(description + ".", 96, break_on_hyphens=False) + "\n\n"
           + textwrap.fill(about, 96) + '\n"""\n')
    head = ""
    if constants:
        lines = ["# Block sizes (module-level so the autotuner can substitute them)."]
        for name, value, comment in constants:
            lines.append(f"{name} = {value!r}" + (f"  # {comment}" if comment else ""))
        head = "\n".join(lines) + "\n\n\n"
    body = head + code.strip("\n") + "\n"
    source = doc + "\n" + "\n".join(imports) + "\n\n" + body
    return source, imports, body


def indent(text: str, n: int = 4) -> str:
    pad = " " * n
    return "\n".join(pad + line if line.strip() else line for line in text.splitlines())


def static_partial(fn_name: str, ctx: GenContext, used: list[str]) -> str:
    """`functools.partial(_kernel, eps=eps)` when the kernel reads static arguments, else the
    name."""
    if not used:
        return fn_name
    kw = ", ".join(f"{n}={n}" for n in used)
    return f"functools.partial({fn_name}, {kw})"


def folded_statics_notes(ctx: GenContext, used) -> list[str]:
    """The note naming the static arguments the kernel does not read (the trace folded their
    task values into the equations), or no note when there are none."""
    folded = {k: v for k, v in ctx.static_args.items() if k not in used}
    if not folded:
        return []
    return ["static arguments folded in at their task values: " +
            ", ".join(f"{k}={v!r}" for k, v in folded.items())]


def pallas_call_code(*, kernel: str, out_shape: str, grid: str, in_specs, out_spec: str,
                     options, args, final: str, result: str = "{}") -> str:
    """The entry's `out = pl.pallas_call(...)(args)` with one keyword a line, then
    `return out.reshape(final)`, wrapped in `result` (a format with one `{}`). `options` are
    the last keywords (scratch_shapes, compiler_params: what the kernel form decides), each as
    `name=value` text."""
    specs = indent("\n".join(s + "," for s in in_specs), 8)
    extra = "".join(f"    {o},\n" for o in options)
    return f'''out = pl.pallas_call(
    {kernel},
    out_shape={out_shape},
    grid={grid},
    in_specs=[
{specs}
    ],
    out_specs={out_spec},
{extra})({", ".join(args)})
return {result.format(f"out.reshape({final})")}'''


# Emitted into every generated module: effective tiles are chosen from the runtime shapes.
FIT_BLOCK_HELPER = '''

def _fit_block(block, dim, align):
    """The largest tile <= `block` that divides `dim` and is a multiple of `align` (the TPU
    tiling rule), else the whole dim: the same module runs at other sizes of the task."""
    if dim <= block:
        return dim
    for b in range(block - block % align, 0, -align):
        if dim % b == 0:
            return b
    return dim
'''


_PRECISION_RANK = {"DEFAULT": 0, "HIGH": 1, "HIGHEST": 2}


def mosaic_precision_code(precisions) -> str | None:
    """The `precision=` text for the kernel's dots from the reference's dot precisions (None
    when Mosaic's default serves). Mosaic takes DEFAULT or HIGHEST only (it rejects HIGH and
    per-operand pairs), so the strongest asked for is kept and HIGH becomes HIGHEST: never less
    precise than the reference."""
    rank = 0
    for p in precisions:
        if p is None:
            continue
        parts = p if isinstance(p, (tuple, list)) else (p,)
        for x in parts:
            name = getattr(x, "name", str(x))
            if name in _PRECISION_RANK:
                rank = max(rank, _PRECISION_RANK[name])
            elif "F32" in name.upper() and "BF16" not in name.upper():
                rank = 2  # an f32 dot algorithm preset
    return "jax.lax.Precision.HIGHEST" if rank else None


# Emitted beside FIT_BLOCK_HELPER where the grid's last tile may be ragged (an axis whose rows or
# columns are computed independently: Pallas masks the out-of-bounds part of the last block).
# The generator plans with the same function it emits (ragged_pick), so the two cannot drift.
def _ragged_block(block, dim, align):
    """Tile size along an axis whose last tile may be partial (the grid is pl.cdiv(dim, tile)):
    a divisor of `dim` at least half of `block` when there is one, else `block` itself."""
    if dim <= block:
        return dim
    top = block - block % align
    for b in range(top, max(top // 2, align) - 1, -align):
        if dim % b == 0:
            return b
    return top


RAGGED_BLOCK_HELPER = "\n\n" + inspect.getsource(_ragged_block)
ragged_pick = _ragged_block  # what the emitted `_ragged_block` returns


def ragged_candidates(dim: int, align: int, sizes=(128, 256, 512, 1024, 2048)) -> list[int]:
    """Tile sizes for an axis whose last tile may be partial: the aligned divisors of `dim`, the
    whole dim, and (when `dim` has few good divisors) the usual sizes below it."""
    out = set(block_candidates(dim, align))
    out |= {s for s in sizes if s % align == 0 and s < dim}
    return sorted(out)


def block_helpers(*code: str) -> str:
    """The block-size helpers (FIT_BLOCK_HELPER, RAGGED_BLOCK_HELPER) the given code calls."""
    text = "".join(code)
    out = ""
    if "_fit_block(" in text:
        out += FIT_BLOCK_HELPER
    if "_ragged_block(" in text:
        out += RAGGED_BLOCK_HELPER
    return out


# Peak dense bf16 FLOP/s and HBM bytes/s per JAX device of each generation
# (knowledge/data/tpu_generations.json; f32 matmuls at the default precision run at the bf16 peak).
GENERATION_ROOFLINE = {"v4": (275e12, 1200e9), "v5e": (197e12, 819e9), "v5p": (459e12, 2765e9),
                       "v6e": (918e12, 1638e9), "v7": (2307e12, 7380e9)}


def target_roofline(target: dict) -> tuple[float, float]:
    """(peak FLOP/s, HBM bytes/s) of the target's generation; v5e's for an unknown name."""
    return GENERATION_ROOFLINE.get(generation_of(target.get("name")), GENERATION_ROOFLINE["v5e"])
