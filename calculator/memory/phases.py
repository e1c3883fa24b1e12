"""Phase-by-phase peak memory of one GPU in a colocated verl step (DESIGN.md 4.7).

Worked example (Qwen2.5-7B, GRPO without KL, 8 x H100 79.22 GiB, FSDP, no offload, vLLM TP 2,
util 0.5, micro-batch 4 x 2048 tokens, ckpt on): during ``update_actor`` one GPU holds the
fp32 master shard 7.616e9 x 4 / 8 = 3.55 GiB, sharded fp32 grads 3.55 GiB, AdamW 7.09 GiB,
the bf16 all-gathered root unit (embedding + lm_head, 1.09e9 params) and two layers, 8192 tokens of
checkpointed layer inputs (28 x 2h) plus one recomputed layer, and bf16 logits 8192 x 152064 x 2 B =
2.32 GiB; the rollout engine is asleep (its CUDA graphs stay). During ``rollout`` the same GPU holds
the resident actor state (12 B/param/8 = 10.6 GiB) beside vLLM's whole budget (39.6 GiB).

Phases in step order: rollout, reward (model RM only), old_log_prob, ref_log_prob, critic_values,
update_critic, update_actor, weight_sync. Each phase lists what is resident on one GPU: every role's
state per its offload flags, that phase's transients, CUDA-graph pools and runtime overhead; the
components add up to the phase total, and the peak is the maximum over phases.
Left out: CPU memory, checkpoint saving, validation/generation-only steps, async trainer modes.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from calculator.memory import backward, sync
from calculator.memory.context import Context, build_context, runtime_startup_bytes
from calculator.memory.engine import EngineBudget
from calculator.memory.residency import NOT_FRAGMENTING, RESIDENCY, Engine, PhaseRow, Transient, Use
from calculator.memory.training import TrainingState
from calculator.memory.transients import forward_activations, gathered, logits_components, training_activations
from calculator.names import Comp, Phase, Process, Role, Strategy
from calculator.report.models import Component, PhaseMemory
from calculator.resolve.roles import TrainerPlan
from calculator.units import GIB_BYTES, format_gib

__all__ = [
    "Context",
    "active_phases",
    "all_phases",
    "build_context",
    "engine_starts",
    "expected_and_worst",
    "phase_memory",
    "startup_free_bytes",
]


# ---- resident training state ------------------------------------------------------------------


def _actor_use(ctx: Context, row: PhaseRow) -> Use:
    """The actor's activity in a phase; under LoRA the actor (adapters off) also serves the ref pass."""
    if row.compute is Role.REF and ctx.r.ref_via_actor:
        return Use.FORWARD
    return row.actor


def role_state(st: TrainingState, plan: TrainerPlan, use: Use, lora: bool) -> list[Component]:
    """Persistent state of a trained role (actor/critic) on the GPU while it does ``use``.

    - FSDP2 ``offload_policy`` (CPUOffloadPolicy): params, grads and optimizer live on CPU throughout.
    - ``param_offload``: params leave the GPU while the role is idle and come back for its passes. FSDP2
      without LoRA does not load them for the weight sync (verl 0.9 ``get_per_tensor_param``
      ``_skip_staging``): it moves one shard at a time to the GPU for ``full_tensor()``.
    - grads: during the update; Megatron keeps its grad buffer throughout unless ``param_offload`` frees it.
    - optimizer: during the update; between updates unless ``optimizer_offload`` (AdamW creates its state at
      the first step, so "resident" means from the second step on).
    """
    role = plan.role
    if plan.cpu_offload_policy:
        return []
    streams_for_sync = use is Use.SYNC and plan.strategy is Strategy.FSDP2 and not lora
    active = use is not Use.IDLE and not streams_for_sync
    update = use is Use.UPDATE
    out: list[Component] = []
    on_gpu = active or not plan.param_offload
    if on_gpu and st.params.bytes:
        why = "" if not plan.param_offload else " (param_offload: loaded back for this phase)"
        out.append(
            Component(name=Comp.of(role, "params"), role=role, bytes=st.params.bytes, formula=st.params.formula + why)
        )
    # Megatron frees its grad buffer with the params (offload_megatron_model_to_cpu) and loads it back only
    # for training: eval passes and the sync call load_megatron_model_to_gpu(load_grad=False) (verl 0.9.1
    # engine/base.py _context_switch, megatron/transformer_impl.py 1040).
    if (update or (plan.is_megatron and not plan.param_offload)) and st.grads.bytes:
        out.append(Component(name=Comp.of(role, "grads"), role=role, bytes=st.grads.bytes, formula=st.grads.formula))
    if st.optimizer.bytes and (update or not plan.optimizer_offload):
        why = (
            " (optimizer_offload: loaded for the update)"
            if plan.optimizer_offload
            else " (resident between steps after the first)"
        )
        out.append(
            Component(
                name=Comp.of(role, "optimizer"), role=role, bytes=st.optimizer.bytes, formula=st.optimizer.formula + why
            )
        )
    return out


