"""verl's "null = inherit" rules as one table: which native field a null field takes its value from.

Each chain is read left to right; the first non-null field wins. Sources (verl 0.9.1 wheel):
``trainer/config/actor/*.yaml``, ``trainer/config/ref/*.yaml``, ``trainer/config/rollout/rollout.yaml`` and
``trainer/config/critic/*.yaml`` interpolate these keys (``${oc.select:actor_rollout_ref.actor.X,...}``,
``${actor_rollout_ref.actor.X}``), and the legacy workers fall back the same way for the micro-batch sizes
(``workers/fsdp_workers.py``: the ref's and the rollout's log-prob micro-batch default to the actor's).

Everything that needs an inherited value calls :func:`inherited` (or reads the resolved plan); nothing
re-states a chain.
"""

from __future__ import annotations

from typing import Any

from calculator.inputs.scenario import Scenario

# A micro-batch size that nothing sets: verl refuses to start without one (unless the pass packs by tokens);
# rlplan estimates with 1 sequence and records the assumption (``Resolved.decisions``).
ASSUMED_MICRO_BATCH = 1

INHERITS: dict[str, tuple[str, ...]] = {
    "rollout.log_prob_micro_batch_size_per_gpu": ("actor.ppo_micro_batch_size_per_gpu",),
    "rollout.log_prob_use_dynamic_bsz": ("actor.use_dynamic_bsz",),
    "rollout.log_prob_max_token_len_per_gpu": ("actor.ppo_max_token_len_per_gpu",),
    "ref.log_prob_micro_batch_size_per_gpu": (
        "rollout.log_prob_micro_batch_size_per_gpu",
        "actor.ppo_micro_batch_size_per_gpu",
    ),
    "ref.log_prob_use_dynamic_bsz": ("actor.use_dynamic_bsz",),
    "ref.log_prob_max_token_len_per_gpu": ("actor.ppo_max_token_len_per_gpu",),
    "ref.ulysses_sequence_parallel_size": ("actor.ulysses_sequence_parallel_size",),
    "critic.strategy": ("actor.strategy",),
    "critic.ppo_mini_batch_size": ("actor.ppo_mini_batch_size",),
    "critic.ppo_micro_batch_size_per_gpu": ("actor.ppo_micro_batch_size_per_gpu",),
    "critic.forward_micro_batch_size_per_gpu": (
        "critic.ppo_micro_batch_size_per_gpu",
        "actor.ppo_micro_batch_size_per_gpu",
    ),
    "critic.use_dynamic_bsz": ("actor.use_dynamic_bsz",),
    "critic.forward_max_token_len_per_gpu": ("critic.ppo_max_token_len_per_gpu",),
    "critic.ppo_epochs": ("actor.ppo_epochs",),
}


def field_value(s: Scenario, key: str) -> Any:
    """The scenario's value of a native dotted field (``"actor.ppo_epochs"``)."""
    node: Any = s
    for part in key.split("."):
        node = getattr(node, part)
    return node


def inherited(s: Scenario, key: str) -> tuple[Any, str]:
    """(value, the field it came from) for ``key``: its own value, else the first non-null field of its chain;
    (None, "") when nothing in the chain is set."""
    for name in (key, *INHERITS.get(key, ())):
        value = field_value(s, name)
        if value is not None:
            return value, name
    return None, ""


def value(s: Scenario, key: str) -> Any:
    """Only the value of :func:`inherited`."""
    return inherited(s, key)[0]


def micro_batch(s: Scenario, key: str) -> int:
    """A ``*_micro_batch_size_per_gpu`` after inheritance, or :data:`ASSUMED_MICRO_BATCH` when unset."""
    return value(s, key) or ASSUMED_MICRO_BATCH
