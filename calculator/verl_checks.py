"""verl 0.9.1's own configuration checks, run before launch.

Each rule reproduces a check verl (or the inference engine it starts) makes at config time or at the
first step, with the message verl prints, a fix, and the source location in the verl 0.9.1 wheel
(``pip download --no-deps verl==0.9.1``; paths relative to the ``verl/`` package). Rules verl does not
have but whose outcome is certain (GRPO-style estimators with n = 1, critic settings without a critic)
are warnings and say so.

``check_config(scenario)`` works on a Scenario. ``check_raw_config`` works on the raw verl keys of an
imported launch script, for what the Scenario cannot express (the deprecated global micro-batch keys).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from calculator.batching import CRITIC_V1_TOKEN_BUDGET
from calculator.scenario import Scenario

if TYPE_CHECKING:
    from calculator.architecture import Architecture

Severity = Literal["error", "warning"]

# verl 0.9.1 CriticConfig.ppo_infer_max_token_len_per_gpu (workers/config/critic.py): a dataclass field,
# not in the YAML; the V1 trainer uses it as the critic engine's token budget.
# vllm_rollout/utils.py get_vllm_max_lora_rank fallback list (vllm.config.lora.MaxLoRARanks).
VLLM_MAX_LORA_RANK = 512

GROUP_ESTIMATORS_FALLBACK = (
    "grpo",
    "grpo_vectorized",
    "rloo",
    "opo",
    "gpg",
    "reinforce_plus_plus_baseline",
    "optimal_token_baseline",
)


class ConfigProblem(BaseModel):
    """One problem verl would raise (error) or a setting that silently does not do what it says (warning)."""

    model_config = ConfigDict(frozen=True)

    rule: str
    severity: Severity
    message: str
    source: str


def _p(rule: str, severity: Severity, message: str, source: str) -> ConfigProblem:
    return ConfigProblem(rule=rule, severity=severity, message=f"{message} [{source}]", source=source)


# --------------------------------------------------------------------------------------------------
# Resolved settings (verl's interpolations and rlplan's "inherit" Nones)


def need_critic(s: Scenario) -> bool:
    """verl trainer/ppo/utils.py need_critic."""
    return s.critic.enable if s.critic.enable is not None else s.algorithm.adv_estimator == "gae"


def need_ref(s: Scenario) -> bool:
    """verl trainer/ppo/utils.py need_reference_policy (with LoRA the ref is the actor without adapters)."""
    return s.algorithm.use_kl_in_reward or s.actor.use_kl_loss


def _rollout_dynamic(s: Scenario) -> bool:
    r = s.rollout.log_prob_use_dynamic_bsz
    return s.actor.use_dynamic_bsz if r is None else r


def _ref_dynamic(s: Scenario) -> bool:
    r = s.ref.log_prob_use_dynamic_bsz
    return s.actor.use_dynamic_bsz if r is None else r


def _critic_dynamic_config(s: Scenario) -> bool:
    c = s.critic.use_dynamic_bsz
    return s.actor.use_dynamic_bsz if c is None else c


def _actor_sp(s: Scenario) -> int:
    return 1 if s.actor.strategy == "megatron" else s.actor.ulysses_sequence_parallel_size


def _ref_sp(s: Scenario) -> int:
    if s.actor.strategy == "megatron":
        return 1
    return s.ref.ulysses_sequence_parallel_size or s.actor.ulysses_sequence_parallel_size


def _critic_strategy(s: Scenario) -> str:
    return s.critic.strategy or s.actor.strategy


def _critic_sp(s: Scenario) -> int:
    return 1 if _critic_strategy(s) == "megatron" else s.critic.ulysses_sequence_parallel_size


def _megatron_mp(m: Any) -> int:
    return m.tensor_model_parallel_size * m.pipeline_model_parallel_size * m.context_parallel_size


def actor_dp(s: Scenario) -> int:
    """Data-parallel size of the actor engine (FSDP: world / Ulysses SP; Megatron: world / (TP*PP*CP))."""
    g = s.hardware.num_gpus
    if s.actor.strategy == "megatron":
        return max(1, g // _megatron_mp(s.actor.megatron))
    return max(1, g // _actor_sp(s))


def critic_dp(s: Scenario) -> int:
    g = s.hardware.num_gpus
    if _critic_strategy(s) == "megatron":
        return max(1, g // _megatron_mp(s.critic.megatron))
    return max(1, g // _critic_sp(s))


def padded_batch(s: Scenario) -> int:
    """Sequences after the V1 trainer pads the batch: a multiple of lcm(actor DP, actor mini-batch x n
    [, critic mini-batch x n]) (trainer/ppo/v1/trainer_base.py _get_required_batch_multiple, _balance_batch)."""
    n = s.rollout.n
    multiple = math.lcm(actor_dp(s), s.actor.ppo_mini_batch_size * n)
    if need_critic(s):
        multiple = math.lcm(multiple, (s.critic.ppo_mini_batch_size or s.actor.ppo_mini_batch_size) * n)
    total = s.data.train_batch_size * n
    return -(-total // multiple) * multiple


# --------------------------------------------------------------------------------------------------
# Rules on a Scenario

SRC_VALIDATE = "verl/utils/config.py:validate_config"
SRC_ACTOR_POST = "verl/workers/config/actor.py:ActorConfig.__post_init__"
SRC_ACTOR_VALIDATE = "verl/workers/config/actor.py:ActorConfig.validate"
SRC_CRITIC_POST = "verl/workers/config/critic.py:CriticConfig.__post_init__"
SRC_CRITIC_VALIDATE = "verl/workers/config/critic.py:CriticConfig.validate"
SRC_MINI = "verl/workers/engine_workers.py:TrainingWorker.train_mini_batch"
SRC_MICRO = "verl/workers/engine/utils.py:prepare_micro_batches"
SRC_INIT = "verl/workers/engine_workers.py:ActorRolloutRefWorker.init_model"
SRC_SEQLEN = "verl/utils/seqlen_balancing.py:rearrange_micro_batches"
SRC_HEADS_VLLM = (
    "vllm/config/model.py:ModelConfig.verify_with_parallel_config; "
    "vllm/model_executor/layers/linear.py:QKVParallelLinear.__init__"
)
SRC_HEADS_SGLANG = "sglang/srt/layers/linear.py:QKVParallelLinear.__init__"
SRC_ULYSSES_HEADS = "verl/models/transformers/monkey_patch.py:apply_monkey_patch"
SRC_ULYSSES_RMPAD = "verl/workers/config/actor.py:FSDPActorConfig.validate; verl/workers/engine/fsdp/transformer_impl.py:FSDPEngine.__init__"


def _batch_rules(s: Scenario) -> list[ConfigProblem]:
    out: list[ConfigProblem] = []
    g = s.hardware.num_gpus
    n = s.rollout.n
    a = s.actor
    tb = s.data.train_batch_size

    # validate_config: real_train_batch_size % minimal_bsz (only without dynamic batch size)
    if not a.use_dynamic_bsz:
        if a.strategy == "megatron":
            m = a.megatron
            mp = _megatron_mp(m)
            if g % mp:
                out.append(
                    _p(
                        "megatron_world_size",
                        "error",
                        f"n_gpus ({g}) must be divisible by model_parallel_size "
                        f"({m.tensor_model_parallel_size * m.pipeline_model_parallel_size}) times "
                        f"context_parallel_size ({m.context_parallel_size}). Change the GPU count or "
                        "actor.megatron tensor/pipeline/context parallel sizes.",
                        SRC_VALIDATE,
                    )
                )
            minimal = (g // mp) * (a.ppo_micro_batch_size_per_gpu or 1)
        else:
            minimal = g
        if minimal and (tb * n) % minimal:
            out.append(
                _p(
                    "real_train_batch_size",
                    "error",
                    f"real_train_batch_size ({tb * n}) must be divisible by minimal possible batch size ({minimal}). "
                    f"data.train_batch_size x rollout.n ({tb} x {n}) must be a multiple of "
                    + ("the GPU count" if a.strategy != "megatron" else "Megatron DP x ppo_micro_batch_size_per_gpu")
                    + ": change data.train_batch_size, rollout.n or the GPU count.",
                    SRC_VALIDATE,
                )
            )
        if tb < a.ppo_mini_batch_size:
            out.append(
                _p(
                    "train_batch_ge_mini",
                    "error",
                    f"train_batch_size ({tb}) must be >= actor.ppo_mini_batch_size ({a.ppo_mini_batch_size}). "
                    "Lower actor.ppo_mini_batch_size.",
                    SRC_ACTOR_VALIDATE,
                )
            )

    # the trainer asks for ppo_mini_batch_size x n sequences per mini-batch; each DP rank takes 1/dp of it
    dp = actor_dp(s)
    mini = a.ppo_mini_batch_size * n
    if mini % dp:
        out.append(
            _p(
                "mini_batch_dp",
                "error",
                f"AssertionError: Got mini_batch_size={mini} and self.engine.get_data_parallel_size()={dp}: "
                f"actor.ppo_mini_batch_size x rollout.n ({a.ppo_mini_batch_size} x {n}) must be a multiple of the "
                f"actor's data-parallel size {dp}. Change actor.ppo_mini_batch_size or rollout.n.",
                SRC_MINI,
            )
        )
    elif not a.use_dynamic_bsz and a.ppo_micro_batch_size_per_gpu and (mini // dp) % a.ppo_micro_batch_size_per_gpu:
        out.append(
            _p(
                "micro_divides_mini",
                "error",
                f"data size must be divisible by force_group_size * micro_batch_size_per_gpu: each GPU's mini-batch "
                f"holds {mini // dp} sequences ({mini} / DP {dp}), not a multiple of actor.ppo_micro_batch_size_per_gpu "
                f"({a.ppo_micro_batch_size_per_gpu}). Pick a micro-batch that divides {mini // dp}.",
                SRC_MICRO,
            )
        )

    # old_log_prob / ref micro-batches over each rank's share of the padded batch
    total = padded_batch(s)
    passes: list[tuple[str, int, int | None, bool]] = [
        (
            "rollout.log_prob_micro_batch_size_per_gpu",
            dp,
            s.rollout.log_prob_micro_batch_size_per_gpu,
            _rollout_dynamic(s),
        )
    ]
    if need_ref(s):
        passes.append(
            (
                "ref.log_prob_micro_batch_size_per_gpu",
                max(1, g // _ref_sp(s)),
                s.ref.log_prob_micro_batch_size_per_gpu,
                _ref_dynamic(s),
            )
        )
    for name, pdp, micro, dynamic in passes:
        if dynamic or not micro or total % pdp:
            continue
        share = total // pdp
        if share % micro:
            out.append(
                _p(
                    "log_prob_micro_divides_batch",
                    "error",
                    f"data size must be divisible by force_group_size * micro_batch_size_per_gpu: each GPU computes "
                    f"log-probs for {share} sequences ({total} after padding / DP {pdp}), not a multiple of {name} "
                    f"({micro}). Pick a micro-batch that divides {share}.",
                    SRC_MICRO,
                )
            )

    # micro-batch sizes verl requires when dynamic batching is off
    if not a.use_dynamic_bsz and s.rollout.log_prob_micro_batch_size_per_gpu is None:
        out.append(
            _p(
                "micro_batch_required",
                "error",
                "[actor_rollout_ref.rollout] Please set at least one of "
                "'actor_rollout_ref.rollout.log_prob_micro_batch_size' or "
                "'actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu'. "
                "Set rollout.log_prob_micro_batch_size_per_gpu.",
                SRC_VALIDATE,
            )
        )
    if need_ref(s) and s.ref.log_prob_micro_batch_size_per_gpu is None:
        if not a.use_dynamic_bsz:
            out.append(
                _p(
                    "micro_batch_required",
                    "error",
                    "[actor_rollout_ref.ref] Please set at least one of 'actor_rollout_ref.ref.log_prob_micro_batch_size' "
                    "or 'actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu'. "
                    "Set ref.log_prob_micro_batch_size_per_gpu.",
                    SRC_VALIDATE,
                )
            )
        elif not _ref_dynamic(s):
            out.append(
                _p(
                    "micro_batch_required",
                    "error",
                    "[actor] Please set at least one of 'actor.ppo_micro_batch_size' or "
                    "'actor.ppo_micro_batch_size_per_gpu' if use_dynamic_bsz is not enabled. (The ref's config is "
                    "built as an actor config with ref.log_prob_use_dynamic_bsz=false.) Set "
                    "ref.log_prob_micro_batch_size_per_gpu or ref.log_prob_use_dynamic_bsz=true.",
                    f"{SRC_INIT}; {SRC_ACTOR_POST}",
                )
            )

    # actor.use_dynamic_bsz must equal rollout.log_prob_use_dynamic_bsz
    if a.use_dynamic_bsz != _rollout_dynamic(s):
        out.append(
            _p(
                "dynamic_bsz_mismatch",
                "error",
                "AssertionError (no message) at assert self.config.actor.use_dynamic_bsz == "
                f"self.config.rollout.log_prob_use_dynamic_bsz: actor.use_dynamic_bsz={a.use_dynamic_bsz} but "
                f"rollout.log_prob_use_dynamic_bsz={_rollout_dynamic(s)}. Set both the same (or leave the rollout "
                "one unset: it inherits the actor's).",
                SRC_INIT,
            )
        )

    # critic batches (validated only when the critic is used: validate_config(use_critic=need_critic))
    if need_critic(s):
        c = s.critic
        cmini = c.ppo_mini_batch_size or a.ppo_mini_batch_size
        cdyn = _critic_dynamic_config(s)
        if not cdyn and c.ppo_micro_batch_size_per_gpu is None:
            out.append(
                _p(
                    "micro_batch_required",
                    "error",
                    "[critic] Please set at least one of 'critic.micro_batch_size' or 'critic.micro_batch_size_per_gpu'. "
                    "Set critic.ppo_micro_batch_size_per_gpu (or critic.use_dynamic_bsz=true).",
                    SRC_CRITIC_POST,
                )
            )
        if not cdyn and tb < cmini:
            out.append(
                _p(
                    "train_batch_ge_mini",
                    "error",
                    f"train_batch_size ({tb}) must be >= critic.ppo_mini_batch_size ({cmini}). "
                    "Lower critic.ppo_mini_batch_size.",
                    SRC_CRITIC_VALIDATE,
                )
            )
        cdp = critic_dp(s)
        if (cmini * n) % cdp:
            out.append(
                _p(
                    "mini_batch_dp",
                    "error",
                    f"AssertionError: Got mini_batch_size={cmini * n} and self.engine.get_data_parallel_size()={cdp}: "
                    f"critic.ppo_mini_batch_size x rollout.n ({cmini} x {n}) must be a multiple of the critic's "
                    f"data-parallel size {cdp}.",
                    f"{SRC_MINI} (called from trainer/ppo/v1/trainer_base.py _update_critic)",
                )
            )
        set_micro = c.ppo_micro_batch_size_per_gpu is not None or c.forward_micro_batch_size_per_gpu is not None
        if set_micro or c.ppo_max_token_len_per_gpu != CRITIC_V1_TOKEN_BUDGET or c.forward_max_token_len_per_gpu:
            out.append(
                _p(
                    "critic_v1_batching",
                    "warning",
                    "verl 0.9.1's V1 trainer runs the critic engine with dynamic batching and a "
                    f"{CRITIC_V1_TOKEN_BUDGET}-token budget per GPU (critic.ppo_infer_max_token_len_per_gpu, a dataclass "
                    "field not in the YAML: change it with +critic.ppo_infer_max_token_len_per_gpu=N); "
                    "critic.ppo_micro_batch_size_per_gpu, forward_micro_batch_size_per_gpu, ppo_max_token_len_per_gpu "
                    "and forward_max_token_len_per_gpu are validated but not used by the engine.",
                    "verl/trainer/ppo/v1/trainer_base.py:PPOTrainer._setup (critic_cfg.engine.*max_token_len_per_gpu); "
                    "verl/workers/config/engine.py:EngineConfig.use_dynamic_bsz",
                )
            )
    return out


def _dynamic_rules(s: Scenario) -> list[ConfigProblem]:
    longest = s.data.max_prompt_length + s.data.max_response_length
    checks: list[tuple[str, int, int]] = []
    a = s.actor
    if a.use_dynamic_bsz:
        checks.append(("actor.ppo_max_token_len_per_gpu", a.ppo_max_token_len_per_gpu, _actor_sp(s)))
    if _rollout_dynamic(s):
        budget = s.rollout.log_prob_max_token_len_per_gpu or a.ppo_max_token_len_per_gpu
        checks.append(("rollout.log_prob_max_token_len_per_gpu", budget, _actor_sp(s)))
    if need_ref(s) and _ref_dynamic(s):
        budget = s.ref.log_prob_max_token_len_per_gpu or a.ppo_max_token_len_per_gpu
        checks.append(("ref.log_prob_max_token_len_per_gpu", budget, _ref_sp(s)))
    if need_critic(s):
        checks.append(("critic.ppo_infer_max_token_len_per_gpu (V1 critic)", CRITIC_V1_TOKEN_BUDGET, _critic_sp(s)))
    out = []
    for name, budget, sp in checks:
        max_token_len = budget * sp
        if max_token_len < longest:
            out.append(
                _p(
                    "dynamic_token_budget",
                    "error",
                    f"max_token_len must be greater than the sequence length. Got max_token_len={max_token_len} and "
                    f"max_seq_len={longest}: {name} ({budget}) x Ulysses SP ({sp}) is below max prompt + max response. "
                    f"Raise {name.split(' ')[0]} to at least {-(-longest // sp)}.",
                    SRC_SEQLEN,
                )
            )
    return out


def _arch(s: Scenario) -> Architecture | None:
    try:
        from calculator.api import resolve_architectures

        return resolve_architectures(s)[0]
    except Exception:  # unknown model: checked elsewhere (load_scenario)
        return None


def _heads_rules(s: Scenario, arch: Architecture | None) -> list[ConfigProblem]:
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
    if arch is None:
        return out
    src = SRC_HEADS_VLLM if r.name == "vllm" else SRC_HEADS_SGLANG
    heads, kv = arch.num_attention_heads, arch.num_kv_heads
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
    # Ulysses SP: attention heads split over SP ranks
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


def _algorithm_rules(s: Scenario) -> list[ConfigProblem]:
    out: list[ConfigProblem] = []
    est = s.algorithm.adv_estimator
    src = f"verl/trainer/ppo/core_algos.py:compute_{est}_outcome_advantage"
    if s.rollout.n == 1:
        if est == "grpo_passk":
            out.append(
                _p(
                    "group_estimator_n1",
                    "error",
                    "Pass@k requires at least 2 samples per group. Got 1 for group ...: set rollout.n >= 2.",
                    src,
                )
            )
        elif est == "rloo_vectorized":
            out.append(
                _p(
                    "group_estimator_n1",
                    "warning",
                    "rloo_vectorized with rollout.n=1: every group has one response and the advantage is multiplied by "
                    "(group size > 1), so all advantages are 0 and the policy does not learn. Set rollout.n >= 2. "
                    "(verl has no check for this.)",
                    src,
                )
            )
        elif est in GROUP_ESTIMATORS_FALLBACK:
            if est == "optimal_token_baseline":
                src = "verl/trainer/ppo/core_algos.py:compute_optimal_token_baseline_advantage"
            out.append(
                _p(
                    "group_estimator_n1",
                    "warning",
                    f"{est} with rollout.n=1: every group has one response, so verl falls back to a baseline of 0 "
                    "(and std 1): the advantage is the raw reward, with no group baseline. Set rollout.n >= 2 for "
                    f"{est} to mean what it says. (verl has no check for this.)",
                    src,
                )
            )
    if not need_critic(s):
        c = s.critic
        defaults = type(c)()
        changed = [f for f in type(c).model_fields if f not in ("enable",) and getattr(c, f) != getattr(defaults, f)]
        if changed:
            out.append(
                _p(
                    "critic_settings_without_critic",
                    "warning",
                    f"critic settings ({', '.join('critic.' + f for f in changed)}) have no effect: there is no critic "
                    f"(algorithm.adv_estimator={est}, critic.enable={c.enable}). verl does not check this; set "
                    "critic.enable=true if you meant to train one.",
                    "verl/trainer/ppo/utils.py:need_critic",
                )
            )
        if est == "gae":
            out.append(
                _p(
                    "gae_without_critic",
                    "warning",
                    "algorithm.adv_estimator=gae computes advantages from the critic's values, but critic.enable=false "
                    "disables the critic. Enable the critic or use a critic-free estimator (grpo, rloo, ...).",
                    "verl/trainer/ppo/utils.py:need_critic; verl/trainer/ppo/core_algos.py:compute_gae_advantage_return",
                )
            )
    if s.algorithm.use_kl_in_reward and s.actor.use_kl_loss:
        out.append(
            _p(
                "kl_twice",
                "warning",
                "NOTICE: You have both enabled in-reward kl and kl loss.",
                SRC_VALIDATE,
            )
        )
    if s.model.lora_rank > VLLM_MAX_LORA_RANK and s.rollout.name == "vllm":
        out.append(
            _p(
                "lora_rank_vllm",
                "error",
                f"lora_rank must be less than or equal to {VLLM_MAX_LORA_RANK}, but got {s.model.lora_rank} "
                "(vLLM's MaxLoRARanks).",
                "verl/workers/rollout/vllm_rollout/utils.py:get_vllm_max_lora_rank (called from validate_config)",
            )
        )
    return out


def check_config(scenario: Scenario) -> list[ConfigProblem]:
    """verl 0.9.1's configuration errors (and silent no-ops) for this scenario, errors first."""
    s = scenario
    problems = (
        _batch_rules(s) + _dynamic_rules(s) + _heads_rules(s, _arch(s)) + _parallel_rules(s) + _algorithm_rules(s)
    )
    seen: set[str] = set()
    unique = []
    for p in problems:
        if p.message not in seen:
            seen.add(p.message)
            unique.append(p)
    return sorted(unique, key=lambda p: p.severity != "error")