def _remembered(ctx: Context, key: tuple[Any, ...], make: Callable[[], list[Component]]) -> list[Component]:
    """``make()`` once per context and key: phases that share a use or an engine state share the components
    (frozen records), so the walk builds them once (issue #18)."""
    hit = ctx.memo.get(key)
    if hit is None:
        hit = ctx.memo[key] = tuple(make())
    return list(hit)


def _resident_state(ctx: Context, row: PhaseRow) -> list[Component]:
    key = ("resident", _actor_use(ctx, row), row.critic)
    return _remembered(ctx, key, lambda: _resident_state_of(ctx, row))


def _resident_state_of(ctx: Context, row: PhaseRow) -> list[Component]:
    r = ctx.r
    lora = r.scenario.model.lora_rank > 0
    comps = role_state(ctx.actor_state, r.actor, _actor_use(ctx, row), lora)
    if ctx.critic_state is not None and r.critic is not None:
        comps += role_state(ctx.critic_state, r.critic, row.critic, r.scenario.critic.lora_rank > 0)
    if ctx.ref_state is not None and r.ref_on_gpu and ctx.ref_state.params.bytes:
        comps.append(
            Component(
                name=Comp.REF_PARAMS,
                role=Role.REF,
                bytes=ctx.ref_state.params.bytes,
                formula="ref policy resident on GPU (bf16 / Megatron)",
            )
        )
    return comps


# ---- inference engines ------------------------------------------------------------------------


# The engine's pieces: (component name for the policy rollout, for the reward model, the budget's bytes field,
# its formula key, allocated by torch). The awake engine holds all of them; asleep, only the last two.
_ENGINE_PARTS = (
    (Comp.ROLLOUT_WEIGHTS, Comp.REWARD_PARAMS, "weights_bytes", "rollout_weights", True),
    (Comp.KV_CACHE, Comp.REWARD_KV_CACHE, "kv_cache_bytes", "kv_cache", True),
    (Comp.ROLLOUT_ACTIVATIONS, Comp.REWARD_ACTIVATIONS, "activation_bytes", "rollout_activations", True),
    (Comp.ROLLOUT_NON_TORCH, None, "non_torch_bytes", "rollout_non_torch", False),
    (Comp.CUDA_GRAPHS, None, "cuda_graph_bytes", "cuda_graphs", False),
)
_KEPT_ASLEEP = {Comp.ROLLOUT_NON_TORCH: "", Comp.CUDA_GRAPHS: " (not freed by sleep)"}
_WOKEN_FOR_SYNC = " (woken for the sync, KV not yet)"


def _engine_part(eb: EngineBudget, name: Comp, field: str, key: str, torch: bool, role: Role, note: str) -> Component:
    return Component(
        name=name,
        role=role,
        bytes=max(0, getattr(eb, field)),
        formula=eb.formulas[key] + note,
        torch_allocated=torch,
        process=Process.REWARD if role is Role.REWARD else Process.ROLLOUT,
    )


