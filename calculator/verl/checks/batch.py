"""Batch-size rules: train / mini / micro batches against the data-parallel sizes, and token budgets.

verl 0.9.1 checks these in ``utils/config.py`` (``validate_config``), the actor and critic config
dataclasses (``workers/config/actor.py``, ``workers/config/critic.py``), the training worker
(``workers/engine_workers.py``) and the micro-batch splitters (``workers/engine/utils.py``,
``utils/seqlen_balancing.py``); each rule quotes its location (``calculator.verl.checks.problem``).
"""

from __future__ import annotations

from calculator.inputs.scenario import Scenario

# verl 0.9.1 CriticConfig.ppo_infer_max_token_len_per_gpu (workers/config/critic.py): a dataclass field,
# not in the YAML; the V1 trainer uses it as the critic engine's token budget.
from calculator.resolve.batching import CRITIC_V1_TOKEN_BUDGET
from calculator.resolve.inheritance import micro_batch, value
from calculator.verl.checks.problem import (
    SRC_ACTOR_POST,
    SRC_ACTOR_VALIDATE,
    SRC_CRITIC_POST,
    SRC_CRITIC_VALIDATE,
    SRC_INIT,
    SRC_MICRO,
    SRC_MINI,
    SRC_SEQLEN,
    SRC_VALIDATE,
    ConfigProblem,
    _p,
)
from calculator.verl.checks.resolved import (
    _actor_sp,
    _critic_dynamic_config,
    _critic_sp,
    _megatron_mp,
    _ref_dynamic,
    _ref_sp,
    _rollout_dynamic,
    actor_dp,
    critic_dp,
    need_critic,
    need_ref,
    padded_batch,
    ref_dp,
)


def _megatron_world_size_rule(s: Scenario) -> list[ConfigProblem]:
    g, m = s.hardware.num_gpus, s.actor.megatron
    if not g % _megatron_mp(m):
        return []
    return [
        _p(
            "megatron_world_size",
            "error",
            f"n_gpus ({g}) must be divisible by model_parallel_size "
            f"({m.tensor_model_parallel_size * m.pipeline_model_parallel_size}) times "
            f"context_parallel_size ({m.context_parallel_size}). Change the GPU count or "
            "actor.megatron tensor/pipeline/context parallel sizes.",
            SRC_VALIDATE,
        )
    ]


