"""When an FSDP role's gradients exist during its update: born during the backward, not before it.

verl zeroes the gradients before every mini-batch with ``optimizer.zero_grad()`` (verl 0.5
``workers/actor/dp_actor.py`` ``update_policy`` 391, 0.9.1 ``workers/engine/base.py`` ``train_batch`` 126), whose
default ``set_to_none=True`` frees them (torch >= 2.0). FSDP then allocates each unit's sharded gradient in the
unit's post-backward hook (torch ``distributed/fsdp/_runtime_utils.py`` ``_post_backward_hook``; FSDP2 likewise in
its post-backward reduce-scatter), so the gradients grow layer by layer while the backward frees the checkpointed
activations and, first of all, the logits. When a mini-batch is one micro-batch on the GPU, the activation peak (the
start of the backward) holds no sharded gradient yet, and the end of the backward holds every gradient but no
activations: the phase holds ``max(activations + logits, grads)`` beside everything else, not their sum. From the
second micro-batch on the first one's gradients are all there (the sum).

Not for Megatron (its gradient buffer is one contiguous allocation zeroed in place, ``zero_grad_buffer``), and not
for gradients kept on the CPU (FSDP2 ``offload_policy``: no gradient component). Left out: the unsharded gradient of
the unit in flight, part of the backward's working set either way.
"""

from __future__ import annotations

from dataclasses import replace

from calculator.memory.context import Context
from calculator.memory.residency import PhaseRow, Transient
from calculator.names import Comp
from calculator.report.models import Component
from calculator.units import format_gib

# The transients the backward has freed by its end: the saved activations and the logits (with the entropy's).
FREED_BY_BACKWARD = frozenset({Transient.TRAINING_ACTIVATIONS, Transient.LOGITS_UPDATE})


def unborn_grad_bytes(ctx: Context, row: PhaseRow, worst: bool, comps: list[Component], freed: int) -> int:
    """Bytes of the computing role's gradients not yet allocated at the phase's activation peak: ``min(grads,
    freed)`` when every mini-batch is one micro-batch on the GPU (module docstring), else 0. ``freed``: the bytes of
    the ``FREED_BY_BACKWARD`` transients of the phase."""
    if row.compute is None or row.phase not in ctx.r.passes:
        return 0
    p = ctx.r.passes[row.phase]
    if p.trainer.is_megatron or p.batch(worst).num_micro_batches > 1:
        return 0
    grads = next((c for c in comps if c.name == Comp.of(row.compute, "grads")), None)
    return 0 if grads is None else min(grads.bytes, freed)


def grads_born_in_backward(comps: list[Component], row: PhaseRow, unborn: int, freed: int) -> list[Component]:
    """``comps`` with the computing role's gradient component lowered by ``unborn`` bytes (``unborn_grad_bytes``)
    and its formula saying why."""
    if not unborn or row.compute is None:
        return comps
    name = Comp.of(row.compute, "grads")
    grads = next(c for c in comps if c.name == name)
    why = (
        f"; zero_grad(set_to_none) before each mini-batch of one micro-batch: the {format_gib(grads.bytes)} of grads "
        f"are born as the backward frees the activations and logits ({format_gib(freed)}), so the phase holds the "
        f"larger of the two"
    )
    # A gradient component of 0 bytes is dropped with the phase's other empty ones: the activations say it instead.
    carrier = name if grads.bytes > unborn else Comp.of(row.compute, "activations")
    out = []
    for c in comps:
        if c.name == name:
            c = replace(c, bytes=c.bytes - unborn)
        if c.name == carrier:
            c = replace(c, formula=c.formula + why)
        out.append(c)
    return out
