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

from dataclasses import dataclass
from typing import Any, Literal

from calculator.inputs.scenario import GROUP_ESTIMATORS, Scenario
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
from calculator.resolve.roles import need_critic

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


def _seq_len(s: Scenario) -> int:
    return s.data.max_prompt_length + s.data.max_response_length


def lever_candidates(s: Scenario, max_gpus: int) -> dict[str, list[dict[str, Any]]]:
    """Candidate changes (native dotted fields, mildest first) of every lever that applies to ``s``."""
    arch = resolve_architectures(s)[0]
    a, r, m, d = s.actor, s.rollout, s.model, s.data
    g, per_node = s.hardware.num_gpus, s.hardware.gpus_per_node
    critic = need_critic(s)
    megatron = a.strategy == "megatron"
    off_key = "actor.megatron" if megatron else "actor.fsdp_config"
    off = a.megatron if megatron else a.fsdp_config
    sp = a.ulysses_sequence_parallel_size
    out: dict[str, list[dict[str, Any]]] = {}

    def with_critic(change: dict[str, Any], critic_key: str) -> dict[str, Any]:
        return {**change, critic_key: next(iter(change.values()))} if critic else change

    # settings: same experiment, same GPUs
    if r.max_model_len is None and arch.max_position_embeddings > _seq_len(s):
        out["cap_max_model_len"] = [{"rollout.max_model_len": _seq_len(s)}]
    if not m.use_fused_kernels:
        out["fused_kernels"] = [{"model.use_fused_kernels": True}]
    if not a.entropy_from_logits_with_chunking:
        out["entropy_chunking"] = [{"actor.entropy_from_logits_with_chunking": True}]
    if (a.entropy_coeff != 0 or a.calculate_entropy) and not a.entropy_checkpointing:
        out["entropy_checkpointing"] = [{"actor.entropy_checkpointing": True}]
    if not r.free_cache_engine:
        out["free_cache_engine"] = [{"rollout.free_cache_engine": True}]
    if r.name == "vllm" and not r.enforce_eager:
        out["enforce_eager"] = [{"rollout.enforce_eager": True}]
    out["gpu_memory_utilization"] = [
        {"rollout.gpu_memory_utilization": u} for u in sorted(UTIL_GRID, reverse=True) if u < r.gpu_memory_utilization
    ]
    out["rollout_tp"] = [
        {"rollout.tensor_model_parallel_size": t}
        for t in ROLLOUT_TP_CHOICES
        if r.tensor_model_parallel_size < t <= per_node
        and g % (t * r.data_parallel_size) == 0
        and arch.num_attention_heads % t == 0
    ]
    micro = a.ppo_micro_batch_size_per_gpu or 1
    if not a.use_dynamic_bsz and micro > 1:
        sizes = [micro >> i for i in range(1, micro.bit_length())]
        out["micro_batch"] = [batch_overrides(s, BatchOption("fixed", x)) for x in sizes]
    mean_len = (d.mean_prompt_length or d.max_prompt_length) + (d.mean_response_length or d.max_response_length)
    current = a.ppo_max_token_len_per_gpu if a.use_dynamic_bsz else micro * mean_len
    out["token_budget"] = [
        batch_overrides(s, BatchOption("dynamic", t)) for t in TOKEN_BUDGETS if t < current and t * sp >= _seq_len(s)
    ]
    if not megatron:
        if not m.enable_gradient_checkpointing:
            out["gradient_checkpointing"] = [
                with_critic({"model.enable_gradient_checkpointing": True}, "critic.enable_gradient_checkpointing")
            ]
        if not m.enable_activation_offload:
            out["activation_offload"] = [{"model.enable_activation_offload": True}]
    if not off.optimizer_offload:
        out["optimizer_offload"] = [{f"{off_key}.optimizer_offload": True}]
    if not off.param_offload:
        out["param_offload"] = [{f"{off_key}.param_offload": True}]
    if critic and (s.critic.strategy or a.strategy) != "megatron":
        for what in ("optimizer_offload", "param_offload"):
            if not getattr(s.critic.fsdp, what):
                out[f"critic_{what}"] = [{f"critic.fsdp.{what}": True}]
    if a.strategy == "fsdp2" and not a.fsdp_config.offload_policy:
        out["offload_policy"] = [{"actor.fsdp_config.offload_policy": True}]
    if not megatron and (a.fsdp_config.fsdp_size > 0 or s.critic.fsdp.fsdp_size > 0):
        out["full_shard"] = [with_critic({"actor.fsdp_config.fsdp_size": -1}, "critic.fsdp.fsdp_size")]
    if not megatron and a.fsdp_config.use_no_sync_for_gradient_accumulation:
        out["no_sync_off"] = [{"actor.fsdp_config.use_no_sync_for_gradient_accumulation": False}]
    if m.use_remove_padding and not megatron:
        out["ulysses_sp"] = [
            with_critic({"actor.ulysses_sequence_parallel_size": x}, "critic.ulysses_sequence_parallel_size")
            for x in ULYSSES_SP_CHOICES
            if sp < x <= per_node and g % x == 0 and arch.num_attention_heads % x == 0
        ]
    # hardware: same experiment, more GPUs
    out["more_gpus"] = [{"hardware.num_gpus": c} for c in gpu_count_ladder(per_node, max_gpus) if c > g]
    # workload: a different experiment
    tb = d.train_batch_size
    out["smaller_rollout_batch"] = [
        {"data.train_batch_size": x, "actor.ppo_mini_batch_size": min(a.ppo_mini_batch_size, x)}
        | ({"data.gen_batch_size": max(x, d.gen_batch_size * x // tb)} if d.gen_batch_size is not None else {})
        for x in (tb // 2, tb // 4)
        if x >= 1
    ]
    low_n = 2 if s.algorithm.adv_estimator in GROUP_ESTIMATORS else 1
    out["fewer_responses"] = [{"rollout.n": x} for x in dict.fromkeys((r.n // 2, r.n // 4)) if low_n <= x < r.n]
    for kind in ("response", "prompt"):
        top, mean = getattr(d, f"max_{kind}_length"), getattr(d, f"mean_{kind}_length")
        out[f"shorter_{kind}s"] = [
            {f"data.max_{kind}_length": x} | ({f"data.mean_{kind}_length": x} if mean is not None and mean > x else {})
            for x in (top // 2, top // 4)
            if x >= 1
        ]
    if m.lora_rank == 0:
        out["lora"] = [{"model.lora_rank": LORA_RANK}]
    return {k: v for k, v in out.items() if v}
