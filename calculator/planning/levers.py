"""The OOM advisor's levers (issue #6): what each one is, where it comes from, and its candidate changes.

``LEVERS`` is the catalogue: the seeds' OOM checklist (seed 000: a) smaller rollout batch, b) shorter
lengths, c) gradient checkpointing, d) offload, e) more sharding, f) more GPUs) plus what verl adds (lower
``gpu_memory_utilization``, rollout TP, fused kernels, entropy chunking / checkpointing, dynamic batch
token budget, smaller micro-batches, Ulysses SP, CUDA graphs off, ``free_cache_engine``, ``max_model_len``
capped, LoRA), each with its tier, the mechanism class of its time cost and its source.
``lever_candidates`` lists, for one scenario, the changes (native dotted fields) of every lever that
applies, mildest first; ``calculator.planning.advisor`` estimates them and ranks the results.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from calculator.inputs.scenario import GROUP_ESTIMATORS, Scenario
from calculator.model.architecture import Architecture
from calculator.names import Strategy
from calculator.planning.layouts import critic_follows_actor, layout_of, layout_problem
from calculator.planning.space import (
    LORA_RANK,
    ROLLOUT_TP_CHOICES,
    TOKEN_BUDGETS,
    ULYSSES_SP_CHOICES,
    UTIL_GRID,
    BatchOption,
    batch_overrides,
    gpu_count_ladder,
)
from calculator.resolve.architectures import resolve_architectures
from calculator.resolve.inheritance import micro_batch
from calculator.resolve.roles import critic_strategy, need_critic

Tier = Literal["settings", "hardware", "workload"]


@dataclass(frozen=True)
class Lever:
    """One way out of an OOM: its id, title, tier, time-cost class and source."""

    lever: str
    title: str
    tier: Tier
    time_class: int  # 0 none, 1 small, 2 medium, 3 large (mechanism, used when there is no step time)
    source: str
    explanation: str
    changes_experiment: bool = False


_CHECKLIST = "seed 000 checklist"  # the OOM checklist of seeds/000 (a-f), in its priority order
# The levers: (id, title, tier, time class, source, why). Candidates are computed per scenario.
LEVERS: dict[str, Lever] = {
    lv.lever: lv
    for lv in (
        Lever("cap_max_model_len", "Cap vLLM max_model_len at prompt + response", "settings", 0, "verl",
              "verl 0.9 starts vLLM with max_model_len = max_position_embeddings when unset, and vLLM needs "
              "KV cache for one such sequence to start."),
        Lever("fused_kernels", "Fused kernels for log-prob and entropy", "settings", 0, "verl",
              "Log-probs and entropy in 512-token chunks: the full tokens x vocab logits never exist."),
        Lever("entropy_chunking", "Entropy in 2048-token chunks", "settings", 0, "verl",
              "entropy_from_logits allocates an fp32 tokens x vocab softmax; chunking bounds it at 2048 tokens."),
        Lever("entropy_checkpointing", "Recompute entropy in backward", "settings", 1, "verl",
              "update_actor keeps the fp32 softmax for backward unless entropy is checkpointed."),
        Lever("free_cache_engine", "Sleep the rollout engine after generation", "settings", 0, "verl",
              "free_cache_engine=false keeps vLLM weights and KV cache resident through training."),
        Lever("enforce_eager", "Disable vLLM CUDA graphs", "settings", 1, "verl",
              "CUDA-graph pools survive the engine's sleep and stay resident in every phase; eager decode is "
              "slower."),
        Lever("gpu_memory_utilization", "Lower rollout gpu_memory_utilization", "settings", 0, "verl",
              "vLLM takes util x total GPU memory beside the trainer's resident state (and needs that much free "
              "at startup); a smaller share leaves less KV cache, so fewer sequences decode at once."),
        Lever("rollout_tp", "Larger rollout tensor parallelism", "settings", 1, "verl",
              "Splits the rollout weights over more GPUs per replica: more KV cache at the same utilization, "
              "fewer replicas."),
        Lever("micro_batch", "Smaller micro-batches", "settings", 1, "seed 001 micro-batch sizing",
              "Activations and logits scale with the sequences in one micro-batch (log-prob passes too)."),
        Lever("token_budget", "Dynamic batch with a smaller token budget", "settings", 1, "verl",
              "use_dynamic_bsz packs each micro-batch up to ppo_max_token_len_per_gpu tokens (log-prob passes "
              "inherit it): memory follows the budget, not the longest sequences."),
        Lever("gradient_checkpointing", "Gradient checkpointing", "settings", 2, f"{_CHECKLIST} c)",
              "Keeps only each layer's input and recomputes the layer in backward (one extra forward)."),
        Lever("activation_offload", "Activation offload", "settings", 2, f"{_CHECKLIST} d)",
              "Checkpointed activations go to CPU; at most two layer groups stay on GPU."),
        Lever("optimizer_offload", "Offload the actor's optimizer state", "settings", 2, f"{_CHECKLIST} d)",
              "AdamW's 8 B/param/N go to CPU while the actor is idle (back for the update): frees the rollout "
              "and log-prob phases, not update_actor."),
        Lever("param_offload", "Offload the actor's parameters", "settings", 3, f"{_CHECKLIST} d)",
              "The fp32 shard (and grads) go to CPU while the actor is idle: frees the rollout phase and the "
              "vLLM startup check; PCIe copies every phase."),
        Lever("critic_optimizer_offload", "Offload the critic's optimizer state", "settings", 2,
              f"{_CHECKLIST} d)", "The critic's Adam state goes to CPU while the critic is idle."),
        Lever("critic_param_offload", "Offload the critic's parameters", "settings", 3, f"{_CHECKLIST} d)",
              "The critic's fp32 shard goes to CPU while the critic is idle."),
        Lever("offload_policy", "FSDP2 CPU offload policy", "settings", 3, f"{_CHECKLIST} e)",
              "CPUOffloadPolicy keeps params, grads and optimizer on CPU even during compute; AdamW runs on CPU."),
        Lever("full_shard", "Shard over all GPUs (fsdp_size=-1)", "settings", 1, f"{_CHECKLIST} e)",
              "HSDP replicates the state over groups; full sharding divides it by all GPUs."),
        Lever("no_sync_off", "Sharded gradient accumulation", "settings", 1, "verl",
              "use_no_sync_for_gradient_accumulation keeps unsharded fp32 grads (4 B/param, not divided)."),
        Lever("ulysses_sp", "Ulysses sequence parallelism", "settings", 2, "verl",
              "Splits each micro-batch's tokens over SP GPUs (all-to-all per attention layer)."),
        Lever("megatron_parallel", "More Megatron model parallelism (EP for MoE, TP, PP)", "settings", 1,
              "Megatron-core", "Megatron shards params, grads and activations over TP x PP (routed experts over "
              "EP x ETP x PP); data parallelism does not shrink them, only the optimizer. Raising EP, TP or PP "
              "divides the per-GPU state (at the cost of all-to-all, all-reduce or pipeline bubbles)."),
        Lever("more_gpus", "More GPUs of the same type", "hardware", 0, f"{_CHECKLIST} f)",
              "Training state is sharded over all GPUs (FSDP): per-GPU state falls as 1/N; the rollout "
              "engine's share does not change."),
        Lever("smaller_rollout_batch", "Fewer prompts per step", "workload", 0, f"{_CHECKLIST} a)",
              "Fewer sequences per step. In verl memory follows micro-batches, not the batch, so this mostly "
              "shortens the step.", True),
        Lever("fewer_responses", "Fewer responses per prompt (rollout.n)", "workload", 0, f"{_CHECKLIST} a)",
              "Group size n multiplies the sequences per step (seed 000, pitfall 2).", True),
        Lever("shorter_responses", "Shorter responses", "workload", 0, f"{_CHECKLIST} b)",
              "KV cache, activations and logits all scale with sequence length.", True),
        Lever("shorter_prompts", "Shorter prompts", "workload", 0, f"{_CHECKLIST} b)",
              "KV cache, activations and logits all scale with sequence length.", True),
        Lever("lora", f"LoRA (rank {LORA_RANK}) instead of full fine-tuning", "workload", 0, "verl",
              "Trains adapters only: no full-size grads or Adam state, no separate reference model.", True),
    )
}  # fmt: skip


Change = dict[str, Any]  # native dotted field -> new value


def _seq_len(s: Scenario) -> int:
    return s.data.max_prompt_length + s.data.max_response_length


@dataclass(frozen=True)
class _Scope:
    """What the candidates of one scenario depend on, resolved once."""

    s: Scenario
    arch: Architecture
    max_gpus: int
    critic: bool
    megatron: bool

    def with_critic(self, change: Change, critic_key: str) -> Change:
        """The same change for the critic too, when there is one."""
        return {**change, critic_key: next(iter(change.values()))} if self.critic else change


def _switch(applies: Callable[[_Scope], bool], change: Change) -> Callable[[_Scope], list[Change]]:
    """A lever with one candidate, ``change``, where ``applies``."""
    return lambda c: [dict(change)] if applies(c) else []


# ---- settings: same experiment, same GPUs


def _cap_max_model_len(c: _Scope) -> list[Change]:
    if c.s.rollout.max_model_len is None and c.arch.max_position_embeddings > _seq_len(c.s):
        return [{"rollout.max_model_len": _seq_len(c.s)}]
    return []


def _lower_utilization(c: _Scope) -> list[Change]:
    util = c.s.rollout.gpu_memory_utilization
    return [{"rollout.gpu_memory_utilization": u} for u in sorted(UTIL_GRID, reverse=True) if u < util]


def _larger_rollout_tp(c: _Scope) -> list[Change]:
    r, g = c.s.rollout, c.s.hardware.num_gpus
    return [
        {"rollout.tensor_model_parallel_size": t}
        for t in ROLLOUT_TP_CHOICES
        if r.tensor_model_parallel_size < t <= c.s.hardware.gpus_per_node
        and g % (t * r.data_parallel_size) == 0
        and c.arch.num_attention_heads % t == 0
    ]


def _smaller_micro_batch(c: _Scope) -> list[Change]:
    a = c.s.actor
    micro = micro_batch(c.s, "actor.ppo_micro_batch_size_per_gpu")
    if a.use_dynamic_bsz or micro <= 1:
        return []
    return [batch_overrides(c.s, BatchOption("fixed", micro >> i)) for i in range(1, micro.bit_length())]


def _smaller_token_budget(c: _Scope) -> list[Change]:
    a, d = c.s.actor, c.s.data
    micro = micro_batch(c.s, "actor.ppo_micro_batch_size_per_gpu")
    mean_len = (d.mean_prompt_length or d.max_prompt_length) + (d.mean_response_length or d.max_response_length)
    current = a.ppo_max_token_len_per_gpu if a.use_dynamic_bsz else micro * mean_len
    sp = a.ulysses_sequence_parallel_size
    return [
        batch_overrides(c.s, BatchOption("dynamic", t))
        for t in TOKEN_BUDGETS
        if t < current and t * sp >= _seq_len(c.s)
    ]


def _gradient_checkpointing(c: _Scope) -> list[Change]:
    if c.megatron or c.s.model.enable_gradient_checkpointing:
        return []
    return [c.with_critic({"model.enable_gradient_checkpointing": True}, "critic.enable_gradient_checkpointing")]


def _actor_offload(what: str) -> Callable[[_Scope], list[Change]]:
    """Offload the actor's ``what`` (``optimizer_offload`` / ``param_offload``) in its engine's section."""

    def candidates(c: _Scope) -> list[Change]:
        key, section = (
            ("actor.megatron", c.s.actor.megatron) if c.megatron else ("actor.fsdp_config", c.s.actor.fsdp_config)
        )
        return [] if getattr(section, what) else [{f"{key}.{what}": True}]

    return candidates


def _critic_offload(what: str) -> Callable[[_Scope], list[Change]]:
    """Offload the critic's ``what`` (FSDP critics only)."""

    def candidates(c: _Scope) -> list[Change]:
        fsdp_critic = c.critic and critic_strategy(c.s) is not Strategy.MEGATRON
        return [{f"critic.fsdp.{what}": True}] if fsdp_critic and not getattr(c.s.critic.fsdp, what) else []

    return candidates


