"""verl's rules for the split-placement recipes (one_step_off_policy, fully_async_policy).

Sources (github volcengine/verl ``verl/experimental/*``, the recipes formerly under ``recipe/``; not in the
0.9.1 wheel's ``verl/trainer``):
- one_step_off ``ray_trainer.py`` and fully_async ``fully_async_trainer.py`` / ``fully_async_rollouter.py``:
  ``assert not self.hybrid_engine``; the rollouter asserts ``staleness_threshold >= 0`` and
  ``trigger_parameter_sync_step >= 1`` (the Scenario's bounds already enforce both);
- docs/advance/one_step_off.md "Configuration Guidelines": ``rollout.n`` should divide the trainer's GPUs
  (``trainer.n_gpus_per_node x trainer.nnodes``), or ``rollout.n x train_batch_size`` be divisible by them,
  "to ensure training samples can be evenly distributed across training GPUs";
- both recipes support vLLM (one_step_off: vLLM only, "Functional Support"; fully_async: vLLM and SGLang in
  server mode), FSDP2 / Megatron training (one_step_off.md table), critic-free estimators for one_step_off;
- fully_async.md: ``staleness_threshold`` "recommended to set it to less than 1"; ``partial_rollout`` "only
  actually takes effect when staleness_threshold > 0".
"""

from __future__ import annotations

from calculator.inputs.scenario import Scenario
from calculator.verl.checks.problem import ConfigProblem, _p

SRC_OSOP_DOC = "docs/advance/one_step_off.md:Configuration Guidelines"
SRC_OSOP_SUPPORT = "docs/advance/one_step_off.md:Functional Support"
SRC_FA_DOC = "docs/advance/fully_async.md:Parameter Description"
_OSOP_ESTIMATORS = ("grpo", "grpo_passk", "reinforce_plus_plus", "rloo", "opo", "reinforce_plus_plus_baseline", "gpg")


def _divisibility(s: Scenario) -> list[ConfigProblem]:
    g = s.hardware.num_gpus
    n = s.rollout.n
    batch = s.data.train_batch_size
    if g % n == 0 or (n * batch) % g == 0:
        return []
    return [
        _p(
            "placement_gpu_split",
            "warning",
            f"rollout.n ({n}) does not divide the trainer's GPUs ({g}) and rollout.n x data.train_batch_size "
            f"({n * batch}) is not divisible by them: samples cannot be spread evenly over the training GPUs; "
            "pick trainer.n_gpus_per_node x trainer.nnodes accordingly",
            SRC_OSOP_DOC,
        )
    ]


def _support(s: Scenario) -> list[ConfigProblem]:
    out = []
    mode = s.placement.mode
    if mode == "one_step_off" and s.rollout.name != "vllm":
        out.append(
            _p("placement_engine", "error", "one_step_off_policy supports the vLLM rollout only", SRC_OSOP_SUPPORT)
        )
    if s.actor.strategy == "fsdp":
        out.append(
            _p(
                "placement_strategy",
                "warning",
                f"{mode}: the recipes are documented for FSDP2 and Megatron (actor.strategy=fsdp2 or megatron)",
                SRC_OSOP_SUPPORT,
            )
        )
    if mode == "one_step_off" and s.algorithm.adv_estimator not in _OSOP_ESTIMATORS:
        out.append(
            _p(
                "placement_estimator",
                "warning",
                f"one_step_off_policy lists {', '.join(_OSOP_ESTIMATORS)} as supported estimators, not "
                f"{s.algorithm.adv_estimator}",
                SRC_OSOP_SUPPORT,
            )
        )
    return out


def _fully_async(s: Scenario) -> list[ConfigProblem]:
    p = s.placement
    out = []
    if p.staleness_threshold >= 1:
        out.append(
            _p(
                "placement_staleness",
                "warning",
                f"async_training.staleness_threshold={p.staleness_threshold}: verl recommends < 1 (too many stale "
                "samples hurt accuracy)",
                SRC_FA_DOC,
            )
        )
    if p.partial_rollout and p.staleness_threshold == 0:
        out.append(
            _p(
                "placement_partial",
                "warning",
                "async_training.partial_rollout=True has no effect with staleness_threshold=0",
                SRC_FA_DOC,
            )
        )
    return out


def placement_rules(s: Scenario) -> list[ConfigProblem]:
    """The recipe rules of a split placement; none when colocated."""
    if not s.placement.split:
        return []
    out = _divisibility(s) + _support(s)
    if s.placement.mode == "fully_async":
        out += _fully_async(s)
    return out


__all__ = ["SRC_FA_DOC", "SRC_OSOP_DOC", "SRC_OSOP_SUPPORT", "placement_rules"]
