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

from dataclasses import dataclass

from calculator.inputs.hardware import GpuSpec
from calculator.inputs.scenario import Scenario
from calculator.memory.engine import EngineBudget, EngineSettings, engine_budget
from calculator.memory.training import TrainingState, fsdp_state, megatron_state
from calculator.model import activations as act
from calculator.model.architecture import Architecture
from calculator.model.roles import (
    RoleModel,
    need_critic,
    need_reference_policy,
    need_reward_model,
    policy_role,
    ref_is_actor,
    value_role,
)
from calculator.report.models import Component, PhaseMemory
from calculator.resolve import batching
from calculator.resolve.batching import PassBatch
from calculator.resolve.versions import behaviour
from calculator.units import GIB_BYTES, MIB_BYTES

PHASE_ORDER = (
    "rollout",
    "reward",
    "old_log_prob",
    "ref_log_prob",
    "critic_values",
    "update_critic",
    "update_actor",
    "weight_sync",
)
FUSED_CHUNK_TOKENS = 512  # verl FusedLinearForPPO(chunk_size=512) (utils/experimental/torch_functional.py)
ENTROPY_CHUNK_TOKENS = 2048  # actor.entropy_from_logits_chunk_size default


@dataclass(frozen=True)
class Context:
    """Everything resolved from a scenario once: models, GPU, states, engine budgets."""

    s: Scenario
    gpu: GpuSpec
    actor: RoleModel
    critic: RoleModel | None
    ref_separate: bool  # a ref model distinct from the actor exists
    ref_via_actor: bool  # LoRA: ref log-prob by the actor with adapters off
    reward: RoleModel | None
    actor_state: TrainingState
    critic_state: TrainingState | None
    ref_state: TrainingState | None
    rollout: EngineBudget
    reward_engine: EngineBudget | None
    startup_trainer_bytes: int  # trainer-side memory when vLLM starts (before the first step)
    max_model_len: int  # the engine's max_model_len: its KV cache must hold one such sequence to start


def _gib(b: float) -> str:
    return f"{b / GIB_BYTES:.2f} GiB"


def rollout_settings(s: Scenario, arch: Architecture) -> EngineSettings:
    r = s.rollout
    max_len = r.max_model_len or max(
        arch.max_position_embeddings, s.data.max_prompt_length + s.data.max_response_length
    )
    return EngineSettings(
        engine=r.name,
        tp=r.tensor_model_parallel_size,
        gpu_memory_utilization=r.gpu_memory_utilization,
        max_num_batched_tokens=r.max_num_batched_tokens,
        max_num_seqs=r.max_num_seqs,
        max_model_len=max_len,
        enable_chunked_prefill=r.enable_chunked_prefill,
        enforce_eager=r.enforce_eager,
        weight_bytes_per_param=1 if r.quantization == "fp8" else 2,
        kv_dtype_bytes=1 if r.kv_cache_dtype == "fp8" else 2,
    )


def reward_settings(s: Scenario, arch: Architecture) -> EngineSettings:
    r = s.reward_model.rollout
    return EngineSettings(
        engine="vllm",
        tp=r.tensor_model_parallel_size,
        gpu_memory_utilization=r.gpu_memory_utilization,
        max_num_batched_tokens=r.max_num_batched_tokens,
        max_num_seqs=r.max_num_seqs,
        max_model_len=s.data.max_prompt_length + s.data.max_response_length,
        enable_chunked_prefill=True,
        enforce_eager=r.enforce_eager,
        weight_bytes_per_param=2,
        kv_dtype_bytes=2,
    )