def _full_shard(c: _Scope) -> list[Change]:
    if c.megatron or (c.s.actor.fsdp_config.fsdp_size <= 0 and c.s.critic.fsdp.fsdp_size <= 0):
        return []
    return [c.with_critic({"actor.fsdp_config.fsdp_size": -1}, "critic.fsdp.fsdp_size")]


def _ulysses_sp(c: _Scope) -> list[Change]:
    if not c.s.model.use_remove_padding or c.megatron:
        return []
    sp, g = c.s.actor.ulysses_sequence_parallel_size, c.s.hardware.num_gpus
    return [
        c.with_critic({"actor.ulysses_sequence_parallel_size": x}, "critic.ulysses_sequence_parallel_size")
        for x in ULYSSES_SP_CHOICES
        if sp < x <= c.s.hardware.gpus_per_node and g % x == 0 and c.arch.num_attention_heads % x == 0
    ]


_POWERS = (2, 4, 8, 16, 32, 64)  # model-parallel sizes tried


def _megatron_parallel(c: _Scope) -> list[Change]:
    """The next two EP, TP and PP sizes above the actor's, each alone, that Megatron-core accepts on the scenario's
    GPUs (``calculator.planning.layouts.layout_problem``: heads, layers, experts, the world divisible by
    TP x PP x CP and by ETP x EP x PP)."""
    if not c.megatron:
        return []
    own = layout_of(c.s)
    per_node, g = c.s.hardware.gpus_per_node, c.s.hardware.num_gpus
    out: list[Change] = []
    for field, attr in (("expert_model_parallel_size", "ep"), ("tensor_model_parallel_size", "tp"),
                        ("pipeline_model_parallel_size", "pp")):  # fmt: skip
        sizes = [
            x
            for x in _POWERS
            if x > getattr(own, attr)
            and layout_problem(replace(own, **{attr: x}), c.arch, per_node, c.s.actor.megatron, num_gpus=g) is None
        ]
        critic = critic_follows_actor(c.s)  # a critic with the actor's layout moves with it, as in the planner
        out += [{f"actor.megatron.{field}": x} | ({f"critic.megatron.{field}": x} if critic else {}) for x in sizes[:2]]
    return out


