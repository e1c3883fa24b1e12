"""Algorithm and model rules: group estimators with one sample, critic settings without a critic,
KL twice, and vLLM's LoRA rank limit.

The estimators are verl 0.9.1 ``trainer/ppo/core_algos.py``; whether a critic runs is
``trainer/ppo/utils.py`` ``need_critic``. Rules verl does not have but whose outcome is certain are
warnings and say so.
"""

from __future__ import annotations

from calculator.inputs.scenario import Scenario
from calculator.verl.checks.problem import SRC_VALIDATE, ConfigProblem, _p
from calculator.verl.checks.resolved import need_critic

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