def build_context(
    s: Scenario, gpu: GpuSpec, arch: Architecture, critic_arch: Architecture | None, reward_arch: Architecture | None
) -> Context:
    actor = policy_role("actor", arch)
    has_critic = need_critic(s)
    critic = value_role("critic", critic_arch or arch) if has_critic else None
    ref_via_actor = ref_is_actor(s)
    ref_separate = need_reference_policy(s) and not ref_via_actor
    reward = value_role("reward", reward_arch or arch) if need_reward_model(s) else None
    megatron = s.actor.strategy == "megatron"
    if megatron:
        actor_state = megatron_state(s, actor, s.actor.megatron, trained=True)
    else:
        actor_state = fsdp_state(s, actor, s.actor.fsdp_config, s.actor.strategy, trained=True)
    critic_state = None
    if critic:
        cstrat = s.critic.strategy or s.actor.strategy
        critic_state = (
            megatron_state(s, critic, s.critic.megatron, trained=True)
            if cstrat == "megatron"
            else fsdp_state(s, critic, s.critic.fsdp, cstrat, trained=True)
        )
    ref_state = None
    if ref_separate:
        ref_role = policy_role("ref", arch)
        ref_state = (
            megatron_state(s, ref_role, s.actor.megatron, trained=False)
            if megatron
            else fsdp_state(s, ref_role, s.ref.fsdp_config, s.actor.strategy, trained=False)
        )
    # Trainer memory when the engines start: model params (no optimizer state yet: AdamW creates it
    # lazily at the first step), unless offloaded after init (engine_workers.py initialize()).
    startup = 0
    if not _actor_params_offloaded_when_idle(s):
        startup += actor_state.params.bytes
        if megatron:
            startup += actor_state.grads.bytes  # Megatron's grad buffer is allocated at init
    if critic_state and not _critic_params_offloaded_when_idle(s):
        startup += critic_state.params.bytes
    if ref_state:
        startup += _ref_resident_bytes(s, ref_state, actor.num_params)
    rs = rollout_settings(s, arch)
    rb = engine_budget(
        arch,
        rs,
        gpu.usable_memory_bytes,
        s.overheads,
        arch.total_params(),
        trainer_resident_bytes=startup + _runtime_bytes(s),
        graphs_in_budget=behaviour(s.verl_version).vllm_cudagraph_in_budget,
    )
    reward_engine = None
    if reward:
        reward_engine = engine_budget(
            reward.arch, reward_settings(s, reward.arch), gpu.usable_memory_bytes, s.overheads, reward.num_params
        )
    return Context(
        s,
        gpu,
        actor,
        critic,
        ref_separate,
        ref_via_actor,
        reward,
        actor_state,
        critic_state,
        ref_state,
        rb,
        reward_engine,
        startup,
        rs.max_model_len,
    )


# ---- residency rules --------------------------------------------------------------------------


def _fsdp2_cpu_policy(s: Scenario) -> bool:
    return s.actor.strategy == "fsdp2" and s.actor.fsdp_config.offload_policy


def _actor_params_offloaded_when_idle(s: Scenario) -> bool:
    if s.actor.strategy == "megatron":
        return s.actor.megatron.param_offload
    return s.actor.fsdp_config.param_offload or _fsdp2_cpu_policy(s)


def _critic_params_offloaded_when_idle(s: Scenario) -> bool:
    if (s.critic.strategy or s.actor.strategy) == "megatron":
        return s.critic.megatron.param_offload
    return s.critic.fsdp.param_offload or (
        s.critic.fsdp.offload_policy and (s.critic.strategy or s.actor.strategy) == "fsdp2"
    )


def _ref_resident_bytes(s: Scenario, ref_state: TrainingState, num_params: int) -> int:
    """GPU-resident reference policy. FSDP: forced CPU offload in every modelled verl version (legacy
    ``fsdp_workers.py`` wraps non-actor roles in ``CPUOffload(offload_params=True)`` since verl 0.2; 0.9's
    forward-only engines likewise): 0. Megatron: bf16 params stay on GPU unless ref.megatron param_offload."""
    if s.actor.strategy == "megatron":
        off = (
            s.ref.megatron_param_offload if s.ref.megatron_param_offload is not None else s.actor.megatron.param_offload
        )
        return 0 if off else ref_state.params.bytes
    return 0


def num_processes(s: Scenario) -> int:
    """Processes with a CUDA context on each GPU: the trainer worker, plus the rollout server unless the
    release runs vLLM inside the trainer process (verl <= 0.7, see calculator/resolve/versions.py)."""
    return 1 if behaviour(s.verl_version).rollout_in_trainer_process else 2


def _runtime_bytes(s: Scenario, processes: int | None = None) -> int:
    """CUDA contexts and NCCL buffers present from startup (outside torch's allocator)."""
    ov = s.overheads
    procs = num_processes(s) if processes is None else processes
    b = int(procs * ov.cuda_context_gib * GIB_BYTES + ov.trainer_nccl_gib * GIB_BYTES)
    if s.rollout.tensor_model_parallel_size > 1:
        b += int(ov.vllm_tp_comm_gib * GIB_BYTES)
    return b


