"""The weight sync's transients on one trainer GPU (DESIGN.md 4.6), per training engine and LoRA mode.

verl 0.9.1 order (``workers/engine_workers.py`` ``update_weights``): resume the rollout weights, stream the
actor's parameters through the checkpoint-engine bucket, offload the actor if ``param_offload``, resume the KV
cache. What the trainer holds while it streams depends on how ``get_per_tensor_param`` builds the tensors:

- FSDP2: ``state_dict()`` returns the existing DTensors; each is gathered whole with ``full_tensor()`` (no cast),
  one at a time: the largest parameter in the master dtype;
- FSDP1 (world size > 1): ``state_dict()`` under ``SHARDED_STATE_DICT`` (``transformer_impl.py`` 487-491,
  1016) unshards each unit and builds every entry with torch ``_create_chunk_dtensor``, which clones the local
  shard: a second copy of the whole local shard (``4 B x P / N`` at fp32) held while the generator streams;
- LoRA on FSDP1: ``collect_lora_params`` runs ``FSDP.summon_full_params(module, writeback=False)`` on every sync
  (``utils/fsdp_utils.py`` 715-775): FSDP1 summons in full precision, the WHOLE model in the master dtype on
  every GPU; ``rollout.layered_summon`` gathers one FSDP unit at a time instead (``fsdp_utils.py`` 645); on one
  GPU (NO_SHARD) the local shard is the whole model and nothing is gathered;
- Megatron: ``load_megatron_model_to_gpu(load_grad=False)`` and the bridge exports per-expert tensors in bf16
  (``megatron/transformer_impl.py`` 1040): the largest tensor is the embedding / LM head, not a fused expert
  block.
Left out: the CPU copy verl makes of LoRA adapters, the bucket's double buffering in non-colocated modes.
"""

from __future__ import annotations

from calculator.memory.context import Context
from calculator.names import Comp, Role, Strategy
from calculator.report.models import Component
from calculator.units import MIB_BYTES


def master_bytes(ctx: Context) -> int:
    """Bytes per element of the tensors the actor sends: its master dtype (FSDP) or bf16 (Megatron)."""
    if ctx.r.actor.is_megatron:
        return 2
    return 4 if ctx.s.actor.fsdp_config.model_dtype == "fp32" else 2


def lora_summon(ctx: Context) -> str | None:
    """'full' or 'layered' when LoRA on FSDP1 summons full parameters for the sync, else None."""
    if not ctx.s.model.lora_rank or ctx.r.actor.strategy is not Strategy.FSDP:
        return None
    return "layered" if ctx.s.rollout.layered_summon else "full"


def sync_bucket(ctx: Context) -> list[Component]:
    """verl >= 0.8 streams through a GPU bucket shared over CUDA IPC; older releases ran vLLM in the trainer
    process and loaded each full tensor directly (``calculator.resolve.versions``)."""
    mib = ctx.s.rollout.update_weights_bucket_megabytes
    bucket = mib * MIB_BYTES if ctx.r.behaviour.weight_sync_bucket else 0
    formula = f"checkpoint_engine bucket {mib} MiB (uint8 GPU buffer, CUDA IPC)"
    return [Component(name=Comp.SYNC_BUCKET, role=Role.SYNC, bytes=bucket, formula=formula)]


def sync_full_tensor(ctx: Context) -> list[Component]:
    """Parameters gathered whole one at a time (``full_tensor()``, no cast). With LoRA (``lora.merge=false``)
    the FIRST sync still sends the base weights (vLLM starts from ``load_format=dummy``; ``base_sync_done``),
    later syncs only the adapters: the peak over a run is the base's. Under a LoRA summon the tensors are views
    of the summoned parameters (counted in ``sync_lora_gather``)."""
    if lora_summon(ctx):
        return []
    s = ctx.s
    megatron = ctx.r.actor.is_megatron
    lt = ctx.actor.arch.largest_tensor_params(per_expert=megatron)
    mb = master_bytes(ctx)
    how = "(Megatron bridge export, per-expert tensors)" if megatron else "(full_tensor)"
    f = f"largest parameter {lt:,} gathered whole {how} x {mb} B"
    if s.model.lora_rank:
        f += " (LoRA: base weights on the first sync, adapters only afterwards)"
    return [Component(name=Comp.SYNC_FULL_TENSOR, role=Role.SYNC, bytes=lt * mb, formula=f)]


def sync_state_dict(ctx: Context) -> list[Component]:
    """FSDP1's shard clones (full fine-tuning) or the LoRA summon (whole model, or one unit with
    ``layered_summon``); nothing for FSDP2 and Megatron."""
    r = ctx.r
    mb = master_bytes(ctx)
    summon = lora_summon(ctx)
    n = ctx.actor_shard_size
    if summon and n <= 1:
        return []  # one shard holds the whole model (NO_SHARD): the summon gathers nothing
    if summon == "full":
        p = ctx.actor.num_params
        f = (
            f"LoRA on FSDP1 without layered_summon: summon_full_params gathers the whole model, {p:,} params x "
            f"{mb} B ({ctx.s.actor.fsdp_config.model_dtype}) on every GPU"
        )
        return [Component(name=Comp.SYNC_LORA_GATHER, role=Role.SYNC, bytes=p * mb, formula=f)]
    if summon == "layered":
        unit = max(ctx.actor.largest_layer_params, ctx.actor.root_params)
        f = f"LoRA layered_summon: one FSDP unit gathered at a time, largest {unit:,} params x {mb} B"
        return [Component(name=Comp.SYNC_LORA_GATHER, role=Role.SYNC, bytes=unit * mb, formula=f)]
    if r.actor.strategy is not Strategy.FSDP or n <= 1:
        return []
    b = ctx.actor_state.params.bytes
    f = f"FSDP1 SHARDED_STATE_DICT clones each local shard (_create_chunk_dtensor): {b:,} B, the local master shard"
    return [Component(name=Comp.SYNC_SHARD_CLONE, role=Role.SYNC, bytes=b, formula=f)]
