"""Algorithms as users name them (PPO, GRPO, DAPO, ...), mapped onto verl's ``algorithm.adv_estimator`` and
the settings of each recipe.

verl selects the algorithm with one key, ``algorithm.adv_estimator``. Some names are a recipe on top of
another algorithm's estimator, so the estimator alone does not tell them: DAPO is GRPO with clip-higher
(``actor.clip_ratio_high = 0.28``) and dynamic sampling (``data.gen_batch_size = 3 x train_batch_size``;
verl ``recipe/dapo``); GSPO is GRPO's estimator with a sequence-level ratio (no memory or batch effect).
Leaving a recipe puts its settings back to the Scenario's defaults (= verl 0.9.1's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from calculator.inputs.scenario import ActorSection, DataSection, Scenario

DAPO_CLIP_RATIO_HIGH = 0.28  # DAPO clip-higher (verl recipe/dapo: clip_ratio_high=0.28)
DAPO_GEN_BATCH_FACTOR = 3  # DAPO recipe: gen_batch_size = 3 x train_batch_size (verl recipe/dapo)


@dataclass(frozen=True)
class Algorithm:
    """An algorithm as users name it, mapped onto verl's ``algorithm.adv_estimator`` and extra settings.

    ``recipe`` holds the settings that define the algorithm beyond the estimator (DAPO: clip-higher) and
    ``gen_batch_factor`` its generation batch relative to the training batch (DAPO: 3); they are copied into
    the inputs when it is picked.
    """

    label: str
    adv_estimator: str
    recipe: dict[str, Any] = field(default_factory=dict)
    gen_batch_factor: int | None = None
    recipe_only: bool = False  # a recipe on another algorithm's estimator: the estimator alone does not tell it
    note: str = ""

    def settings(self, train_batch_size: int) -> dict[str, Any]:
        """The recipe's settings (native dotted fields) for a training batch; empty without a recipe."""
        out = dict(self.recipe)
        if self.gen_batch_factor is not None:
            out["data.gen_batch_size"] = self.gen_batch_factor * train_batch_size
        return out


DAPO = Algorithm(
    "DAPO",
    "grpo",
    {"actor.clip_ratio_high": DAPO_CLIP_RATIO_HIGH},
    gen_batch_factor=DAPO_GEN_BATCH_FACTOR,
    recipe_only=True,
    note="grpo + clip-higher + dynamic sampling",
)

ALGORITHMS: tuple[Algorithm, ...] = (
    Algorithm("PPO", "gae", note="critic"),
    Algorithm("GRPO", "grpo"),
    DAPO,
    Algorithm("GSPO", "grpo", recipe_only=True, note="grpo estimator, sequence-level ratio"),
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
RECIPE_LABELS = tuple(a.label for a in ALGORITHMS if a.recipe_only)
# What the recipe fields are without a recipe: the Scenario's defaults (verl 0.9.1's).
RECIPE_DEFAULTS: dict[str, Any] = {
    "actor.clip_ratio_high": ActorSection.model_fields["clip_ratio_high"].default,
    "data.gen_batch_size": DataSection.model_fields["gen_batch_size"].default,
}


def algorithm_label(est: str, train_batch_size: int, gen_batch_size: int | None, clip_ratio_high: float) -> str:
    """The label that describes these settings: DAPO when they hold DAPO's recipe (clip-higher and a generation
    batch larger than the training batch), else the estimator's label."""
    dynamic_sampling = gen_batch_size is not None and gen_batch_size > train_batch_size
    clip_higher = clip_ratio_high > RECIPE_DEFAULTS["actor.clip_ratio_high"]
    if est == DAPO.adv_estimator and dynamic_sampling and clip_higher:
        return DAPO.label
    for a in ALGORITHMS:
        if a.adv_estimator == est and not a.recipe_only:
            return a.label
    return est


def algorithm_for(s: Scenario) -> str:
    """The label of a scenario's algorithm (see :func:`algorithm_label`)."""
    return algorithm_label(
        s.algorithm.adv_estimator, s.data.train_batch_size, s.data.gen_batch_size, s.actor.clip_ratio_high
    )


def recipe_overrides(label: str, train_batch_size: int) -> dict[str, Any]:
    """Settings to copy into the inputs when ``label`` is picked: its recipe, or the defaults (which undo a
    recipe) for an algorithm without one."""
    algorithm = ALGORITHM_BY_LABEL.get(label)
    recipe = algorithm.settings(train_batch_size) if algorithm is not None else {}
    return recipe or dict(RECIPE_DEFAULTS)


# verl's PPO examples give the critic the actor's micro-batch (examples/ppo_trainer/run_deepseek7b_llm.sh:
# actor 8 / critic 8; docs/start/quickstart.rst: 4 / 4); the quickstart's 4 when the actor has none either.
QUICKSTART_MICRO_BATCH_PER_GPU = 4


def role_settings(s: Scenario) -> dict[str, Any]:
    """What a critic-using algorithm (``gae``, PPO) needs that a critic-free scenario leaves unset, so that
    switching to PPO gives a config verl accepts (issue 13 item 8). verl 0.9.1 ``CriticConfig.__post_init__``
    raises when neither ``critic.ppo_micro_batch_size(_per_gpu)`` is set and dynamic batching is off (the
    critic's ``use_dynamic_bsz`` defaults to the actor's in ``ppo_trainer.yaml``). Returns native dotted
    fields: the critic's micro-batch = the actor's, as verl's PPO examples set it; empty when nothing is missing.
    Left out: a critic enabled without PPO (``critic.enable``) keeps what the user set."""
    if s.algorithm.adv_estimator != "gae" or s.critic.ppo_micro_batch_size_per_gpu is not None:
        return {}
    dynamic = s.critic.use_dynamic_bsz if s.critic.use_dynamic_bsz is not None else s.actor.use_dynamic_bsz
    if dynamic:
        return {}
    micro = s.actor.ppo_micro_batch_size_per_gpu or QUICKSTART_MICRO_BATCH_PER_GPU
    return {"critic.ppo_micro_batch_size_per_gpu": micro}


__all__ = [
    "ALGORITHMS",
    "ALGORITHM_BY_LABEL",
    "DAPO",
    "DAPO_CLIP_RATIO_HIGH",
    "DAPO_GEN_BATCH_FACTOR",
    "RECIPE_DEFAULTS",
    "RECIPE_LABELS",
    "Algorithm",
    "algorithm_for",
    "algorithm_label",
    "recipe_overrides",
    "role_settings",
]