def _role_state_components(ctx: Context, role: str, phase: str) -> list[Component]:
    """Persistent state of a trained role (actor/critic) on the GPU in ``phase``."""
    s = ctx.s
    if role == "actor":
        st = ctx.actor_state
        active = {"old_log_prob", "update_actor", "weight_sync"} | ({"ref_log_prob"} if ctx.ref_via_actor else set())
        if s.actor.strategy == "fsdp2" and not s.model.lora_rank:
            # verl 0.9 get_per_tensor_param: FSDP2 without LoRA skips load_fsdp_model_to_gpu ("_skip_staging") and
            # moves one shard at a time to the GPU for full_tensor(); offloaded params stay on CPU during the sync.
            active = active - {"weight_sync"}
        update = phase == "update_actor"
        megatron = s.actor.strategy == "megatron"
        cpu_policy = _fsdp2_cpu_policy(s)
        p_off = s.actor.megatron.param_offload if megatron else s.actor.fsdp_config.param_offload
        o_off = s.actor.megatron.optimizer_offload if megatron else s.actor.fsdp_config.optimizer_offload
    else:
        st = ctx.critic_state
        assert st is not None
        active = {"critic_values", "update_critic"}
        update = phase == "update_critic"
        megatron = (s.critic.strategy or s.actor.strategy) == "megatron"
        cpu_policy = s.critic.fsdp.offload_policy and (s.critic.strategy or s.actor.strategy) == "fsdp2"
        p_off = s.critic.megatron.param_offload if megatron else s.critic.fsdp.param_offload
        o_off = s.critic.megatron.optimizer_offload if megatron else s.critic.fsdp.optimizer_offload
    out: list[Component] = []
    if cpu_policy:
        return out  # FSDP2 CPUOffloadPolicy: params, grads and optimizer live on CPU throughout
    on_gpu = phase in active or not p_off
    if on_gpu and st.params.bytes:
        why = "" if not p_off else " (param_offload: loaded back for this phase)"
        out.append(Component(name=f"{role}_params", role=role, bytes=st.params.bytes, formula=st.params.formula + why))
    grads_resident = update or (megatron and on_gpu)
    if grads_resident and st.grads.bytes:
        out.append(Component(name=f"{role}_grads", role=role, bytes=st.grads.bytes, formula=st.grads.formula))
    if st.optimizer.bytes and (update or not o_off):
        why = " (optimizer_offload: loaded for the update)" if o_off else " (resident between steps after the first)"
        out.append(
            Component(name=f"{role}_optimizer", role=role, bytes=st.optimizer.bytes, formula=st.optimizer.formula + why)
        )
    return out


# ---- compute transients -----------------------------------------------------------------------


def _logits_components(ctx: Context, role: str, tokens: int, *, entropy: bool, training: bool) -> list[Component]:
    s = ctx.s
    v = ctx.actor.arch.vocab_size
    out: list[Component] = []
    temp_copy = s.rollout.temperature != 1.0 and behaviour(s.verl_version).temperature_copies_logits
    if s.model.use_fused_kernels:
        t = min(tokens, FUSED_CHUNK_TOKENS)
        out.append(
            Component(
                name=f"{role}_logits",
                role=role,
                bytes=t * v * 6,
                formula=f"fused kernel: {t}-token chunk x vocab {v} x (2 B bf16 + 4 B fp32 upcast)",
            )
        )
        if entropy:
            out.append(
                Component(
                    name=f"{role}_entropy",
                    role=role,
                    bytes=t * v * 4,
                    formula=f"fused kernel: {t}-token chunk x vocab {v} x 4 B",
                )
            )
        return out
    copies = 2 if temp_copy else 1
    out.append(
        Component(
            name=f"{role}_logits",
            role=role,
            bytes=tokens * v * 2 * copies,
            formula=f"{tokens} tokens x vocab {v} x 2 B (bf16)"
            + (" x 2 (logits / temperature makes a copy)" if temp_copy else ""),
        )
    )
    if entropy:
        b, f = _entropy_bytes(s, tokens, v, training)
        out.append(Component(name=f"{role}_entropy", role=role, bytes=b, formula=f))
    return out


