"""Parallelism rules: rollout TP / DP / EP against the GPUs and the model's heads, Ulysses SP, Megatron.

The rollout engine shards attention heads over its tensor-parallel size (vLLM
``config/model.py`` ``ModelConfig.verify_with_parallel_config``; vLLM / SGLang ``QKVParallelLinear``);
verl 0.9.1 splits heads over Ulysses SP ranks (``models/transformers/monkey_patch.py``), builds its
device meshes from the world size (``workers/engine/fsdp/transformer_impl.py``,
``workers/rollout/replica.py``), and Megatron-LM's ``initialize_model_parallel`` needs the world size to
divide by TP x PP x CP. Each rule quotes its location.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from calculator.inputs.scenario import Scenario
from calculator.model.megatron_activations import stage_layers
from calculator.resolve.architectures import resolve_architectures
from calculator.resolve.versions import behaviour
from calculator.verl.checks.problem import (
    SRC_HEADS_SGLANG,
    SRC_HEADS_VLLM,
    SRC_INIT,
    SRC_ULYSSES_HEADS,
    SRC_ULYSSES_RMPAD,
    ConfigProblem,
    _p,
)
from calculator.verl.checks.resolved import (
    _actor_sp,
    _critic_sp,
    _critic_strategy,
    _megatron_mp,
    _ref_sp,
    need_critic,
    need_ref,
)

if TYPE_CHECKING:
    from calculator.inputs.backends import MegatronSection
    from calculator.model.architecture import Architecture


def _arch(s: Scenario) -> Architecture | None:
    try:
        return resolve_architectures(s)[0]
    except Exception:  # unknown model: checked elsewhere (load_scenario)
        return None


def _rollout_world_rules(s: Scenario) -> list[ConfigProblem]:
    """Rollout TP x DP (and EP) against the GPUs and the nodes."""
    out: list[ConfigProblem] = []
    g = s.hardware.num_gpus
    r = s.rollout
    tp, rdp = r.tensor_model_parallel_size, r.data_parallel_size
    world = tp * rdp
    if g % world:
        out.append(
            _p(
                "rollout_tp_gpus",
                "error",
                f"rollout world_size: {g} is not divisible by infer_world_size: {world} "
                "(rollout.tensor_model_parallel_size x data_parallel_size). Pick a rollout TP that divides the GPU count.",
                SRC_INIT,
            )
        )
    per_node = min(g, s.hardware.gpus_per_node)
    if world > per_node and world % per_node:
        out.append(
            _p(
                "rollout_replica_nodes",
                "error",
                f"world_size {world} must be divisible by gpus_per_node {per_node}: a rollout replica larger than a "
                "node must span whole nodes.",
                "verl/workers/rollout/replica.py:RolloutReplica.__init__",
            )
        )
    if r.name == "vllm" and rdp > 1 and per_node % tp:
        out.append(
            _p(
                "rollout_replica_nodes",
                "error",
                "gpus_per_node should be divisible by tensor_model_parallel_size (vLLM with rollout.data_parallel_size > 1).",
                "verl/workers/rollout/vllm_rollout/vllm_async_server.py:vLLMHttpServer.launch_server",
            )
        )
    if r.expert_parallel_size > 1 and r.expert_parallel_size != world:
        out.append(
            _p(
                "rollout_ep",
                "error",
                "expert_parallel_size must be equal to tensor_model_parallel_size * data_parallel_size "
                f"(rollout EP {r.expert_parallel_size}, TP x DP {world}).",
                "verl/workers/config/rollout.py:RolloutConfig.__post_init__",
            )
        )
    return out


def _rollout_tp_heads_rule(s: Scenario, arch: Architecture) -> list[ConfigProblem]:
    """The engine shards attention heads (and KV heads, or replicates them) over rollout TP."""
    r = s.rollout
    tp = r.tensor_model_parallel_size
    src = SRC_HEADS_VLLM if r.name == "vllm" else SRC_HEADS_SGLANG
    heads, kv = arch.num_attention_heads, arch.num_kv_heads
    out: list[ConfigProblem] = []
    if heads % tp:
        out.append(
            _p(
                "rollout_tp_heads",
                "error",
                f"Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp}): "
                f"the {r.name} engine cannot shard this model over rollout TP {tp}. Pick a TP that divides {heads}.",
                src,
            )
        )
    elif not arch.kv_lora_rank and kv % tp and tp % kv:
        out.append(
            _p(
                "rollout_tp_heads",
                "error",
                f"{kv} KV heads cannot be split over or replicated across rollout TP {tp} (QKVParallelLinear needs "
                f"num_kv_heads % tp == 0 or tp % num_kv_heads == 0: divide() raises '{kv} is not divisible by {tp}' "
                f"or '{tp} is not divisible by {kv}').",
                src,
            )
        )
    return out


def _ulysses_heads_rules(s: Scenario, arch: Architecture) -> list[ConfigProblem]:
    """Ulysses SP: attention heads split over SP ranks (actor, ref, critic)."""
    heads, kv = arch.num_attention_heads, arch.num_kv_heads
    out: list[ConfigProblem] = []
    for role, sp, on in (
        ("actor", _actor_sp(s), True),
        ("ref", _ref_sp(s), need_ref(s) and s.model.lora_rank == 0),
        ("critic", _critic_sp(s), need_critic(s)),
    ):
        if not on or sp <= 1:
            continue
        if heads % sp:
            out.append(
                _p(
                    "ulysses_heads",
                    "error",
                    f"num_attention_heads {heads} must be divisible by ulysses_sp_size {sp} ({role} Ulysses sequence "
                    "parallel size).",
                    SRC_ULYSSES_HEADS,
                )
            )
        elif kv % sp and sp % kv:
            out.append(
                _p(
                    "ulysses_heads",
                    "error",
                    f"num_key_value_heads {kv} must be divisible by ulysses_sp_size {sp}or vise versa ({role} Ulysses "
                    "sequence parallel size).",
                    SRC_ULYSSES_HEADS,
                )
            )
    return out


def _max_model_len_rule(s: Scenario, arch: Architecture) -> list[ConfigProblem]:
    """From verl 0.7.1 a rollout.max_model_len above the model's max_position_embeddings is a startup error
    (0.7.1 vllm_async_server.py:114-119; 0.9.1 vLLMHttpServer._validate_configs); 0.7.0 ignores the value and
    0.5/0.6 (sync SPMD) pass it to vLLM (calculator/resolve/versions.py max_model_len_rule)."""
    set_len, limit = s.rollout.max_model_len, arch.max_position_embeddings
    if set_len is None or set_len <= limit or behaviour(s.verl_version).max_model_len_rule != "set_or_max_position":
        return []
    return [
        _p(
            "max_model_len_above_max_position",
            "error",
            f"max_model_len ({set_len}) should be less than or equal to max_position_embeddings ({limit})",
            "verl/workers/rollout/vllm_rollout/vllm_async_server.py:vLLMHttpServer._validate_configs",
        )
    ]


def _heads_rules(s: Scenario, arch: Architecture | None) -> list[ConfigProblem]:
    """Rollout world size and node rules, then (with a known model) heads over rollout TP and Ulysses SP."""
    out = _rollout_world_rules(s)
    if arch is None:
        return out
    return out + _rollout_tp_heads_rule(s, arch) + _ulysses_heads_rules(s, arch) + _max_model_len_rule(s, arch)


def _layer_split_rule(s: Scenario, role: str, m: MegatronSection) -> list[ConfigProblem]:
    """Megatron-core builds each pipeline stage's layers as ``pipeline_stage_layers`` says, or asserts."""
    arch = _arch(s) if role == "actor" or not s.critic.model_path else None
    if arch is None:
        return []
    split = stage_layers(arch.num_layers, m)
    if not isinstance(split, str):
        return []
    return [
        _p(
            "megatron_layer_split",
            "error",
            f"{role}: {split}: Megatron-core cannot split the model's {arch.num_layers} layers over "
            f"{m.pipeline_model_parallel_size} pipeline stages ('num_layers should be divisible by "
            "pipeline_model_parallel_size'). Set override_transformer_config.num_layers_in_first/"
            "last_pipeline_stage or account_for_embedding/loss_in_pipeline_split so that they divide.",
            "megatron/core/transformer/transformer_block.py:get_num_layers_to_build (megatron-core 0.16.1)",
        )
    ]