def _engine(ctx: Context, row: PhaseRow) -> list[Component]:
    """The policy rollout engine in this phase: awake (everything), woken for the weight sync (weights only),
    or asleep (non-torch memory and CUDA-graph pools, which sleep does not free)."""
    state = Engine.AWAKE if not ctx.s.rollout.free_cache_engine else row.engine
    return _remembered(ctx, ("engine", state), lambda: _engine_in(ctx, state))


def _engine_in(ctx: Context, state: Engine) -> list[Component]:
    eb = ctx.rollout
    out = []
    for name, _, field, key, torch in _ENGINE_PARTS:
        if state is Engine.AWAKE or name in _KEPT_ASLEEP:
            note = _KEPT_ASLEEP.get(name, "")
        elif state is Engine.WEIGHTS and name is Comp.ROLLOUT_WEIGHTS:
            note = _WOKEN_FOR_SYNC
        else:
            continue
        out.append(_engine_part(eb, name, field, key, torch, Role.ROLLOUT, note))
    return out


def _reward_engine(ctx: Context) -> list[Component]:
    """The reward model's engine while it scores (weights, KV, profiled activations)."""
    eb = ctx.reward_engine
    if eb is None:
        return []
    return [
        _engine_part(eb, reward, field, key, torch, Role.REWARD, "")
        for _, reward, field, key, torch in _ENGINE_PARTS
        if reward is not None
    ]


# ---- transients of a phase --------------------------------------------------------------------


def _compute_state(ctx: Context, role: Role) -> tuple[Role, TrainingState]:
    if role is Role.CRITIC:
        assert ctx.critic_state is not None
        return role, ctx.critic_state
    if role is Role.REF and ctx.ref_state is not None:
        return role, ctx.ref_state
    return role, ctx.actor_state


def _transient(ctx: Context, row: PhaseRow, kind: Transient, worst: bool) -> list[Component]:
    r = ctx.r
    if kind is Transient.REWARD_ENGINE:
        return _reward_engine(ctx)
    if kind is Transient.SYNC_BUCKET:
        return sync.sync_bucket(ctx)
    if kind is Transient.SYNC_FULL_TENSOR:
        return sync.sync_full_tensor(ctx)
    if kind is Transient.SYNC_STATE_DICT:
        return sync.sync_state_dict(ctx)
    assert row.compute is not None
    name, st = _compute_state(ctx, row.compute)
    batch = r.passes[row.phase].batch(worst)
    tokens = batch.tokens_per_gpu
    if kind is Transient.GATHERED:
        return gathered(name, st)
    if kind is Transient.DORA:
        extra = st.extra_transient
        return [Component(name=Comp.ACTOR_DORA_WEIGHT, role=Role.ACTOR, bytes=extra.bytes, formula=extra.formula)]
    if kind is Transient.HEAD_GRAD:
        held = st.held_grad
        return [Component(name=Comp.of(name, "head_grad"), role=name, bytes=held.bytes, formula=held.formula)]
    model = ctx.critic if row.compute is Role.CRITIC else ctx.actor
    assert model is not None
    if kind is Transient.FORWARD_ACTIVATIONS:
        return [forward_activations(name, model.arch, tokens)]
    rank = st.pp_rank  # Megatron with PP > 1: the pipeline rank described (calculator.memory.megatron_ranks)
    if kind is Transient.TRAINING_ACTIVATIONS:
        plan, offload = r.passes[row.phase].trainer, ctx.s.model.enable_activation_offload
        return [training_activations(model, plan, batch, offload=offload, pp_rank=rank.rank if rank else None)]
    if rank is not None and rank.rank != rank.num_ranks - 1:
        return []  # the output layer and the loss are on the last pipeline stage only
    entropy = {Transient.LOGITS: False, Transient.LOGITS_ENTROPY: True, Transient.LOGITS_UPDATE: r.entropy_in_update}
    return logits_components(ctx, name, tokens, entropy=entropy[kind], training=kind is Transient.LOGITS_UPDATE)


