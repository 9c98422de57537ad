"""The rowwise template: normalisations and reductions over the last axis (RMSNorm, LayerNorm,
softmax, log-softmax, logsumexp, row sum/mean/max/L2 norm) and the elementwise ops around them.

Recognition is on the jaxpr: every equation the outputs depend on must be a row-local operation
(generate.rows), with at least one reduction, all over the last axis. The kernel re-states
those equations on a block of BLOCK_ROWS full rows: grid over row blocks ("parallel"), float32
math inside, weight/bias vectors as their own (1, n) blocks, per-row inputs/outputs as (rows, 1)
blocks. Leading dims (batch, seq) are flattened in the entry with free reshapes and restored.

Refused (NoTemplate, with the reason): reductions over another axis, ops that are not row-local
(iota, gather, cumsum...), rows too long for one block in VMEM, inputs whose role (per-row or
per-column vector) cannot be told, outputs that do not depend on the rows.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from mkworker.generate import common as G
from mkworker.generate import gpu_form as GPU
from mkworker.generate import rows as R

# Primitives that mean "another template's class": the rowwise template does not claim them.
OTHER_CLASSES = ("dot_general", "conv_general_dilated", "ragged_dot", "pallas_call", "while",
                 "scan", "cond", "fft", "cumsum", "cumprod", "cummax", "sort", "gather", "scatter",
                 "scatter-add", "dynamic_slice", "dynamic_update_slice")
KERNEL_NAMES = ("rows", "n")
# Locals of the generated entry; a reference parameter with one of these names is aliased.
ENTRY_LOCALS = ("lead", "n", "m", "block_rows", "out")
MAX_BLOCK_ROWS = 1024
# f32 intermediates a row kernel keeps live at once (x, centred x, the result), on top of the
# double-buffered blocks: a conservative share for Mosaic's spills.
LIVE_TEMPS = 3


def match(ctx: G.GenContext):
    """The row program's plan when the reference is rowwise, else None."""
    eqns = R.reachable_eqns(ctx.jaxpr)
    names = [e.primitive.name for e in eqns]
    if any(n in OTHER_CLASSES for n in names):
        return None
    reductions = [e for e in eqns if e.primitive.name in R.REDUCTIONS]
    if not reductions:
        return None  # elementwise: another template's class
    first = reductions[0]
    shape = tuple(int(d) for d in first.invars[0].aval.shape)
    axes = tuple(int(a) for a in first.params.get("axes", ()))
    if not shape or axes != (len(shape) - 1,):
        raise G.NoTemplate(
            f"`{first.primitive.name}` reduces axes {axes} of a {G.shape_text(shape)} value; the "
            f"row template covers reductions over the last axis only", [first.primitive.name])
    lead, n = shape[:-1], shape[-1]
    m = int(np.prod(lead)) if lead else 1
    if m < 2:
        return None
    return _Plan(ctx, eqns, lead, n, m)


def emit(ctx: G.GenContext, plan) -> G.Generated:
    """Both forms: they differ in the block choice, launch constants and notes (plan.build)."""
    return plan.build()


