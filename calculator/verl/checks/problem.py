"""One problem verl would raise, and the verl 0.9.1 source locations the rules quote.

Each ``ConfigProblem`` carries verl's own message, a fix, and where verl raises it: a path relative to the
``verl/`` package of the verl 0.9.1 wheel (``pip download --no-deps verl==0.9.1``) and the function, in
the form ``verl/<path>.py:<Class.method>`` that ``tests/test_verl_real.py`` looks up in the wheel.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Severity = Literal["error", "warning"]


class ConfigProblem(BaseModel):
    """One problem verl would raise (error) or a setting that silently does not do what it says (warning)."""

    model_config = ConfigDict(frozen=True)

    rule: str
    severity: Severity
    message: str
    source: str


def _p(rule: str, severity: Severity, message: str, source: str) -> ConfigProblem:
    return ConfigProblem(rule=rule, severity=severity, message=f"{message} [{source}]", source=source)


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


# Rules whose missing value the resolved plan fills with an assumed value (calculator.resolve.inheritance
# ASSUMED_MICRO_BATCH, reported as "estimated with ... = 1"): in the fit verdict they are a warning carrying that
# value, not a rejection (issue 13 item 1), although verl itself refuses to start until the value is set.
ASSUMED_RULES = frozenset({"micro_batch_required"})


def rejections(checks: list[ConfigProblem]) -> list[ConfigProblem]:
    """The checks that make verl raise and that the estimate cannot stand in for: fit criterion 5 of
    ``calculator.report.verdict`` (and of the planner, advisor and trade-off sweep)."""
    return [p for p in checks if p.severity == "error" and p.rule not in ASSUMED_RULES]
