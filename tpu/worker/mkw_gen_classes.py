"""The kernel classes of the generator, in the order they are tried, and the one place the
kernel form picks an emitter.

A class is a shared matcher (the reference recognised on its jaxpr, the same for both forms)
and an emitter per form: `emit[ctx.form](ctx, matched)` writes the TPU (Mosaic) or GPU (Triton)
module from what the matcher found. A class written in one module (its form handled inside,
or the GPU form refused there) has `generate` instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import mkw_gen_attention
import mkw_gen_attention_gpu
import mkw_gen_attention_tpu
import mkw_gen_batch_norm
import mkw_gen_conv
import mkw_gen_elementwise
import mkw_gen_gated_mlp
import mkw_gen_group_norm
import mkw_gen_matmul
import mkw_gen_matmul_gpu
import mkw_gen_matmul_tpu
import mkw_gen_rowwise
from mkw_gen_common import GenContext, NoTemplate


class KernelClass(NamedTuple):
    name: str
    match: Callable | None = None  # ctx -> what the emitters take, or None (not this class)
    emit: dict | None = None  # kernel form -> emitter(ctx, matched) -> Generated
    generate: Callable | None = None  # ctx -> Generated or None: match and emit in one module
    covered: tuple = ()  # primitives only this class handles (for the no-template report)


_MATMUL_EMITTERS = {"tpu": mkw_gen_matmul_tpu.emit, "gpu": mkw_gen_matmul_gpu.emit}

CLASSES = (
    KernelClass("attention", match=mkw_gen_attention.match,
                emit={"tpu": mkw_gen_attention_tpu.emit, "gpu": mkw_gen_attention_gpu.emit}),
    KernelClass("gated_mlp", generate=mkw_gen_gated_mlp.generate,
                covered=mkw_gen_gated_mlp.COVERED_PRIMITIVES),
    KernelClass("matmul_group_norm", generate=mkw_gen_group_norm.generate,
                covered=mkw_gen_group_norm.COVERED_PRIMITIVES),
    KernelClass("matmul_batch_norm", generate=mkw_gen_batch_norm.generate,
                covered=mkw_gen_batch_norm.COVERED_PRIMITIVES),
    KernelClass("conv2d", generate=mkw_gen_conv.generate, covered=mkw_gen_conv.COVERED_PRIMITIVES),
    KernelClass("matmul_row_reduction", match=mkw_gen_matmul.match_row_reduction,
                emit=_MATMUL_EMITTERS),
    KernelClass("matmul_epilogue", match=mkw_gen_matmul.match_epilogue, emit=_MATMUL_EMITTERS),
    KernelClass("rowwise", generate=mkw_gen_rowwise.generate),
    KernelClass("elementwise", generate=mkw_gen_elementwise.generate),
)


def _write(kc: KernelClass, ctx: GenContext):
    if kc.generate is not None:
        return kc.generate(ctx)
    matched = kc.match(ctx)
    if matched is None:
        return None
    return kc.emit[ctx.form](ctx, matched)


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