class _Plan:
    def __init__(self, ctx, eqns, lead, n, m):
        self.ctx, self.eqns, self.lead, self.n, self.m = ctx, eqns, tuple(lead), int(n), int(m)
        self.statics = {k: v for k, v in ctx.static_args.items()
                        if k not in KERNEL_NAMES and k.isidentifier()}
        self.statics_used: list[str] = []
        self.prog = R.RowProgram(lead, n, self._literal_text)

    def _literal_text(self, value, dtype):
        t = R.shape_literal_text(value, dtype, self.n, self.statics)
        if t in self.statics and t not in self.statics_used:
            self.statics_used.append(t)
        return t

    # -- inputs
    def _input_domains(self):
        """[(var, name, [domains])] for each input the outputs use; more than one domain when
        the shape alone cannot tell (a length-n vector when there are n rows)."""
        used = set()
        for e in self.eqns:
            used.update(v for v in e.invars if not R.is_literal(v))
        used.update(v for v in self.ctx.jaxpr.outvars if not R.is_literal(v))
        out = []
        for var, name in zip(self.ctx.jaxpr.invars, self.ctx.arg_names):
            if var not in used:
                continue
            shape = tuple(int(d) for d in var.aval.shape)
            doms = self.prog.domains_for_shape(shape)
            if not doms:
                raise G.NoTemplate(
                    f"input `{name}` of shape {G.shape_text(shape)} is neither rows of "
                    f"{G.shape_text(self.lead + (self.n,))}, a per-row vector, nor a length-{self.n} "
                    f"vector; the row template does not cover it")
            if doms == ["scalar"]:
                raise G.NoTemplate(f"input `{name}` is a 0-d array; the row template takes scalars "
                                   f"only as Python numbers (static arguments)")
            out.append((var, name, doms))
        if not any(d == ["row"] for _, _, d in out):
            raise G.NoTemplate("no input holds the rows themselves; the row template needs one")
        return out

    def _emit_program(self, candidates):
        """Emits the program for the one assignment of input domains under which every equation
        is row-local. Ambiguous inputs are tried both ways; two readings that both work are
        refused rather than guessed."""
        choices = list(itertools.product(*[doms for _, _, doms in candidates]))
        if len(choices) > 8:
            raise G.NoTemplate("too many inputs whose role (per-row or per-column vector) the "
                               "shapes cannot tell")
        results, last_error = [], None
        for choice in choices:
            prog = R.RowProgram(self.lead, self.n, self._literal_text)
            self.statics_used = []
            inputs = [(v, n, d) for (v, n, _), d in zip(candidates, choice)]
            try:
                for var, name, dom in inputs:
                    prog.bind_input(var, dom, _ident(name))
                for e in self.eqns:
                    prog.emit(e)
            except R.Unsupported as u:
                last_error = u
                continue
            results.append((prog, inputs, list(self.statics_used)))
        if not results:
            raise G.NoTemplate(last_error.message,
                               [last_error.primitive] if last_error.primitive else [])
        if len(results) > 1:
            amb = [n for (_, n, doms) in candidates if len(doms) > 1]
            raise G.NoTemplate(f"cannot tell whether input(s) {', '.join(amb)} are per-row or "
                               f"per-column vectors (there are as many rows as columns)")
        self.prog, inputs, self.statics_used = results[0]
        return inputs

    # -- build
    def build(self) -> G.Generated:
        ctx = self.ctx
        inputs = self._emit_program(self._input_domains())
        load = []
        for var, name, _ in inputs:
            text = _ident(name)
            dt = np.dtype(var.aval.dtype)
            cast = ".astype(jnp.float32)" if jnp.issubdtype(dt, np.floating) and dt != np.float32 else ""
            load.append(f"{text} = {text}_ref[...]{cast}")
        outs = self._outputs()
        gpu = ctx.form == "gpu"
        block_rows, tunables, notes, vmem = (self._blocks_gpu if gpu else self._blocks)(inputs, outs)
        kind = _describe(self.prog)
        dt_text = ", ".join(sorted({G.dtype_name(v.aval.dtype) for v, _, _ in inputs}))
        description = (f"{kind} over {self.m} rows of {self.n} ({dt_text}): a row-tiled kernel, "
                       f"{block_rows} full rows per grid step, float32 inside"
                       + (" (GPU form)" if gpu else ""))
        code = self._code(inputs, load, outs)
        constants = [("BLOCK_ROWS", block_rows,
                      f"rows per grid step; valid here: {tunables}")]
        all_tunables = {"BLOCK_ROWS": tunables}
        if gpu:
            constants.append(("NUM_WARPS", self.warps, "warps per program (32 threads each)"))
            all_tunables["NUM_WARPS"] = GPU.launch_tunables(self.warps)["NUM_WARPS"]
        source, imports, body = G.write_module(description=description, ctx=ctx,
                                               kernel_class="rowwise", constants=constants,
                                               code=code, imports=GPU.IMPORTS if gpu else None)
        if gpu:
            notes.insert(0, f"{kind}: {', '.join(self.prog.reductions)} over the last axis "
                            f"(n={self.n}); {block_rows * self.n} values per program, "
                            f"{self.warps} warps")
            notes.insert(0, GPU.notes_for_form())
        else:
            notes.insert(0, f"{kind}: {', '.join(self.prog.reductions)} over the last axis "
                            f"(n={self.n}); {mib_step(vmem)} per step at BLOCK_ROWS={block_rows}")
        if self.prog.used_n:
            notes.append(f"the literal {self.n} (the row length) is written as `n`, so the module "
                         f"follows a smaller instance")
        return G.Generated(kernel_class="rowwise", description=description, source=source,
                           entry=ctx.entry, imports=imports, body=body,
                           tunables=all_tunables, notes=notes)

    def _outputs(self):
        outs = []
        for i, v in enumerate(self.ctx.jaxpr.outvars):
            if R.is_literal(v):
                raise G.NoTemplate("the reference returns a constant")
            val = self.prog.operand(v)
            shape = tuple(int(d) for d in v.aval.shape)
            if val.domain == "row" and shape == self.lead + (self.n,):
                kind = "full"
            elif shape in (self.lead, self.lead + (1,)) and val.domain in ("row", "red", "scalar"):
                kind = "per_row"
            else:
                raise G.NoTemplate(f"output {i} (shape {G.shape_text(shape)}) is not per row; the row "
                                   f"template writes full rows or one value per row")
            outs.append((v, kind, shape))
        return outs

    def _blocks(self, inputs, outs):
        arrays = [(d, v.aval.dtype) for v, _, d in inputs] + \
                 [("row" if k == "full" else "red", v.aval.dtype) for v, k, _ in outs]
        align = max(G.sublane_multiple(dt) for dom, dt in arrays if dom in ("row", "red"))
        self.align = align

        def step(b):
            ins = [(self._block_shape(d, b, v), v.aval.dtype) for v, _, d in inputs]
            os = [((b, self.n if k == "full" else 1), v.aval.dtype) for v, k, _ in outs]
            temps = [((b, self.n), np.float32)] * LIVE_TEMPS
            return G.step_vmem(ins, os, temps)

        budget = self.ctx.vmem_budget
        cands = [b for b in G.ragged_candidates(self.m, align, sizes=(8, 16, 32, 64, 128, 256, 512))
                 if b <= MAX_BLOCK_ROWS and step(b) <= budget]
        if not cands:
            smallest = min(G.block_candidates(self.m, align))
            raise G.NoTemplate(
                f"a block of {smallest} rows of {self.n} needs {G.mib(step(smallest))} of VMEM per "
                f"step, over the {G.mib(budget)} budget of {self.ctx.target.get('name', 'the target')}: "
                f"the row does not fit one block (a kernel tiling the row in two passes is not "
                f"covered)")
        # Default: the largest block that uses at most half the budget (room for the compiler),
        # capped at 512 rows; the autotuner may try the rest.
        comfy = [b for b in cands if step(b) <= budget // 2 and b <= 512] or cands[:1]
        chosen = max(comfy)
        cands = G.around(cands, chosen)
        notes = [(f"BLOCK_ROWS must be a multiple of {align} (the sublane tile of the narrowest "
                 f"dtype), or {self.m}; a last block past the {self.m} rows is masked")]
        self.vmem = step(chosen)
        self.limit_vmem = max(step(b) for b in cands)  # vmem_limit_bytes covers the tunables
        notes.append(f"{chosen}-row blocks: {G.mib(self.vmem)} of VMEM per step (budget "
                     f"{G.mib(budget)})")
        return chosen, cands, notes, self.vmem

    def _blocks_gpu(self, inputs, outs):
        """GPU form: each program holds BLOCK_ROWS whole rows in registers, so the row must be a
        power of two (Triton's rule) and a block at most GPU.MAX_TILE_ELEMENTS values."""
        if {"erf", "erfc"} & set(self.prog.primitives):
            raise G.NoTemplate("GPU form: the row program uses erf, which Pallas' Triton lowering "
                               "does not have", ["erf"])
        if not GPU.is_pow2(self.n):
            raise G.NoTemplate(f"GPU form: a row of {self.n} is not a power of two; Triton "
                               f"computes on power-of-two blocks (a masked row kernel is not "
                               f"written yet)")
        if self.n > GPU.MAX_TILE_ELEMENTS:
            raise G.NoTemplate(f"GPU form: a row of {self.n} is over the {GPU.MAX_TILE_ELEMENTS}"
                               f"-value register budget of one program (two passes are not "
                               f"covered)")
        self.align = 1
        cap = max(1, GPU.MAX_TILE_ELEMENTS // 8 // self.n)
        cands = GPU.pow2_divisors(self.m, max(cap, 1))
        chosen = cands[-1]
        self.warps = GPU.warps_for(chosen * self.n)
        self.vmem = 0
        notes = [f"BLOCK_ROWS is a power of two dividing {self.m}"]
        return chosen, G.around(GPU.pow2_divisors(self.m, 64), chosen), notes, 0

    def _block_shape(self, dom, b, var):
        if dom == "row":
            return (b, self.n) if var.aval.shape[-1] == self.n else (b, 1)
        if dom == "red":
            return (b, 1)
        return (1, self.n) if var.aval.shape[-1] == self.n else (1, 1)

    def _code(self, inputs, load, outs) -> str:
        ctx = self.ctx
        kname = "_row_kernel"
        refs = [f"{_ident(n)}_ref" for _, n, _ in inputs]
        orefs = ["o_ref"] if len(outs) == 1 else [f"o{i}_ref" for i in range(len(outs))]
        sig = ", ".join(refs + orefs)
        if self.statics_used:
            sig += ", *, " + ", ".join(self.statics_used)
        full_in = _ident(next(n for v, n, d in inputs
                              if d == "row" and v.aval.shape[-1] == self.n))
        stores = []
        for (v, kind, _), oref in zip(outs, orefs):
            rep = ("rows", "n") if kind == "full" else ("rows", 1)
            val = self.prog.store_text(v, rep)
            val = val if val.isidentifier() else f"({val})"
            stores.append(f"{oref}[...] = {val}.astype({oref}.dtype)")
        head = []
        if self.prog.used_rows and self.prog.used_n:
            head = [f"rows, n = {full_in}_ref.shape"]
        elif self.prog.used_n:
            head = [f"n = {full_in}_ref.shape[1]"]
        elif self.prog.used_rows:
            head = [f"rows = {full_in}_ref.shape[0]"]
        body = head + load + self.prog.lines + stores
        kernel = f"def {kname}({sig}):\n" + G.indent("\n".join(body))

        x = full_in
        e = [f"{_ident(p)} = {p}" for p in ctx.params if _ident(p) != p]
        e += [f"lead, n = {x}.shape[:-1], {x}.shape[-1]",
             f"m = {x}.size // n",
             ("block_rows = _fit_pow2(BLOCK_ROWS, m)" if ctx.form == "gpu" else
              f"block_rows = _ragged_block(BLOCK_ROWS, m, {self.align})")]  # rows independent
        specs, args = [], []
        for var, name, dom in inputs:
            nm = _ident(name)
            if dom == "row" and var.aval.shape[-1] == self.n:
                specs.append("pl.BlockSpec((block_rows, n), lambda i: (i, 0))")
                args.append(f"{nm}.reshape(m, n)")
            elif dom in ("row", "red"):
                specs.append("pl.BlockSpec((block_rows, 1), lambda i: (i, 0))")
                args.append(f"{nm}.reshape(m, 1)")
            elif var.aval.shape[-1] == self.n:
                specs.append("pl.BlockSpec((1, n), lambda i: (0, 0))")
                args.append(f"{nm}.reshape(1, n)")
            else:
                specs.append("pl.BlockSpec((1, 1), lambda i: (0, 0))")
                args.append(f"{nm}.reshape(1, 1)")
        oshapes, ospecs, rets = [], [], []
        for i, (v, kind, shape) in enumerate(outs):
            dt = G.dtype_code(v.aval.dtype)
            width = "n" if kind == "full" else "1"
            oshapes.append(f"jax.ShapeDtypeStruct((m, {width}), {dt})")
            ospecs.append(f"pl.BlockSpec((block_rows, {width}), lambda i: (i, 0))")
            res = "out" if len(outs) == 1 else f"out[{i}]"
            if kind == "full":
                rets.append(f"{res}.reshape(*lead, n)")
            elif len(shape) == len(self.lead):
                rets.append(f"{res}.reshape(lead)")
            else:
                rets.append(f"{res}.reshape(*lead, 1)")
        kern = G.static_partial(kname, ctx, self.statics_used)
        one = len(outs) == 1
        e += ["out = pl.pallas_call(",
              f"    {kern},",
              f"    out_shape={oshapes[0] if one else '[' + ', '.join(oshapes) + ']'},",
              "    grid=(pl.cdiv(m, block_rows),),",
              "    in_specs=[" + ",\n              ".join(specs) + "],",
              f"    out_specs={ospecs[0] if one else '[' + ', '.join(ospecs) + ']'},",
              f"    compiler_params={self._params_code()},",
              f")({', '.join(args)})"]
        e.append("return " + _return_text(ctx, rets))
        entry = f"def {ctx.entry}({ctx.signature}):\n" + G.indent("\n".join(e))
        helper = GPU.FIT_POW2_HELPER if ctx.form == "gpu" else G.block_helpers(entry)
        return helper + "\n\n" + kernel + "\n\n\n" + entry + "\n"

    def _params_code(self) -> str:
        if self.ctx.form == "gpu":
            return "plgpu.CompilerParams(num_warps=NUM_WARPS)"
        return G.compiler_params_code(("parallel",), self.ctx, self.limit_vmem)


def _return_text(ctx, rets) -> str:
    if ctx.single_output:
        return rets[0]
    tree = ctx.out_tree
    if tree is None or tree == jax.tree_util.tree_structure(tuple(range(len(rets)))):
        return "(" + ", ".join(rets) + ("," if len(rets) == 1 else "") + ")"
    if tree == jax.tree_util.tree_structure(list(range(len(rets)))):
        return "[" + ", ".join(rets) + "]"
    raise G.NoTemplate("the reference returns a structure other than an array, tuple or list")


def _ident(name: str) -> str:
    return f"{name}_arr" if name in KERNEL_NAMES or name in ENTRY_LOCALS else name


def mib_step(n: int) -> str:
    return G.mib(n)


def _describe(prog: R.RowProgram) -> str:
    """A name for what the row program computes, from its reductions and ops (text only: the
    kernel re-states the equations whatever the name)."""
    red = prog.reductions
    ops = set(prog.primitives)
    if "reduce_max" in red and "exp" in ops and "reduce_sum" in red:
        if "log" in ops:
            return "log-softmax/logsumexp" if "div" not in ops else "softmax with log"
        return "softmax"
    if red.count("reduce_sum") >= 2 and "sub" in ops and ({"rsqrt", "sqrt"} & ops):
        return "LayerNorm"
    if red == ["reduce_sum"] and ({"rsqrt"} & ops):
        return "RMSNorm"
    if red == ["reduce_sum"] and "sqrt" in ops and "mul" in ops:
        return "row L2 norm"
    if red == ["reduce_sum"] and "div" in ops:
        return "row mean/normalisation"
    if red == ["reduce_sum"]:
        return "row sum"
    if red == ["reduce_max"]:
        return "row max"
    return "row reduction (" + ", ".join(dict.fromkeys(red)) + ")"