def _optimizer_step(ctx: Context, row: PhaseRow, backward_transient: int) -> list[Component]:
    """``optimizer.step()`` runs after the last micro-batch's backward, when activations, logits and gathered
    units are freed: its temporary raises the phase's peak only by what exceeds those transients."""
    assert row.compute is not None
    role, st = _compute_state(ctx, row.compute)
    step = st.step_transient
    extra = max(0, step.bytes - backward_transient)
    f = f"{step.formula}; counts only what exceeds the backward's transients ({format_gib(backward_transient)})"
    return [Component(name=Comp.of(role, "optimizer_step"), role=role, bytes=extra, formula=f)]


_ACTOR_ROOT_LINGERS = frozenset({Phase.REF_LOG_PROB, Phase.CRITIC_VALUES, Phase.UPDATE_CRITIC})


def lingering_roots(ctx: Context, row: PhaseRow) -> list[Component]:
    """FSDP1 never frees the root unit (embedding, final norm, lm_head) after forward (torch
    ``_post_forward_reshard``: ``not state._is_root``). The legacy workers resharded it after each log-prob
    pass; the 0.8+ engine does so only when ``fsdp_size > 1`` (verl 0.9.1 ``transformer_impl.py`` 1115,
    ``EngineEvalModeCtx.__exit__``), so with the default -1 the ref's root stays gathered (bf16) in every phase
    and the actor's from old_log_prob until its next backward. With ``reshard_after_forward=false`` every unit of
    the actor stays gathered from old_log_prob to the update, in every release (``_all_units_linger``)."""
    r = ctx.r
    if ctx.s.hardware.num_gpus <= 1:
        return []  # FSDP1 switches to NO_SHARD on one GPU: nothing is all-gathered
    actor_idle_after_forward = row.phase in _ACTOR_ROOT_LINGERS and _actor_use(ctx, row) is Use.IDLE
    out = []
    all_units = actor_idle_after_forward and _all_units_linger(r.actor)
    if all_units:
        p = ctx.actor.num_params
        f = f"reshard_after_forward=false: every unit left gathered after old_log_prob until the update, {p:,} x 2 B"
        out.append(Component(name=Comp.ACTOR_UNSHARDED_PARAMS, role=Role.ACTOR, bytes=2 * p, formula=f))
    if r.behaviour.forward_only_root_resharded:
        return out
    ref = r.ref
    if ctx.ref_separate and ref is not None and _root_lingers(ref) and row.phase is not Phase.REF_LOG_PROB:
        b = 2 * ctx.actor.root_params
        f = f"FSDP1 root unit of the ref left gathered after ref_log_prob (fsdp_size -1): {ctx.actor.root_params:,} x 2 B"
        out.append(Component(name=Comp.REF_UNSHARDED_PARAMS, role=Role.REF, bytes=b, formula=f))
    if actor_idle_after_forward and _root_lingers(r.actor) and not all_units:
        b = 2 * ctx.actor.root_params
        f = f"FSDP1 root unit of the actor left gathered after old_log_prob: {ctx.actor.root_params:,} x 2 B"
        out.append(Component(name=Comp.ACTOR_UNSHARDED_PARAMS, role=Role.ACTOR, bytes=b, formula=f))
    return out


def _all_units_linger(plan: TrainerPlan) -> bool:
    """``fsdp_config.reshard_after_forward=false``: FSDP1 runs SHARD_GRAD_OP, which a forward never reshards (torch
    ``RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES`` holds only FULL_SHARD / HYBRID_SHARD), and FSDP2 keeps its units
    unsharded until the next backward; so after old_log_prob every unit stays gathered until update_actor."""
    return plan.strategy in (Strategy.FSDP, Strategy.FSDP2) and not plan.fsdp.reshard_after_forward


