"""Algorithm and model rules: group estimators with one sample, critic settings without a critic,
KL twice, and vLLM's LoRA rank limit.

The estimators are verl 0.9.1 ``trainer/ppo/core_algos.py``; whether a critic runs is
``trainer/ppo/utils.py`` ``need_critic``. Rules verl does not have but whose outcome is certain are
warnings and say so.
"""

from __future__ import annotations

from calculator.inputs.scenario import Scenario
from calculator.verl.checks.problem import SRC_VALIDATE, ConfigProblem, Severity, _p
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


# Group estimators whose n = 1 outcome is certain but not the generic fallback: (severity, message).
_N1_RULES: dict[str, tuple[Severity, str]] = {
    "grpo_passk": ("error", "Pass@k requires at least 2 samples per group. Got 1 for group ...: set rollout.n >= 2."),
    "rloo_vectorized": (
        "warning",
        "rloo_vectorized with rollout.n=1: every group has one response and the advantage is multiplied by "
        "(group size > 1), so all advantages are 0 and the policy does not learn. Set rollout.n >= 2. "
        "(verl has no check for this.)",
    ),
}
# Estimators whose advantage function is not named compute_<estimator>_outcome_advantage.
_ADVANTAGE_FUNCTIONS = {"optimal_token_baseline": "compute_optimal_token_baseline_advantage"}


def _group_estimator_n1_rule(s: Scenario) -> list[ConfigProblem]:
    """A group estimator with one response per prompt: no group baseline (or, for pass@k, an error)."""
    est = s.algorithm.adv_estimator
    if s.rollout.n != 1:
        return []
    src = f"verl/trainer/ppo/core_algos.py:compute_{est}_outcome_advantage"
    if est in _N1_RULES:
        severity, message = _N1_RULES[est]
        return [_p("group_estimator_n1", severity, message, src)]
    if est not in GROUP_ESTIMATORS_FALLBACK:
        return []
    if est in _ADVANTAGE_FUNCTIONS:
        src = f"verl/trainer/ppo/core_algos.py:{_ADVANTAGE_FUNCTIONS[est]}"
    return [
        _p(
            "group_estimator_n1",
            "warning",
            f"{est} with rollout.n=1: every group has one response, so verl falls back to a baseline of 0 "
            "(and std 1): the advantage is the raw reward, with no group baseline. Set rollout.n >= 2 for "
            f"{est} to mean what it says. (verl has no check for this.)",
            src,
        )
    ]


def _no_critic_rules(s: Scenario) -> list[ConfigProblem]:
    """Critic settings, or a GAE estimator, without a critic."""
    if need_critic(s):
        return []
    out: list[ConfigProblem] = []
    est, c = s.algorithm.adv_estimator, s.critic
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
    return out


def _kl_twice_rule(s: Scenario) -> list[ConfigProblem]:
    if not (s.algorithm.use_kl_in_reward and s.actor.use_kl_loss):
        return []
    return [_p("kl_twice", "warning", "NOTICE: You have both enabled in-reward kl and kl loss.", SRC_VALIDATE)]


def _lora_rank_rule(s: Scenario) -> list[ConfigProblem]:
    if s.model.lora_rank <= VLLM_MAX_LORA_RANK or s.rollout.name != "vllm":
        return []
    return [
        _p(
            "lora_rank_vllm",
            "error",
            f"lora_rank must be less than or equal to {VLLM_MAX_LORA_RANK}, but got {s.model.lora_rank} "
            "(vLLM's MaxLoRARanks).",
            "verl/workers/rollout/vllm_rollout/utils.py:get_vllm_max_lora_rank (called from validate_config)",
        )
    ]


def _algorithm_rules(s: Scenario) -> list[ConfigProblem]:
    """Every algorithm and model rule."""
    return _group_estimator_n1_rule(s) + _no_critic_rules(s) + _kl_twice_rule(s) + _lora_rank_rule(s)