# ---- hardware: same experiment, more GPUs


def _more_gpus(c: _Scope) -> list[Change]:
    g = c.s.hardware.num_gpus
    return [{"hardware.num_gpus": n} for n in gpu_count_ladder(c.s.hardware.gpus_per_node, c.max_gpus) if n > g]


# ---- workload: a different experiment


def _smaller_rollout_batch(c: _Scope) -> list[Change]:
    d, tb = c.s.data, c.s.data.train_batch_size
    return [
        {"data.train_batch_size": x, "actor.ppo_mini_batch_size": min(c.s.actor.ppo_mini_batch_size, x)}
        | ({"data.gen_batch_size": max(x, d.gen_batch_size * x // tb)} if d.gen_batch_size is not None else {})
        for x in (tb // 2, tb // 4)
        if x >= 1
    ]


def _fewer_responses(c: _Scope) -> list[Change]:
    n = c.s.rollout.n
    low_n = 2 if c.s.algorithm.adv_estimator in GROUP_ESTIMATORS else 1
    return [{"rollout.n": x} for x in dict.fromkeys((n // 2, n // 4)) if low_n <= x < n]


def _shorter(kind: str) -> Callable[[_Scope], list[Change]]:
    """Halve and quarter ``data.max_{kind}_length`` (and a mean above the new maximum)."""

    def candidates(c: _Scope) -> list[Change]:
        top, mean = getattr(c.s.data, f"max_{kind}_length"), getattr(c.s.data, f"mean_{kind}_length")
        return [
            {f"data.max_{kind}_length": x} | ({f"data.mean_{kind}_length": x} if mean is not None and mean > x else {})
            for x in (top // 2, top // 4)
            if x >= 1
        ]

    return candidates


# Every lever's candidates, by lever id (``lever_candidates`` lists them in ``LEVERS`` order).
_CANDIDATES: dict[str, Callable[[_Scope], list[Change]]] = {
    "cap_max_model_len": _cap_max_model_len,
    "fused_kernels": _switch(lambda c: not c.s.model.use_fused_kernels, {"model.use_fused_kernels": True}),
    "entropy_chunking": _switch(
        lambda c: not c.s.actor.entropy_from_logits_with_chunking, {"actor.entropy_from_logits_with_chunking": True}
    ),
    "entropy_checkpointing": _switch(
        lambda c: (c.s.actor.entropy_coeff != 0 or c.s.actor.calculate_entropy) and not c.s.actor.entropy_checkpointing,
        {"actor.entropy_checkpointing": True},
    ),
    "free_cache_engine": _switch(lambda c: not c.s.rollout.free_cache_engine, {"rollout.free_cache_engine": True}),
    "enforce_eager": _switch(
        lambda c: c.s.rollout.name == "vllm" and not c.s.rollout.enforce_eager, {"rollout.enforce_eager": True}
    ),
    "gpu_memory_utilization": _lower_utilization,
    "rollout_tp": _larger_rollout_tp,
    "micro_batch": _smaller_micro_batch,
    "token_budget": _smaller_token_budget,
    "gradient_checkpointing": _gradient_checkpointing,
    "activation_offload": _switch(
        lambda c: not c.megatron and not c.s.model.enable_activation_offload, {"model.enable_activation_offload": True}
    ),
    "optimizer_offload": _actor_offload("optimizer_offload"),
    "param_offload": _actor_offload("param_offload"),
    "critic_optimizer_offload": _critic_offload("optimizer_offload"),
    "critic_param_offload": _critic_offload("param_offload"),
    "offload_policy": _switch(
        lambda c: c.s.actor.strategy == "fsdp2" and not c.s.actor.fsdp_config.offload_policy,
        {"actor.fsdp_config.offload_policy": True},
    ),
    "full_shard": _full_shard,
    "no_sync_off": _switch(
        lambda c: not c.megatron and c.s.actor.fsdp_config.use_no_sync_for_gradient_accumulation,
        {"actor.fsdp_config.use_no_sync_for_gradient_accumulation": False},
    ),
    "ulysses_sp": _ulysses_sp,
    "megatron_parallel": _megatron_parallel,
    "more_gpus": _more_gpus,
    "smaller_rollout_batch": _smaller_rollout_batch,
    "fewer_responses": _fewer_responses,
    "shorter_responses": _shorter("response"),
    "shorter_prompts": _shorter("prompt"),
    "lora": _switch(lambda c: c.s.model.lora_rank == 0, {"model.lora_rank": LORA_RANK}),
}


def lever_candidates(s: Scenario, max_gpus: int) -> dict[str, list[Change]]:
    """Candidate changes (native dotted fields, mildest first) of every lever that applies to ``s``."""
    scope = _Scope(
        s=s,
        arch=resolve_architectures(s)[0],
        max_gpus=max_gpus,
        critic=need_critic(s),
        megatron=s.actor.strategy == "megatron",
    )
    out: dict[str, list[Change]] = {}
    for lever in LEVERS:
        found = _CANDIDATES[lever](scope)
        if found:
            out[lever] = found
    return out