def _entropy_bytes(s: Scenario, tokens: int, v: int, training: bool) -> tuple[int, str]:
    """Vocab-sized tensors of verl's entropy (``verl/utils/torch_functional.py`` ``entropy_from_logits``:
    ``softmax(logits)``, ``logsumexp(logits) - sum(pd * logits)``), as the FSDP engine calls it
    (``workers/engine/fsdp/transformer_impl.py``):

    - ``use_torch_compile`` (default): the function is ``torch.compile``d; inductor fuses the softmax into the
      two row reductions, so the forward holds no T x V buffer. In training the backward still produces the
      entropy's gradient w.r.t. the logits: a bf16 T x V tensor.
    - eager: ``pd`` (T x V, logits dtype) and ``pd * logits`` (T x V) coexist: 4 B per logit (the 13.91 GiB
      allocation in verl issue #2828, legacy dp_actor without compile, is this product). In training ``pd`` is
      saved for backward (2 B) and the backward needs two more T x V bf16 tensors; ``entropy_checkpointing``
      drops the saved one.
    - ``entropy_from_logits_with_chunking`` (eager): 2048-token chunks upcast to fp32: chunk x V x 4 B x 3
      (the fp32 copy, its softmax and the product).
    """
    a = s.actor
    chunk = min(tokens, ENTROPY_CHUNK_TOKENS)
    if a.use_torch_compile:
        if not training:
            return 0, "torch.compile'd entropy: softmax fused into the reductions, no vocab-sized buffer"
        return tokens * v * 2, f"backward of the compiled entropy: gradient {tokens} x vocab {v} x 2 B"
    if a.entropy_from_logits_with_chunking:
        work, f = chunk * v * 12, f"chunked entropy: {chunk} tokens x vocab {v} x 4 B x 3 (fp32 copy, softmax, product)"
    else:
        work, f = tokens * v * 4, f"eager entropy: softmax + product, {tokens} tokens x vocab {v} x 2 B x 2"
    if not training:
        return work, f
    saved = 0 if a.entropy_checkpointing else tokens * v * 2
    grad = tokens * v * 4
    text = f"saved softmax {tokens} x {v} x 2 B + " if saved else "entropy_checkpointing: recomputed, "
    return saved + max(work, grad), text + f"backward working max({f}; gradient {tokens} x {v} x 4 B)"


