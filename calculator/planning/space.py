"""The planner's search space (issue #6): GPU-count ladder, levers, and the scenario a point stands for.

``calculator.planning.search`` searches this space; every point (:class:`Knobs`) becomes a Scenario through
:func:`build_scenario`, which returns None for the points verl, vLLM or the Scenario's own rules reject.

**GPU counts searched**: powers of two up to a node (``hardware.gpus_per_node``), then every whole
number of nodes, up to ``max_gpus`` (:func:`gpu_count_ladder`).

**Levers** (:class:`Knobs`): param / optimizer offload (actor and critic together), activation offload,
gradient checkpointing, fused kernels, entropy chunking, micro-batch or token budget, Ulysses SP,
rollout TP, ``gpu_memory_utilization``, ``max_model_len`` capped at prompt + response,
``free_cache_engine``, full sharding (``fsdp_size=-1``) and LoRA (only when allowed). A lever's
candidate values are listed from the least memory-saving (usually the fastest) to the most saving.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from calculator.inputs.scenario import HardwareSection, Scenario
from calculator.names import Strategy
from calculator.planning.fit import FitCheck, batch_geometry_problem, parallel_problem
from calculator.report.estimate import build_context, time_out
from calculator.report.models import Report
from calculator.resolve.inheritance import micro_batch
from calculator.resolve.roles import critic_strategy, need_critic

if TYPE_CHECKING:
    from calculator.model.architecture import Architecture


# verl's LoRA examples use rank 64 (examples/grpo_trainer/run_qwen2_5-3b_gsm8k_grpo_lora.sh).
LORA_RANK = 64
# gpu_memory_utilization values tried (verl examples use 0.4-0.9; 0.3 lets a tight trainer fit).
UTIL_GRID = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
ROLLOUT_TP_CHOICES = (1, 2, 4, 8)  # vLLM replicas inside one node
ULYSSES_SP_CHOICES = (1, 2, 4, 8)  # Ulysses groups inside one node
# Dynamic-batch token budgets tried below the configured micro-batch size (powers of two).
TOKEN_BUDGETS = (65536, 32768, 16384, 8192, 4096, 2048, 1024, 512)
# Critic budget relative to the actor's when the planner sets one: the value model has no vocab-sized
# logits; verl's examples/ppo_trainer/run_qwen2-7b_seq_balance.sh gives it 4x (98304 vs 24000). 2x is a
# conservative choice for memory.
CRITIC_BUDGET_FACTOR = 2


def gpu_count_ladder(gpus_per_node: int, max_gpus: int) -> list[int]:
    """1, 2, 4, ... below a node, the node, then every whole number of nodes, up to ``max_gpus``."""
    counts: list[int] = []
    c = 1
    while c < gpus_per_node and c <= max_gpus:
        counts.append(c)
        c *= 2
    k = 1
    while k * gpus_per_node <= max_gpus:
        counts.append(k * gpus_per_node)
        k += 1
    return counts


# ---- knobs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchOption:
    """How micro-batches are sized: as configured, a dynamic token budget, or a fixed sequence count."""

    kind: str  # "configured" | "dynamic" | "fixed"
    value: int = 0  # token budget per GPU (dynamic) or sequences per micro-batch (fixed)

    @property
    def label(self) -> str:
        if self.kind == "configured":
            return "as configured"
        return f"token budget {self.value}" if self.kind == "dynamic" else f"{self.value} sequence(s) per micro-batch"


@dataclass(frozen=True)
class Knobs:
    """One point of the search space. Booleans are True when the memory-saving value is on."""

    num_gpus: int
    rollout_tp: int
    gpu_memory_utilization: float
    param_offload: bool
    optimizer_offload: bool
    activation_offload: bool
    gradient_checkpointing: bool
    fused_kernels: bool
    entropy_chunking: bool
    batch: int  # index into the search's batch options: 0 = as configured ... last = 1 sequence
    ulysses_sp: int
    lora: bool
    cap_max_model_len: bool
    free_cache_engine: bool
    full_shard: bool

    def updated(self, **changes: Any) -> Knobs:
        """``dataclasses.replace(self, **changes)`` without its per-call field introspection (the search makes
        thousands of these)."""
        return Knobs(**{**self.__dict__, **changes})


# Order in which levers are relaxed from the frontier: the first gets the first claim on headroom.
# LoRA first (full fine-tuning is the experiment asked for), then the levers that cost the most time per
# GiB saved (offloads move state over PCIe every step; activation offload and SP add transfers and
# all-to-alls), then the ladders that buy speed with memory (micro-batch size, KV cache), then the
# cheap ones, then the non-monotone choices (fused kernels, rollout TP), then restoring the user's values.
RELAX_ORDER = (
    "lora",
    "param_offload",
    "optimizer_offload",
    "activation_offload",
    "ulysses_sp",
    "batch",
    "gpu_memory_utilization",
    "gradient_checkpointing",
    "entropy_chunking",
    "fused_kernels",
    "rollout_tp",
    "cap_max_model_len",
    "free_cache_engine",
    "full_shard",
)
BOOL_LEVERS = (
    "lora",
    "param_offload",
    "optimizer_offload",
    "activation_offload",
    "gradient_checkpointing",
    "entropy_chunking",
    "cap_max_model_len",
    "free_cache_engine",
    "full_shard",
)


def with_step_time(report: Report, s: Scenario) -> Report:
    """``report`` (an estimate of ``s`` without time) with the step time ``estimate`` gives a configuration whose
    rollout engine starts."""
    return report.model_copy(update={"time": time_out(build_context(s), None)})


@dataclass(frozen=True)
class Evaluation:
    """A searched configuration with its estimate. ``memory`` is the estimate without time; ``report`` adds the
    step time of a configuration that fits, computed when first read: the count search and the bisections read the
    fit verdict alone, only the comparisons of ``relax`` and the plan's rows read a time (issue #18)."""

    knobs: Knobs
    scenario: Scenario
    memory: Report
    fit: FitCheck

    @cached_property
    def report(self) -> Report:
        return with_step_time(self.memory, self.scenario) if self.fit.fits else self.memory

    @property
    def step_s(self) -> float | None:
        return self.report.time.step_s if self.report.time is not None else None