def _parallel_rules(s: Scenario) -> list[ConfigProblem]:
    out: list[ConfigProblem] = []
    g = s.hardware.num_gpus
    for role, sp, on in (
        ("actor", _actor_sp(s), True),
        ("ref", _ref_sp(s), need_ref(s)),
        ("critic", _critic_sp(s), need_critic(s)),
    ):
        if not on or sp <= 1:
            continue
        if not s.model.use_remove_padding:
            out.append(
                _p(
                    "ulysses_remove_padding",
                    "error",
                    f"When using sequence parallelism for actor/ref policy, you must enable `use_remove_padding`. "
                    f"({role} Ulysses SP {sp}; set model.use_remove_padding=true.)",
                    SRC_ULYSSES_RMPAD,
                )
            )
        if g % sp:
            out.append(
                _p(
                    "ulysses_world",
                    "error",
                    f"{role} Ulysses SP {sp} does not divide the {g} GPUs: the engine builds a (dp, sp) device mesh "
                    f"of world_size // sp x sp.",
                    "verl/workers/engine/fsdp/transformer_impl.py:FSDPEngine._init_device_mesh",
                )
            )
    if s.actor.strategy == "megatron" and s.model.lora_rank and not behaviour(s.verl_version).megatron_lora:
        out.append(
            _p(
                "megatron_lora_release",
                "warning",
                f"verl {s.verl_version} has no Megatron LoRA (model.lora arrived in 0.7.0): its Megatron engine "
                "trains every parameter. The estimate shows LoRA as verl >= 0.7 runs it; pick verl_version 0.7.0 or "
                "later, the FSDP engine, or model.lora_rank=0 for the full fine-tune this release would run.",
                "verl/workers/config/megatron_peft.py:get_peft_cls (0.7.0+)",
            )
        )
    for role, on, strat, m in (
        ("actor", True, s.actor.strategy, s.actor.megatron),
        ("critic", need_critic(s), _critic_strategy(s), s.critic.megatron),
    ):
        if not on or strat != "megatron":
            continue
        mp = _megatron_mp(m)
        if g % mp:
            out.append(
                _p(
                    "megatron_world_size",
                    "error",
                    f"{role}: world size {g} is not divisible by tensor_model_parallel_size ({m.tensor_model_parallel_size})"
                    f" x pipeline_model_parallel_size ({m.pipeline_model_parallel_size}) x context_parallel_size "
                    f"({m.context_parallel_size}) = {mp}.",
                    "megatron/core/parallel_state.py:initialize_model_parallel (Megatron-LM, called by verl's "
                    "Megatron engine); verl/utils/config.py:validate_config for the actor",
                )
            )
        out += _layer_split_rule(s, role, m)
        etp = m.expert_tensor_parallel_size or m.tensor_model_parallel_size
        emp = etp * m.expert_model_parallel_size * m.pipeline_model_parallel_size
        if m.expert_model_parallel_size > 1 and g % emp:
            out.append(
                _p(
                    "megatron_world_size",
                    "error",
                    f"{role}: world size {g} is not divisible by expert_tensor_parallel_size ({etp}) x "
                    f"expert_model_parallel_size ({m.expert_model_parallel_size}) x pipeline_model_parallel_size "
                    f"({m.pipeline_model_parallel_size}) = {emp}.",
                    "megatron/core/parallel_state.py:initialize_model_parallel (Megatron-LM)",
                )
            )
    return out