def _root_lingers(plan: TrainerPlan) -> bool:
    return plan.strategy is Strategy.FSDP and plan.fsdp.fsdp_size <= 1 and not plan.cpu_offload_policy


# ---- runtime ------------------------------------------------------------------------------------


def _runtime_components(ctx: Context, row: PhaseRow, transient: int) -> list[Component]:
    return _remembered(ctx, ("runtime",), lambda: _fixed_runtime(ctx)) + _fragmentation(ctx, row, transient)


def _fixed_runtime(ctx: Context) -> list[Component]:
    """CUDA contexts and NCCL buffers: the same in every phase."""
    r, ov = ctx.r, ctx.s.overheads
    procs = r.num_processes
    base = procs - (1 if r.has_reward_model else 0)
    names = "trainer, rollout" if base == 2 else "trainer with rollout inside"
    out = [
        Component(
            name=Comp.CUDA_CONTEXT,
            role=Role.RUNTIME,
            bytes=int(procs * ov.cuda_context_gib * GIB_BYTES),
            formula=f"{procs} processes ({names}{', reward' if r.has_reward_model else ''}) x {ov.cuda_context_gib} GiB",
            torch_allocated=False,
            process=Process.NONE,
        )
    ]
    nccl = int(ov.trainer_nccl_gib * GIB_BYTES)
    f = f"trainer NCCL {ov.trainer_nccl_gib} GiB"
    if r.rollout.tp > 1:
        nccl += int(ov.vllm_tp_comm_gib * GIB_BYTES)
        f += f" + rollout TP communicators {ov.vllm_tp_comm_gib} GiB (outside gpu_memory_utilization)"
    out.append(
        Component(
            name=Comp.NCCL_BUFFERS,
            role=Role.RUNTIME,
            bytes=nccl,
            formula=f,
            torch_allocated=False,
            process=Process.NONE,
        )
    )
    return out


def _fragmentation(ctx: Context, row: PhaseRow, transient: int) -> list[Component]:
    """Memory the caching allocator holds but cannot hand out (reserved - allocated) in a phase.

    Fixed-size segments: a freed block serves only requests that fit inside it and a segment goes back to the
    driver only when wholly free, so the trainer's transients leave ``overheads.fragmentation_fraction`` of
    themselves unusable. verl >= 0.6 runs the trainer's passes with expandable segments
    (``Resolved.trainer_expandable_segments``): one growing segment per stream whose free pages the allocator
    unmaps and maps again where an allocation needs them before it reports an OOM (PyTorch
    c10/cuda/CUDACachingAllocator.cpp ``ExpandableSegment``, ``release_cached_blocks``), so fragmentation does
    not take usable memory there. Left out: the partly used pages at the edges of free blocks (20 MiB pages in
    the large pool, ``kLargeBuffer``). verl switches them off for the weight sync and the rollout (the phases
    without a trainer pass), which keep the term; the report's decisions name the setting where it applies."""
    if ctx.r.trainer_expandable_segments and row.compute is not None:
        return []
    ov = ctx.s.overheads
    return [
        Component(
            name=Comp.FRAGMENTATION,
            role=Role.RUNTIME,
            bytes=int(transient * ov.fragmentation_fraction),
            formula=f"{ov.fragmentation_fraction:.0%} of the trainer's transient tensors {format_gib(transient)}",
            torch_allocated=False,
            process=Process.TRAINER,
        )
    ]


# ---- phases -----------------------------------------------------------------------------------


# Transients that do not read the micro-batch (``_transient`` reads ``worst`` only through it): built once per
# context and computing role.
_BATCH_FREE = frozenset(
    {
        Transient.REWARD_ENGINE,
        Transient.SYNC_BUCKET,
        Transient.SYNC_FULL_TENSOR,
        Transient.SYNC_STATE_DICT,
        Transient.GATHERED,
        Transient.DORA,
    }
)