def _upd(section: Any, **changes: Any) -> Any:
    # ``is`` first: most values are the section's own objects, whose ``==`` would compare them field by field.
    changed = {k: v for k, v in changes.items() if (old := getattr(section, k)) is not v and old != v}
    return section.model_copy(update=changed) if changed else section


def _min_or_none(value: int | None, cap: int) -> int | None:
    return None if value is None else min(value, cap)


def batch_overrides(s: Scenario, opt: BatchOption) -> dict[str, Any]:
    """Native dotted fields that size every pass's micro-batches as ``opt`` says. The log-prob and
    critic settings follow the actor's where they are set explicitly (verl asserts that
    ``log_prob_use_dynamic_bsz`` equals ``actor.use_dynamic_bsz``); an explicit log-prob budget or
    micro-batch is capped, never raised, an unset log-prob / critic micro-batch that verl requires is set; the critic gets ``CRITIC_BUDGET_FACTOR`` x the token budget."""
    if opt.kind == "configured":
        return {}
    dyn = opt.kind == "dynamic"
    out: dict[str, Any] = {"actor.use_dynamic_bsz": dyn}
    critic = need_critic(s)
    for sec in ("rollout", "ref"):
        if getattr(s, sec).log_prob_use_dynamic_bsz is not None:
            out[f"{sec}.log_prob_use_dynamic_bsz"] = dyn
    if critic and s.critic.use_dynamic_bsz is not None:
        out["critic.use_dynamic_bsz"] = dyn
    if dyn:
        t = opt.value
        out["actor.ppo_max_token_len_per_gpu"] = t
        for sec in ("rollout", "ref"):
            out[f"{sec}.log_prob_max_token_len_per_gpu"] = _min_or_none(
                getattr(s, sec).log_prob_max_token_len_per_gpu, t
            )
        if critic:
            ct = CRITIC_BUDGET_FACTOR * t
            out["critic.ppo_max_token_len_per_gpu"] = min(s.critic.ppo_max_token_len_per_gpu, ct)
            out["critic.forward_max_token_len_per_gpu"] = _min_or_none(s.critic.forward_max_token_len_per_gpu, ct)
    else:
        m = opt.value
        out["actor.ppo_micro_batch_size_per_gpu"] = m
        # verl requires the log-prob and critic micro-batches without dynamic batching (validate_config,
        # CriticConfig.__post_init__): the planner sets an unset one to m, as it chooses micro-batches itself.
        for sec in ("rollout", "ref"):
            own = getattr(s, sec).log_prob_micro_batch_size_per_gpu
            out[f"{sec}.log_prob_micro_batch_size_per_gpu"] = m if own is None else min(own, m)
        if critic:
            own = s.critic.ppo_micro_batch_size_per_gpu
            out["critic.ppo_micro_batch_size_per_gpu"] = m if own is None else min(own, m)
            out["critic.forward_micro_batch_size_per_gpu"] = _min_or_none(s.critic.forward_micro_batch_size_per_gpu, m)
    return out


