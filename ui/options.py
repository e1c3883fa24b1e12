"""Choices the dashboard offers: algorithm recipes, model and GPU lists with display labels (pure)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from calculator.inputs.presets import gpu_presets, model_presets
from calculator.inputs.scenario import Scenario
from calculator.units import format_count


@dataclass(frozen=True)
class Algorithm:
    """An algorithm as users name it, mapped onto verl's ``algorithm.adv_estimator`` and extra settings.

    ``recipe`` holds the settings that define the algorithm beyond the estimator (DAPO: clip-higher and a
    generation batch larger than the training batch); they are copied into the inputs when it is picked.
    """

    label: str
    adv_estimator: str
    recipe: dict[str, Any] = field(default_factory=dict)
    note: str = ""


DAPO_GEN_BATCH_FACTOR = 3  # DAPO recipe: gen_batch_size = 3 x train_batch_size (verl recipe/dapo)

ALGORITHMS: tuple[Algorithm, ...] = (
    Algorithm("PPO", "gae", note="critic"),
    Algorithm("GRPO", "grpo"),
    Algorithm("DAPO", "grpo", {"actor.clip_ratio_high": 0.28}, note="grpo + clip-higher + dynamic sampling"),
    Algorithm("GSPO", "grpo", note="grpo estimator, sequence-level ratio"),
    Algorithm("RLOO", "rloo"),
    Algorithm("REINFORCE++", "reinforce_plus_plus"),
    Algorithm("REINFORCE++ baseline", "reinforce_plus_plus_baseline"),
    Algorithm("ReMax", "remax"),
    Algorithm("GRPO pass@k", "grpo_passk"),
    Algorithm("GRPO (vectorized)", "grpo_vectorized"),
    Algorithm("RLOO (vectorized)", "rloo_vectorized"),
    Algorithm("OPO", "opo"),
    Algorithm("GPG", "gpg"),
    Algorithm("Optimal token baseline", "optimal_token_baseline"),
)
ALGORITHM_BY_LABEL = {a.label: a for a in ALGORITHMS}
# Labels that are only a recipe on top of another algorithm's estimator (not derivable from it alone).
RECIPE_LABELS = ("DAPO", "GSPO")


def algorithm_label(est: str, train_batch_size: int, gen_batch_size: int | None, clip_ratio_high: float) -> str:
    """The label that describes these settings: DAPO when they hold DAPO's recipe, else the estimator's label."""
    if est == "grpo" and gen_batch_size is not None and gen_batch_size > train_batch_size and clip_ratio_high > 0.2:
        return "DAPO"
    for a in ALGORITHMS:
        if a.adv_estimator == est and a.label not in RECIPE_LABELS:
            return a.label
    return est


def algorithm_for(s: Scenario) -> str:
    return algorithm_label(
        s.algorithm.adv_estimator, s.data.train_batch_size, s.data.gen_batch_size, s.actor.clip_ratio_high
    )


def recipe_overrides(label: str, train_batch_size: int) -> dict[str, Any]:
    """Settings to copy into the inputs when ``label`` is picked (and to undo when leaving DAPO)."""
    if label == "DAPO":
        return {"actor.clip_ratio_high": 0.28, "data.gen_batch_size": DAPO_GEN_BATCH_FACTOR * train_batch_size}
    return {"actor.clip_ratio_high": 0.2, "data.gen_batch_size": None}


@functools.cache
def model_ids() -> list[str]:
    """Model presets grouped by family (families in alphabetical order), smallest first inside a family."""
    models = model_presets(strict=False)
    return sorted(models, key=lambda m: (models[m].family, models[m].published_params))


def model_label(model_id: str) -> str:
    m = model_presets(strict=False).get(model_id)
    if m is None:
        return model_id
    arch = m.architecture
    size = format_count(arch.total_params())
    if arch.active_params() != arch.total_params():
        size += f" (A{format_count(arch.active_params())})"
    return f"{m.name} · {size} · {m.family}"


@functools.cache
def gpu_ids() -> list[str]:
    """GPU presets, largest usable memory first."""
    gpus = gpu_presets(strict=False)
    return sorted(gpus, key=lambda g: (-gpus[g].usable_memory_gib, gpus[g].name))


def gpu_label(gpu_id: str) -> str:
    g = gpu_presets(strict=False).get(gpu_id)
    return f"{g.name} · {g.usable_memory_gib:g} GiB" if g else gpu_id