def _training_activations(
    ctx: Context, role: RoleModel, batch: PassBatch, *, ckpt: bool, offload: bool, megatron: bool
) -> Component:
    a = role.arch
    t = batch.tokens_per_gpu
    work = act.forward_working_bytes_per_token(a) * t
    final = act.final_norm_saved_bytes_per_token(a) * t
    layer = act.max_layer_saved_bytes_per_token(a)
    if megatron:
        m = ctx.s.actor.megatron if role.name == "actor" else ctx.s.critic.megatron
        tp, pp, cp = m.tensor_model_parallel_size, m.pipeline_model_parallel_size, m.context_parallel_size
        split = tp if (m.sequence_parallel and tp > 1) else 1
        layers_per_stage = -(-a.num_layers // pp)
        in_flight = min(pp, batch.num_micro_batches)
        per_layer = act.all_layers_saved_bytes_per_token(a) // a.num_layers
        inp = act.checkpoint_input_bytes_per_token(a)
        g, k = m.recompute_granularity, m.recompute_num_layers or 1
        # Megatron-core activation recompute (override_transformer_config.recompute_*): "full" + "uniform"
        # checkpoints groups of k layers (keeps each group's input) and recomputes one group at a time;
        # "full" + "block" recomputes only the first k layers of each stage; "selective" recomputes the
        # core attention (its output and log-sum-exp are not kept). Megatron's own fused layers differ from
        # HF's in detail; the per-layer bytes are the HF-measured ones (calculator/model/activations.py).
        if g == "full" and m.recompute_method == "block":
            kk = min(k, layers_per_stage)
            per_stage = kk * inp + (layers_per_stage - kk) * per_layer
            how = f"block recompute of {kk} layers/stage"
        elif g == "full":
            groups = -(-layers_per_stage // k)
            per_stage = groups * inp + min(k, layers_per_stage) * per_layer // in_flight
            how = f"uniform recompute in groups of {k}"
        elif g == "selective":
            core = 2 * a.attn_out_dim + 4 * a.num_attention_heads
            per_stage = layers_per_stage * max(per_layer - core, inp)
            how = "selective (core attention) recompute"
        else:
            per_stage = layers_per_stage * per_layer
            how = "no recompute"
        saved = per_stage * t * in_flight // (split * cp)
        return Component(
            name=f"{role.name}_activations",
            role=role.name,
            bytes=saved + work // (split * cp),
            formula=f"Megatron ({how}): {layers_per_stage} layers/stage x {in_flight} micro-batches in flight (1F1B) x "
            f"{t} tokens / (SP {split} x CP {cp}) + working set",
        )
    if ckpt:
        kept = 2 if offload else a.num_layers
        inputs = kept * act.checkpoint_input_bytes_per_token(a) * t
        b = inputs + layer * t + final + work
        f = (
            f"checkpointing: {kept} layer inputs x {2 * a.hidden_size} B x {t} tokens"
            + (" (activation offload keeps 2 layer groups)" if offload else "")
            + f" + one recomputed layer {layer} B/token x {t} + final norm {final // max(t, 1)} B/token + working set"
        )
    else:
        if offload:
            saved = 2 * layer * t
            f = f"activation offload: 2 layers x {layer} B/token x {t} tokens + final norm + working set"
        else:
            saved = act.all_layers_saved_bytes_per_token(a) * t
            f = f"no checkpointing: {a.num_layers} layers x {layer} B/token x {t} tokens + final norm + working set"
        b = saved + final + work
    return Component(name=f"{role.name}_activations", role=role.name, bytes=b, formula=f)


def _forward_activations(role_name: str, arch: Architecture, tokens: int) -> Component:
    per = act.forward_working_bytes_per_token(arch)
    return Component(
        name=f"{role_name}_activations",
        role=role_name,
        bytes=per * tokens,
        formula=f"forward only: live set of one layer {per} B/token x {tokens} tokens",
    )


def _gathered(role_name: str, st: TrainingState) -> list[Component]:
    if not st.gathered.bytes:
        return []
    return [
        Component(
            name=f"{role_name}_unsharded_params", role=role_name, bytes=st.gathered.bytes, formula=st.gathered.formula
        )
    ]


# ---- phases -----------------------------------------------------------------------------------


def _engine_components(eb: EngineBudget, *, awake: bool, prefix: str = "") -> list[Component]:
    out = []
    role = "reward" if prefix else "rollout"
    proc = "reward" if prefix else "rollout"
    if awake:
        out.append(
            Component(
                name=f"{prefix}rollout_weights" if not prefix else "reward_params",
                role=role,
                bytes=eb.weights_bytes,
                formula=eb.formulas["rollout_weights"],
                process=proc,
            )
        )
        out.append(
            Component(
                name="kv_cache" if not prefix else "reward_kv_cache",
                role=role,
                bytes=max(0, eb.kv_cache_bytes),
                formula=eb.formulas["kv_cache"],
                process=proc,
            )
        )
        out.append(
            Component(
                name="rollout_activations" if not prefix else "reward_activations",
                role=role,
                bytes=eb.activation_bytes,
                formula=eb.formulas["rollout_activations"],
                process=proc,
            )
        )
    if not prefix:
        out.append(
            Component(
                name="rollout_non_torch",
                role="rollout",
                bytes=eb.non_torch_bytes,
                formula=eb.formulas["rollout_non_torch"],
                torch_allocated=False,
                process="rollout",
            )
        )
        out.append(
            Component(
                name="cuda_graphs",
                role="rollout",
                bytes=eb.cuda_graph_bytes,
                formula=eb.formulas["cuda_graphs"] + " (not freed by sleep)",
                torch_allocated=False,
                process="rollout",
            )
        )
    return out


def _runtime_components(ctx: Context, transient: int) -> list[Component]:
    s, ov = ctx.s, ctx.s.overheads
    procs = num_processes(s) + (1 if ctx.reward else 0)
    names = "trainer, rollout" if num_processes(s) == 2 else "trainer with rollout inside"
    out = [
        Component(
            name="cuda_context",
            role="runtime",
            bytes=int(procs * ov.cuda_context_gib * GIB_BYTES),
            formula=f"{procs} processes ({names}{', reward' if ctx.reward else ''}) x {ov.cuda_context_gib} GiB",
            torch_allocated=False,
            process="none",
        )
    ]
    nccl = int(ov.trainer_nccl_gib * GIB_BYTES)
    f = f"trainer NCCL {ov.trainer_nccl_gib} GiB"
    if s.rollout.tensor_model_parallel_size > 1:
        nccl += int(ov.vllm_tp_comm_gib * GIB_BYTES)
        f += f" + rollout TP communicators {ov.vllm_tp_comm_gib} GiB (outside gpu_memory_utilization)"
    out.append(
        Component(name="nccl_buffers", role="runtime", bytes=nccl, formula=f, torch_allocated=False, process="none")
    )
    frag = int(transient * ov.fragmentation_fraction)
    out.append(
        Component(
            name="fragmentation",
            role="runtime",
            bytes=frag,
            formula=f"{ov.fragmentation_fraction:.0%} of the trainer's transient tensors {_gib(transient)}",
            torch_allocated=False,
            process="trainer",
        )
    )
    return out


def phase_memory(ctx: Context, phase: str, worst: bool) -> PhaseMemory:
    s = ctx.s
    comps: list[Component] = []
    # Resident training state of every trained role.
    comps += _role_state_components(ctx, "actor", phase)
    if ctx.critic:
        comps += _role_state_components(ctx, "critic", phase)
    if ctx.ref_state is not None:
        rb = _ref_resident_bytes(s, ctx.ref_state, ctx.actor.num_params)
        if rb:
            comps.append(
                Component(
                    name="ref_params", role="ref", bytes=rb, formula="ref policy resident on GPU (bf16 / Megatron)"
                )
            )
    # Rollout engine: awake in rollout; weights only during sync; asleep otherwise unless free_cache_engine=false.
    keep = not s.rollout.free_cache_engine
    if phase == "rollout" or keep:
        comps += _engine_components(ctx.rollout, awake=True)
    elif phase == "weight_sync":
        comps.append(
            Component(
                name="rollout_weights",
                role="rollout",
                bytes=ctx.rollout.weights_bytes,
                formula=ctx.rollout.formulas["rollout_weights"] + " (woken for the sync, KV not yet)",
                process="rollout",
            )
        )
        comps += _engine_components(ctx.rollout, awake=False)
    else:
        comps += _engine_components(ctx.rollout, awake=False)
    transient_names: set[str] = set()

    def add_transient(cs: list[Component]) -> None:
        for c in cs:
            transient_names.add(c.name)
        comps.extend(cs)

    megatron = s.actor.strategy == "megatron"
    if phase == "reward" and ctx.reward_engine:
        comps.extend(_engine_components(ctx.reward_engine, awake=True, prefix="reward_"))
    elif phase == "old_log_prob":
        b = batching.old_log_prob_batch(s, worst)
        add_transient(_gathered("actor", ctx.actor_state))
        add_transient([_forward_activations("actor", ctx.actor.arch, b.tokens_per_gpu)])
        add_transient(_logits_components(ctx, "actor", b.tokens_per_gpu, entropy=True, training=False))
    elif phase == "ref_log_prob":
        b = batching.ref_log_prob_batch(s, worst)
        role = "ref"
        st = ctx.ref_state if ctx.ref_state is not None else ctx.actor_state
        add_transient(_gathered(role, st))
        add_transient([_forward_activations(role, ctx.actor.arch, b.tokens_per_gpu)])
        add_transient(_logits_components(ctx, role, b.tokens_per_gpu, entropy=False, training=False))
    elif phase == "critic_values" and ctx.critic and ctx.critic_state:
        b = batching.critic_values_batch(s, worst)
        add_transient(_gathered("critic", ctx.critic_state))
        add_transient([_forward_activations("critic", ctx.critic.arch, b.tokens_per_gpu)])
    elif phase == "update_critic" and ctx.critic and ctx.critic_state:
        b = batching.critic_update_batch(s, worst)
        cm = (s.critic.strategy or s.actor.strategy) == "megatron"
        add_transient(_gathered("critic", ctx.critic_state))
        add_transient(
            [
                _training_activations(
                    ctx,
                    ctx.critic,
                    b,
                    ckpt=s.critic.enable_gradient_checkpointing,
                    offload=s.model.enable_activation_offload,
                    megatron=cm,
                )
            ]
        )
    elif phase == "update_actor":
        b = batching.actor_update_batch(s, worst)
        add_transient(_gathered("actor", ctx.actor_state))
        if ctx.actor_state.extra_transient.bytes:
            add_transient(
                [
                    Component(
                        name="actor_dora_weight",
                        role="actor",
                        bytes=ctx.actor_state.extra_transient.bytes,
                        formula=ctx.actor_state.extra_transient.formula,
                    )
                ]
            )
        add_transient(
            [
                _training_activations(
                    ctx,
                    ctx.actor,
                    b,
                    ckpt=s.model.enable_gradient_checkpointing,
                    offload=s.model.enable_activation_offload,
                    megatron=megatron,
                )
            ]
        )
        ent = s.actor.entropy_coeff != 0 or s.actor.calculate_entropy
        add_transient(_logits_components(ctx, "actor", b.tokens_per_gpu, entropy=ent, training=True))
    elif phase == "weight_sync":
        # verl >= 0.8 streams through a GPU bucket shared over CUDA IPC; older releases ran vLLM in the trainer
        # process and loaded each full tensor directly (calculator/resolve/versions.py).
        bucket = s.rollout.update_weights_bucket_megabytes * MIB_BYTES
        if not behaviour(s.verl_version).weight_sync_bucket:
            bucket = 0
        comps.append(
            Component(
                name="sync_bucket",
                role="sync",
                bytes=bucket,
                formula=f"checkpoint_engine bucket {s.rollout.update_weights_bucket_megabytes} MiB (uint8 GPU buffer, CUDA IPC)",
            )
        )
        # Parameters are gathered whole one at a time in the master dtype (get_per_tensor_param: full_tensor(),
        # no cast). With LoRA (lora.merge=false) the FIRST sync still sends the base weights (vLLM starts from
        # load_format=dummy; base_sync_done), later syncs only the adapters: the peak over a run is the base's.
        lt = ctx.actor.arch.largest_tensor_params()
        mb = 4 if s.actor.fsdp_config.model_dtype == "fp32" and not megatron else 2
        full, f = lt * mb, f"largest parameter {lt:,} gathered whole (full_tensor) x {mb} B"
        if s.model.lora_rank:
            f += " (LoRA: base weights on the first sync, adapters only afterwards)"
        comps.append(Component(name="sync_full_tensor", role="sync", bytes=full, formula=f))
        transient_names |= {"sync_full_tensor"}
    transient = sum(c.bytes for c in comps if c.name in transient_names)
    comps += _runtime_components(ctx, transient)
    return PhaseMemory(name=phase, components=tuple(c for c in comps if c.bytes > 0))


def startup_free_bytes(ctx: Context) -> int:
    """Free memory when the rollout engine starts: usable minus the trainer's model shards (no optimizer
    state yet), CUDA contexts and NCCL buffers (verl 0.9 trainer_base._setup starts vLLM after init_model)."""
    return ctx.gpu.usable_memory_bytes - ctx.startup_trainer_bytes - _runtime_bytes(ctx.s)


def engine_starts(ctx: Context) -> bool:
    """vLLM refuses to start when free memory is below util x total (vllm/v1/worker/utils.py request_memory)
    or when its KV cache cannot hold one sequence of max_model_len (vllm/v1/core/kv_cache_utils.py
    check_enough_kv_cache_memory). SGLang has no free-memory check (its pool shrinks instead)."""
    s = ctx.s
    required = int(ctx.gpu.usable_memory_bytes * s.rollout.gpu_memory_utilization)
    enough_free = s.rollout.name == "sglang" or startup_free_bytes(ctx) >= required
    return ctx.rollout.kv_tokens >= ctx.max_model_len and enough_free


def active_phases(ctx: Context) -> list[str]:
    s = ctx.s
    out = []
    for p in PHASE_ORDER:
        if p == "reward" and not ctx.reward:
            continue
        if p == "ref_log_prob" and not need_reference_policy(s):
            continue
        if p in ("critic_values", "update_critic") and not ctx.critic:
            continue
        out.append(p)
    return out


def all_phases(ctx: Context, worst: bool = False) -> list[PhaseMemory]:
    return [phase_memory(ctx, p, worst) for p in active_phases(ctx)]