def phase_memory(ctx: Context, phase: Phase, worst: bool) -> PhaseMemory:
    """Components on one GPU in ``phase``: resident state, the engine, the phase's transients (RESIDENCY row),
    runtime overheads; zero-byte components are dropped."""
    row = RESIDENCY[phase]
    comps = _remembered(
        ctx, ("base", phase), lambda: _resident_state(ctx, row) + lingering_roots(ctx, row) + _engine(ctx, row)
    )
    transient = freed = unborn = 0
    for kind in row.transients:
        if kind is Transient.OPTIMIZER_STEP:
            # After the backward every gradient exists: the step's temporary is measured against the transients
            # less the gradients the backward's peak did not hold yet (calculator.memory.backward).
            unborn = backward.unborn_grad_bytes(ctx, row, worst, comps, freed)
            made = _optimizer_step(ctx, row, transient - unborn)
        elif kind in _BATCH_FREE:  # the same in the expected and the worst-case walk, and in every phase
            made = _remembered(ctx, ("transient", kind, row.compute), partial(_transient, ctx, row, kind, worst))
        else:
            made = _transient(ctx, row, kind, worst)
        comps += made
        if kind not in NOT_FRAGMENTING:
            transient += sum(c.bytes for c in made)
        if kind in backward.FREED_BY_BACKWARD:
            freed += sum(c.bytes for c in made)
    comps = backward.grads_born_in_backward(comps, row, unborn, freed)
    comps += _runtime_components(ctx, row, transient)
    return PhaseMemory(name=phase, components=tuple(c for c in comps if c.bytes > 0))


def startup_free_bytes(ctx: Context) -> int:
    """Free memory when the rollout engine starts: usable minus the trainer's model shards (no optimizer
    state yet), CUDA contexts and NCCL buffers (verl 0.9 trainer_base._setup starts vLLM after init_model)."""
    return ctx.gpu.usable_memory_bytes - ctx.startup_trainer_bytes - runtime_startup_bytes(ctx.r)


def startup_required_bytes(ctx: Context) -> int:
    """vLLM's free-memory requirement at start: util x total (``vllm/v1/worker/utils.py`` ``request_memory``)."""
    return int(ctx.gpu.usable_memory_bytes * ctx.r.rollout.gpu_memory_utilization)


def engine_starts(ctx: Context) -> bool:
    """vLLM refuses to start when free memory is below util x total (vllm/v1/worker/utils.py request_memory)
    or when its KV cache cannot hold one sequence of max_model_len (vllm/v1/core/kv_cache_utils.py
    check_enough_kv_cache_memory). SGLang has no free-memory check (its pool shrinks instead)."""
    enough_free = ctx.r.rollout.engine == "sglang" or startup_free_bytes(ctx) >= startup_required_bytes(ctx)
    return ctx.rollout.kv_tokens >= ctx.r.rollout.max_model_len and enough_free


def active_phases(ctx: Context) -> list[Phase]:
    return list(ctx.r.phases)


def all_phases(ctx: Context, worst: bool = False) -> list[PhaseMemory]:
    return [phase_memory(ctx, p, worst) for p in ctx.r.phases]


def expected_and_worst(ctx: Context) -> tuple[list[PhaseMemory], list[PhaseMemory]]:
    """``(all_phases(ctx), all_phases(ctx, worst=True))`` without walking a phase twice when its worst case
    cannot differ: ``phase_memory`` reads ``worst`` only through the pass's micro-batch
    (``r.passes[phase].batch(worst)``), so a phase without a pass (rollout, weight sync) or whose worst-case
    micro-batch equals the expected one is the same record (tests/memory/test_phases.py checks the pair
    against two full walks on every preset)."""
    expected = all_phases(ctx, worst=False)
    passes = ctx.r.passes
    worst = [
        p
        if p.name not in passes or passes[p.name].expected == passes[p.name].worst
        else phase_memory(ctx, p.name, True)
        for p in expected
    ]
    return expected, worst
