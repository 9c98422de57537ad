"""The kernel classes of the generator, in the order they are tried, and the one place the
kernel form picks an emitter.

A class is a matcher (the reference recognised on its jaxpr, the same for both forms) and an
emitter per kernel form: `emit[ctx.form](ctx, matched)` writes the TPU (Mosaic) or GPU (Triton)
module from what the matcher found. Where the forms differ throughout (matmul, attention) each
has its own module (`*_tpu`, `*_gpu`); where they differ in a few lines (rowwise, elementwise)
one emitter writes both; a class with no GPU form has no "gpu" emitter and is skipped there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from mkworker.generate.common import GenContext, NoTemplate
from mkworker.generate.templates import (
    attention,
    attention_gpu,
    attention_tpu,
    batch_norm,
    conv,
    elementwise,
    gated_mlp,
    group_norm,
    grouped_matmul,
    matmul,
    matmul_gpu,
    matmul_tpu,
    paged_attention,
    pool,
    retention,
    rowwise,
    scan,
)


class KernelClass(NamedTuple):
    name: str
    match: Callable  # ctx -> what the emitters take, or None (not this class); NoTemplate: refused
    emit: dict  # kernel form -> emitter(ctx, matched) -> Generated, or None (not this class)
    covered: tuple = ()  # primitives only this class handles (for the no-template report)


_MATMUL = {"tpu": matmul_tpu.emit, "gpu": matmul_gpu.emit}

CLASSES = (
    KernelClass("grouped_matmul", grouped_matmul.match, {"tpu": grouped_matmul.emit},
                grouped_matmul.COVERED_PRIMITIVES),
    KernelClass("paged_attention", paged_attention.match, {"tpu": paged_attention.emit},
                paged_attention.COVERED_PRIMITIVES),
    KernelClass("attention", attention.match, {"tpu": attention_tpu.emit, "gpu": attention_gpu.emit}),
    KernelClass("retention", retention.match, {"tpu": retention.emit}),
    KernelClass("gated_mlp", gated_mlp.match, {"tpu": gated_mlp.emit}, gated_mlp.COVERED_PRIMITIVES),
    KernelClass("matmul_group_norm", group_norm.match, {"tpu": group_norm.emit},
                group_norm.COVERED_PRIMITIVES),
    KernelClass("matmul_batch_norm", batch_norm.match, {"tpu": batch_norm.emit},
                batch_norm.COVERED_PRIMITIVES),
    KernelClass("conv", conv.match, {"tpu": conv.emit}, conv.COVERED_PRIMITIVES),
    KernelClass("matmul_row_reduction", matmul.match_row_reduction, _MATMUL),
    KernelClass("matmul_epilogue", matmul.match_epilogue, _MATMUL),
    KernelClass("scan", scan.match, {"tpu": scan.emit}, scan.COVERED_PRIMITIVES),
    KernelClass("pool", pool.match, {"tpu": pool.emit}, pool.COVERED_PRIMITIVES),
    KernelClass("rowwise", rowwise.match, {"tpu": rowwise.emit, "gpu": rowwise.emit}),
    KernelClass("elementwise", elementwise.match, {"tpu": elementwise.emit, "gpu": elementwise.emit}),
)


def _write(kc: KernelClass, ctx: GenContext):
    emit = kc.emit.get(ctx.form)
    if emit is None:
        return None  # no module of this class in the requested form
    matched = kc.match(ctx)
    if matched is None:
        return None
    return emit(ctx, matched)


def run_templates(ctx: GenContext):
    """The first class that writes a kernel, and the classes tried. When none does, the
    refusals (NoTemplate: class recognised, a part not covered) as (class, NoTemplate)."""
    tried = []
    refusals = []
    for kc in CLASSES:
        tried.append(kc.name)
        try:
            gen = _write(kc, ctx)
        except NoTemplate as e:
            # The class is recognised but a part is not covered: keep the reason, and let a
            # later class that covers the whole reference (if one does) write it.
            refusals.append((kc.name, e))
            continue
        if gen is not None:
            return gen, tried, refusals
    return None, tried, refusals


def covered_primitives() -> set:
    return {p for kc in CLASSES for p in kc.covered}
