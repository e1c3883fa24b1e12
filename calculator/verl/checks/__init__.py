"""verl 0.9.1's own configuration checks, run before launch.

Each rule reproduces a check verl (or the inference engine it starts) makes at config time or at the
first step, with the message verl prints, a fix, and the source location in the verl 0.9.1 wheel
(``pip download --no-deps verl==0.9.1``; paths relative to the ``verl/`` package). Rules verl does not
have but whose outcome is certain (GRPO-style estimators with n = 1, critic settings without a critic)
are warnings and say so.

``check_config(scenario)`` works on a Scenario. ``check_raw_config`` works on the raw verl keys of an
imported launch script, for what the Scenario cannot express (the deprecated global micro-batch keys).

One module per group of rules, over two shared ones:

* ``problem``: ``ConfigProblem`` and the verl source locations the rules quote (``SRC_*``);
* ``resolved``: the settings as verl resolves them (``need_critic``, ``actor_dp``, ``padded_batch``, ...);
* ``batch``: train / mini / micro batch sizes and dynamic-batching token budgets;
* ``parallel``: rollout TP / DP / EP and heads, Ulysses SP, Megatron parallel sizes;
* ``algorithm``: estimators, critic settings without a critic, KL, LoRA rank;
* ``raw``: ``check_raw_config``, on the raw keys of an imported launch script.

Every name below stays importable from ``calculator.verl.checks``.
"""

from __future__ import annotations

from calculator.inputs.scenario import Scenario
from calculator.resolve.batching import CRITIC_V1_TOKEN_BUDGET
from calculator.resolve.resolved import Resolved
from calculator.verl.checks.algorithm import GROUP_ESTIMATORS_FALLBACK, VLLM_MAX_LORA_RANK, _algorithm_rules
from calculator.verl.checks.batch import _batch_rules, _dynamic_rules
from calculator.verl.checks.parallel import _arch, _heads_rules, _parallel_rules
from calculator.verl.checks.placement import placement_rules
from calculator.verl.checks.problem import (
    SRC_ACTOR_POST,
    SRC_ACTOR_VALIDATE,
    SRC_CRITIC_POST,
    SRC_CRITIC_VALIDATE,
    SRC_HEADS_SGLANG,
    SRC_HEADS_VLLM,
    SRC_INIT,
    SRC_MICRO,
    SRC_MINI,
    SRC_SEQLEN,
    SRC_ULYSSES_HEADS,
    SRC_ULYSSES_RMPAD,
    SRC_VALIDATE,
    ConfigProblem,
    Severity,
)
from calculator.verl.checks.raw import check_raw_config
from calculator.verl.checks.resolved import actor_dp, critic_dp, need_critic, need_ref, padded_batch

__all__ = [
    "check_config",
    "check_raw_config",
    "ConfigProblem",
    "Severity",
    # resolved settings
    "actor_dp",
    "critic_dp",
    "need_critic",
    "need_ref",
    "padded_batch",
    # facts the rules use
    "CRITIC_V1_TOKEN_BUDGET",
    "GROUP_ESTIMATORS_FALLBACK",
    "VLLM_MAX_LORA_RANK",
    "SRC_ACTOR_POST",
    "SRC_ACTOR_VALIDATE",
    "SRC_CRITIC_POST",
    "SRC_CRITIC_VALIDATE",
    "SRC_HEADS_SGLANG",
    "SRC_HEADS_VLLM",
    "SRC_INIT",
    "SRC_MICRO",
    "SRC_MINI",
    "SRC_SEQLEN",
    "SRC_ULYSSES_HEADS",
    "SRC_ULYSSES_RMPAD",
    "SRC_VALIDATE",
    "Scenario",
]


def check_config(scenario: Scenario | Resolved) -> list[ConfigProblem]:
    """verl 0.9.1's configuration errors (and silent no-ops) for this scenario, errors first."""
    s = scenario.scenario if isinstance(scenario, Resolved) else scenario
    problems = (
        _batch_rules(s) + _dynamic_rules(s) + _heads_rules(s, _arch(s)) + _parallel_rules(s) + _algorithm_rules(s)
    ) + placement_rules(s)
    seen: set[str] = set()
    unique = []
    for p in problems:
        if p.message not in seen:
            seen.add(p.message)
            unique.append(p)
    return sorted(unique, key=lambda p: p.severity != "error")