# ---- a point of the space as a Scenario ----------------------------------------------------------


def batch_options_for(base: Scenario) -> list[BatchOption]:
    """Micro-batch sizings searched for ``base``, least to most saving: as configured, the token budgets
    of ``TOKEN_BUDGETS`` below the configured tokens per micro-batch, then one sequence per micro-batch.

    A token budget must hold the longest sequence over the Ulysses group (verl/utils/seqlen_balancing.py,
    :func:`calculator.planning.fit.parallel_problem`). Where the search cannot raise SP (Megatron, or no
    remove-padding: ``GpuSearch.sp_values`` keeps the scenario's), a budget below that is left out: it could never
    be built, and as the most saving option it would leave the frontier empty (no estimate, "nothing fits")."""
    b = base
    a = b.actor
    mean_len = (b.data.mean_prompt_length or b.data.max_prompt_length) + (
        b.data.mean_response_length or b.data.max_response_length
    )
    if not b.model.use_remove_padding:
        mean_len = b.data.max_prompt_length + b.data.max_response_length
    configured = (
        a.ppo_max_token_len_per_gpu
        if a.use_dynamic_bsz
        else micro_batch(b, "actor.ppo_micro_batch_size_per_gpu") * mean_len
    )
    opts = [BatchOption("configured")]
    floor = 0
    if a.strategy == "megatron" or not b.model.use_remove_padding:
        floor = -(-(b.data.max_prompt_length + b.data.max_response_length) // a.ulysses_sequence_parallel_size)
    opts += [BatchOption("dynamic", t) for t in TOKEN_BUDGETS if floor <= t < configured]
    if a.use_dynamic_bsz or micro_batch(b, "actor.ppo_micro_batch_size_per_gpu") > 1:
        opts.append(BatchOption("fixed", 1))
    return opts


def knobs_of(base: Scenario) -> Knobs:
    """``base``'s own lever values (``batch`` 0 = as configured)."""
    b = base
    off = b.actor.megatron if b.actor.strategy == "megatron" else b.actor.fsdp_config
    return Knobs(
        num_gpus=b.hardware.num_gpus,
        rollout_tp=b.rollout.tensor_model_parallel_size,
        gpu_memory_utilization=b.rollout.gpu_memory_utilization,
        param_offload=off.param_offload,
        optimizer_offload=off.optimizer_offload,
        activation_offload=b.model.enable_activation_offload,
        gradient_checkpointing=b.model.enable_gradient_checkpointing,
        fused_kernels=b.model.use_fused_kernels,
        entropy_chunking=b.actor.entropy_from_logits_with_chunking,
        batch=0,
        ulysses_sp=b.actor.ulysses_sequence_parallel_size,
        lora=b.model.lora_rank > 0,
        cap_max_model_len=b.rollout.max_model_len is not None,
        free_cache_engine=b.rollout.free_cache_engine,
        full_shard=b.actor.fsdp_config.fsdp_size == -1 and b.critic.fsdp.fsdp_size == -1,
    )


def build_scenario(base: Scenario, k: Knobs, options: list[BatchOption], arch: Architecture) -> Scenario | None:
    """The scenario for ``k`` (``options`` = the batch options ``k.batch`` indexes), or None when verl /
    vLLM / the scenario's own rules reject it."""
    b = base
    megatron = b.actor.strategy == "megatron"
    has_critic = need_critic(b)
    try:
        hw = b.hardware
        if k.num_gpus != hw.num_gpus:
            hw = HardwareSection(**{**hw.model_dump(), "num_gpus": k.num_gpus})
    except ValidationError:
        return None
    opt = options[k.batch]
    model = _upd(
        b.model,
        enable_gradient_checkpointing=k.gradient_checkpointing,
        enable_activation_offload=k.activation_offload,
        use_fused_kernels=k.fused_kernels,
        lora_rank=b.model.lora_rank if b.model.lora_rank or not k.lora else LORA_RANK,
    )
    fsdp_size = -1 if k.full_shard else b.actor.fsdp_config.fsdp_size
    actor_fsdp = _upd(b.actor.fsdp_config, fsdp_size=fsdp_size)
    actor_meg = b.actor.megatron
    if megatron:
        actor_meg = _upd(actor_meg, param_offload=k.param_offload, optimizer_offload=k.optimizer_offload)
    else:
        actor_fsdp = _upd(actor_fsdp, param_offload=k.param_offload, optimizer_offload=k.optimizer_offload)
    actor_changes: dict[str, Any] = {
        "fsdp_config": actor_fsdp,
        "megatron": actor_meg,
        "entropy_from_logits_with_chunking": k.entropy_chunking,
        "ulysses_sequence_parallel_size": k.ulysses_sp,
    }
    rollout_changes: dict[str, Any] = {
        "tensor_model_parallel_size": k.rollout_tp,
        "gpu_memory_utilization": k.gpu_memory_utilization,
        "free_cache_engine": k.free_cache_engine,
        # A LoRA the planner proposes syncs layer by layer: without layered_summon FSDP1 summons the whole model
        # in fp32 on every GPU at each sync (verl docs/advance/ppo_lora.rst recommends it for large models).
        "layered_summon": b.rollout.layered_summon or (k.lora and not b.model.lora_rank),
        "max_model_len": b.rollout.max_model_len
        if b.rollout.max_model_len is not None or not k.cap_max_model_len
        else b.data.max_prompt_length + b.data.max_response_length,
    }
    ref_changes: dict[str, Any] = {}
    if b.ref.ulysses_sequence_parallel_size is not None:
        ref_changes["ulysses_sequence_parallel_size"] = k.ulysses_sp
    critic_changes: dict[str, Any] = {}
    if has_critic:
        critic_changes = {
            "enable_gradient_checkpointing": k.gradient_checkpointing
            if not megatron
            else b.critic.enable_gradient_checkpointing,
            "ulysses_sequence_parallel_size": k.ulysses_sp,
        }
        cf = _upd(b.critic.fsdp, fsdp_size=-1 if k.full_shard else b.critic.fsdp.fsdp_size)
        cm = b.critic.megatron
        if critic_strategy(b) is Strategy.MEGATRON:
            cm = _upd(cm, param_offload=k.param_offload, optimizer_offload=k.optimizer_offload)
        else:
            cf = _upd(cf, param_offload=k.param_offload, optimizer_offload=k.optimizer_offload)
        critic_changes |= {"fsdp": cf, "megatron": cm}
    sections = {"actor": actor_changes, "rollout": rollout_changes, "ref": ref_changes, "critic": critic_changes}
    for key, value in batch_overrides(b, opt).items():
        section, field = key.split(".")
        sections[section][field] = value
    fields = {name: getattr(b, name) for name in Scenario.model_fields}
    fields["hardware"] = hw
    fields["model"] = model
    fields["actor"] = _upd(b.actor, **actor_changes)
    fields["rollout"] = _upd(b.rollout, **rollout_changes)
    fields["ref"] = _upd(b.ref, **ref_changes)
    fields["critic"] = _upd(b.critic, **critic_changes)
    try:
        s = Scenario.model_validate(fields)  # re-runs the cross-field rules; sections are trusted
    except ValidationError:
        return None
    if batch_geometry_problem(s) or parallel_problem(s, arch):
        return None
    return s