def _train_batch_rules(s: Scenario) -> list[ConfigProblem]:
    """validate_config: real_train_batch_size % minimal_bsz, train >= mini (only without dynamic batch size)."""
    a = s.actor
    if a.use_dynamic_bsz:
        return []
    out: list[ConfigProblem] = []
    g, n, tb = s.hardware.num_gpus, s.rollout.n, s.data.train_batch_size
    if a.strategy == "megatron":
        out += _megatron_world_size_rule(s)
        minimal = (g // _megatron_mp(a.megatron)) * micro_batch(s, "actor.ppo_micro_batch_size_per_gpu")
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
    return out


def _mini_batch_rules(s: Scenario) -> list[ConfigProblem]:
    """The trainer asks for ppo_mini_batch_size x n sequences per mini-batch; each DP rank takes 1/dp of it."""
    a, n = s.actor, s.rollout.n
    dp = actor_dp(s)
    mini = a.ppo_mini_batch_size * n
    if mini % dp:
        return [
            _p(
                "mini_batch_dp",
                "error",
                f"AssertionError: Got mini_batch_size={mini} and self.engine.get_data_parallel_size()={dp}: "
                f"actor.ppo_mini_batch_size x rollout.n ({a.ppo_mini_batch_size} x {n}) must be a multiple of the "
                f"actor's data-parallel size {dp}. Change actor.ppo_mini_batch_size or rollout.n.",
                SRC_MINI,
            )
        ]
    if not a.use_dynamic_bsz and a.ppo_micro_batch_size_per_gpu and (mini // dp) % a.ppo_micro_batch_size_per_gpu:
        return [
            _p(
                "micro_divides_mini",
                "error",
                f"data size must be divisible by force_group_size * micro_batch_size_per_gpu: each GPU's mini-batch "
                f"holds {mini // dp} sequences ({mini} / DP {dp}), not a multiple of actor.ppo_micro_batch_size_per_gpu "
                f"({a.ppo_micro_batch_size_per_gpu}). Pick a micro-batch that divides {mini // dp}.",
                SRC_MICRO,
            )
        ]
    return []


def _log_prob_micro_rules(s: Scenario) -> list[ConfigProblem]:
    """old_log_prob / ref micro-batches over each rank's share of the padded batch."""
    total = padded_batch(s)
    passes: list[tuple[str, int, int | None, bool]] = [
        (
            "rollout.log_prob_micro_batch_size_per_gpu",
            actor_dp(s),
            s.rollout.log_prob_micro_batch_size_per_gpu,
            _rollout_dynamic(s),
        )
    ]
    if need_ref(s):
        passes.append(
            (
                "ref.log_prob_micro_batch_size_per_gpu",
                ref_dp(s),
                s.ref.log_prob_micro_batch_size_per_gpu,
                _ref_dynamic(s),
            )
        )
    out: list[ConfigProblem] = []
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
    return out


def _micro_required_rules(s: Scenario) -> list[ConfigProblem]:
    """Micro-batch sizes verl requires when dynamic batching is off."""
    a = s.actor
    out: list[ConfigProblem] = []
    if not a.use_dynamic_bsz and a.ppo_micro_batch_size_per_gpu is None:
        out.append(
            _p(
                "micro_batch_required",
                "error",
                "[actor] Please set at least one of 'actor.ppo_micro_batch_size' or "
                "'actor.ppo_micro_batch_size_per_gpu' if use_dynamic_bsz is not enabled. Set "
                "actor.ppo_micro_batch_size_per_gpu or actor.use_dynamic_bsz=true.",
                SRC_ACTOR_POST,
            )
        )
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
    if not need_ref(s) or s.ref.log_prob_micro_batch_size_per_gpu is not None:
        return out
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
    return out


def _dynamic_flag_rules(s: Scenario) -> list[ConfigProblem]:
    """actor.use_dynamic_bsz must equal rollout.log_prob_use_dynamic_bsz."""
    a = s.actor
    if a.use_dynamic_bsz == _rollout_dynamic(s):
        return []
    return [
        _p(
            "dynamic_bsz_mismatch",
            "error",
            "AssertionError (no message) at assert self.config.actor.use_dynamic_bsz == "
            f"self.config.rollout.log_prob_use_dynamic_bsz: actor.use_dynamic_bsz={a.use_dynamic_bsz} but "
            f"rollout.log_prob_use_dynamic_bsz={_rollout_dynamic(s)}. Set both the same (or leave the rollout "
            "one unset: it inherits the actor's).",
            SRC_INIT,
        )
    ]


def _critic_batch_rules(s: Scenario) -> list[ConfigProblem]:
    """Critic batches (validated only when the critic is used: validate_config(use_critic=need_critic))."""
    if not need_critic(s):
        return []
    out: list[ConfigProblem] = []
    c, n, tb = s.critic, s.rollout.n, s.data.train_batch_size
    cmini = value(s, "critic.ppo_mini_batch_size")
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
    return out + _critic_v1_batching_rule(s)


def _critic_v1_batching_rule(s: Scenario) -> list[ConfigProblem]:
    """The V1 trainer ignores the critic's micro-batch and token-budget settings (warning)."""
    c = s.critic
    set_micro = c.ppo_micro_batch_size_per_gpu is not None or c.forward_micro_batch_size_per_gpu is not None
    if not (set_micro or c.ppo_max_token_len_per_gpu != CRITIC_V1_TOKEN_BUDGET or c.forward_max_token_len_per_gpu):
        return []
    return [
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
    ]


def _batch_rules(s: Scenario) -> list[ConfigProblem]:
    """Every batch-size rule, in verl's order of checking."""
    return (
        _train_batch_rules(s)
        + _mini_batch_rules(s)
        + _log_prob_micro_rules(s)
        + _micro_required_rules(s)
        + _dynamic_flag_rules(s)
        + _critic_batch_rules(s)
    )


def _dynamic_rules(s: Scenario) -> list[ConfigProblem]:
    longest = s.data.max_prompt_length + s.data.max_response_length
    checks: list[tuple[str, int, int]] = []
    a = s.actor
    if a.use_dynamic_bsz:
        checks.append(("actor.ppo_max_token_len_per_gpu", a.ppo_max_token_len_per_gpu, _actor_sp(s)))
    if _rollout_dynamic(s):
        budget = value(s, "rollout.log_prob_max_token_len_per_gpu")
        checks.append(("rollout.log_prob_max_token_len_per_gpu", budget, _actor_sp(s)))
    if need_ref(s) and _ref_dynamic(s):
        budget = value(s, "ref.log_prob_max_token_len_per_gpu")
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