# --------------------------------------------------------------------------------------------------
# Rules on raw verl keys (import path)


def check_raw_config(given: dict[str, Any], resolver: Any, engine: str) -> list[ConfigProblem]:
    """Checks that need the raw verl keys: the deprecated global micro-batch sizes (a Scenario only has the
    ``*_per_gpu`` ones). ``resolver.value(key)`` resolves a verl key (interpolations, verl defaults)."""

    def rv(key: str, default: Any = None) -> Any:
        try:
            return resolver.value(key)
        except Exception:
            return default

    a = "actor_rollout_ref.actor"
    actor_dyn = bool(rv(f"{a}.use_dynamic_bsz", False))
    use_ref = bool(rv("algorithm.use_kl_in_reward", False)) or bool(rv(f"{a}.use_kl_loss", False))
    enable = rv("critic.enable")
    use_critic = bool(enable) if enable is not None else rv("algorithm.adv_estimator", "gae") == "gae"
    critic_dyn = bool(rv("critic.use_dynamic_bsz", actor_dyn))
    out: list[ConfigProblem] = []
    cases = [
        ("actor", f"{a}.ppo_micro_batch_size", f"{a}.ppo_micro_batch_size_per_gpu", not actor_dyn, SRC_ACTOR_POST),
        (
            "actor_rollout_ref.rollout",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
            not actor_dyn,
            SRC_VALIDATE,
        ),
        (
            "actor_rollout_ref.ref",
            "actor_rollout_ref.ref.log_prob_micro_batch_size",
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
            use_ref and not actor_dyn,
            SRC_VALIDATE,
        ),
        (
            "critic",
            "critic.ppo_micro_batch_size",
            "critic.ppo_micro_batch_size_per_gpu",
            use_critic and not critic_dyn,
            SRC_CRITIC_POST,
        ),
    ]
    for name, old, new, relevant, src in cases:
        if not relevant:
            continue
        old_v, new_v = rv(old), rv(new)
        short_old, short_new = (old.split(".")[-1], new.split(".")[-1])
        if name == "actor":
            q_old, q_new = f"actor.{short_old}", f"actor.{short_new}"
        elif name == "critic":
            q_old, q_new, short_old = "critic.micro_batch_size", "critic.micro_batch_size_per_gpu", "micro_batch_size"
        else:
            q_old, q_new = old, new
        if old_v is not None and new_v is not None:
            note = (
                " (critic.ppo_micro_batch_size_per_gpu defaults to ${oc.select:.ppo_micro_batch_size,null}, so setting "
                "critic.ppo_micro_batch_size alone sets both)"
                if name == "critic" and new not in given
                else ""
            )
            out.append(
                _p(
                    "micro_batch_given_twice",
                    "error",
                    f"[{name}] You have set both '{q_old}' AND '{q_new}'. Please remove '{q_old}' because only "
                    f"'*_{short_old}_per_gpu' is supported (the former is deprecated).{note}",
                    src,
                )
            )
        elif old_v is not None and name in ("actor", "actor_rollout_ref.rollout"):
            out.append(
                _p(
                    "micro_batch_deprecated",
                    "error",
                    f"{old} (the deprecated global micro-batch) passes validate_config, but verl 0.9.1's engine reads "
                    f"only {new}: init_model fails on `assert ... {short_new} is not None`. Set {new} instead.",
                    SRC_INIT,
                )
            )
    return out
