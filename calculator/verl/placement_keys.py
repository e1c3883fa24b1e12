"""verl's keys and entry modules for separate rollout and trainer pools (DESIGN.md 4.10): import and export.

Sources (github volcengine/verl; the recipes moved from ``recipe/`` to ``verl/experimental/`` in 2025):
- entry modules: ``python3 -m verl.experimental.one_step_off_policy.main_ppo`` (docs/advance/one_step_off.md also
  shows ``async_main_ppo``; older releases ``recipe.one_step_off_policy.*``), and
  ``python -m verl.experimental.fully_async_policy.fully_async_main`` (``recipe.fully_async_policy.*`` before);
- ``actor_rollout_ref.hybrid_engine=False`` (both recipes' launch scripts), ``rollout.nnodes`` /
  ``rollout.n_gpus_per_node`` (both recipe configs, ``*_ppo_trainer.yaml``), ``async_training.*``
  (``fully_async_ppo_trainer.yaml``: staleness_threshold 0.1, trigger_parameter_sync_step 4, require_batches 1,
  partial_rollout True; ``actor_rollout_ref.actor.use_rollout_log_probs`` True, ``async_training.*`` before 0.9.1);
- fully_async ignores ``data.train_batch_size`` (its quick start sets 0) and streams ``data.gen_batch_size=1``
  (docs/advance/fully_async.md "Parameter Description").
"""

from __future__ import annotations

from typing import Any

ENTRY_KEY = "entry_module"  # pseudo override the script reader adds for ``python -m <module>``
HYBRID_KEY = "actor_rollout_ref.hybrid_engine"

ENTRY_MODULES: dict[str, str] = {  # the recipes' trainers (verl.trainer.main_ppo is colocated)
    "verl.experimental.one_step_off_policy.main_ppo": "one_step_off",
    "verl.experimental.one_step_off_policy.async_main_ppo": "one_step_off",
    "recipe.one_step_off_policy.main_ppo": "one_step_off",
    "recipe.one_step_off_policy.async_main_ppo": "one_step_off",
    "verl.experimental.fully_async_policy.fully_async_main": "fully_async",
    "recipe.fully_async_policy.fully_async_main": "fully_async",
}
LAUNCH_MODULES: dict[str, str] = {
    "one_step_off": "verl.experimental.one_step_off_policy.main_ppo",
    "fully_async": "verl.experimental.fully_async_policy.fully_async_main",
}

# (native field, verl key, modes it is exported for)
PLACEMENT_KEYS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("placement.rollout_nnodes", "rollout.nnodes", ("one_step_off", "fully_async")),
    ("placement.rollout_n_gpus_per_node", "rollout.n_gpus_per_node", ("one_step_off", "fully_async")),
    ("placement.staleness_threshold", "async_training.staleness_threshold", ("fully_async",)),
    ("placement.trigger_parameter_sync_step", "async_training.trigger_parameter_sync_step", ("fully_async",)),
    ("placement.require_batches", "async_training.require_batches", ("fully_async",)),
    ("placement.partial_rollout", "async_training.partial_rollout", ("fully_async",)),
    # verl 0.9.1 moved it from async_training.* to the actor (fully_async_ppo_trainer.yaml)
    ("placement.use_rollout_log_probs", "actor_rollout_ref.actor.use_rollout_log_probs", ("fully_async",)),
)
_BOOL_FIELDS = ("placement.partial_rollout", "placement.use_rollout_log_probs")
_IMPORT_ALIASES = {"async_training.use_rollout_log_probs": "placement.use_rollout_log_probs"}  # before 0.9.1
_BY_VERL = {**{verl: native for native, verl, _ in PLACEMENT_KEYS}, **_IMPORT_ALIASES}
# Recipe keys accepted and not modelled.
IGNORED_RECIPE_PREFIXES = (
    "rollout.total_rollout_steps",
    "rollout.test_freq",
    "rollout.total_epochs",
    "async_training.",
    "actor_rollout_ref.rollout.calculate_log_probs",
    "algorithm.rollout_correction.",
)
# Fields verl has no key for in any config.
RLPLAN_ONLY_PLACEMENT = ("placement.physical_gpus_per_node", "placement.mode")


def is_placement_key(key: str) -> bool:
    """Keys this module reads (the importer skips them in its generic pass)."""
    return key in (ENTRY_KEY, HYBRID_KEY) or key in _BY_VERL or any(key.startswith(p) for p in IGNORED_RECIPE_PREFIXES)


def _truthy(v: Any) -> bool:
    return v if isinstance(v, bool) else str(v).strip().lower() not in ("false", "0", "no", "off")


def _mode(given: dict[str, Any]) -> tuple[str, list[str]]:
    notes: list[str] = []
    entry = given.get(ENTRY_KEY)
    hybrid = given.get(HYBRID_KEY)
    by_entry = ENTRY_MODULES.get(str(entry)) if entry is not None else None
    split_keys = any(k.startswith("async_training.") for k in given)
    if by_entry in ("one_step_off", "fully_async"):
        if hybrid is None or _truthy(hybrid):
            notes.append(f"{entry}: the recipe needs {HYBRID_KEY}=False (separate pools); estimated as {by_entry}")
        return by_entry, notes
    if hybrid is not None and not _truthy(hybrid):
        mode = "fully_async" if split_keys else "one_step_off"
        notes.append(f"{HYBRID_KEY}=False without a recipe entry module: estimated as {mode}")
        return mode, notes
    return "colocated", notes


def import_placement(given: dict[str, Any], value) -> tuple[dict[str, Any], list[str]]:  # type: ignore[no-untyped-def]
    """Native overrides for the placement keys in ``given`` (verl keys); ``value(key)`` resolves a given key."""
    mode, notes = _mode(given)
    natives: dict[str, Any] = {}
    if mode == "colocated":
        if any(k in given for k in _BY_VERL):
            notes.append(
                "rollout.nnodes / rollout.n_gpus_per_node / async_training.*: only used by the recipes; ignored"
            )
        return natives, notes
    natives["placement.mode"] = mode
    for verl, native in _BY_VERL.items():
        modes = next(m for n, _, m in PLACEMENT_KEYS if n == native)
        if verl in given and mode in modes:
            v = value(verl)
            if v is not None:  # None: unresolved (the importer noted it)
                natives[native] = _truthy(v) if native in _BOOL_FIELDS else v
    if mode == "fully_async":
        _fully_async_batches(given, value, natives, notes)
    return natives, notes


def _fully_async_batches(given: dict[str, Any], value, natives: dict[str, Any], notes: list[str]) -> None:  # type: ignore[no-untyped-def]
    """fully_async streams: train_batch_size is not used (0 in verl's quick start), gen_batch_size is 1."""
    if "data.gen_batch_size" in given:
        natives["data.gen_batch_size"] = None
        notes.append("fully_async: data.gen_batch_size (streaming, one prompt at a time) is not a batch here; ignored")
    tbs = value("data.train_batch_size") if "data.train_batch_size" in given else None
    try:
        zero = tbs is not None and int(tbs) < 1
        trig = int(natives.get("placement.trigger_parameter_sync_step", 4))
        req = int(natives.get("placement.require_batches", 1))
        mini = int(value("actor_rollout_ref.actor.ppo_mini_batch_size") or 0)
    except (TypeError, ValueError):
        return  # a value the Scenario will reject with its own message
    if zero and mini > 0:
        natives["data.train_batch_size"] = trig * req * mini
        notes.append(
            f"fully_async: data.train_batch_size={tbs} is not used; set to trigger_parameter_sync_step x "
            f"require_batches x ppo_mini_batch_size = {trig * req * mini} (prompts per weight sync)"
        )


def placement_items(s: Any, base: Any, items: list[tuple[str, str, Any]]) -> list[tuple[str, str, Any]]:
    """The export's items with the placement's keys: a split writes ``hybrid_engine=False``, the pool keys (and
    fully_async's ``async_training.*``, ``data.train_batch_size=0``, ``data.gen_batch_size=1``, which its
    rollouter asserts: ``fully_async_rollouter.py``); colocated writes ``hybrid_engine=True`` only over a split
    base."""
    p = s.placement
    if p.mode == "colocated":
        if base is not None and base.placement.mode != "colocated":
            return [*items, ("trainer", HYBRID_KEY, True)]
        return items
    if p.mode == "fully_async":
        fixed = {"data.train_batch_size": 0, "data.gen_batch_size": 1}
        items = [(g, k, fixed.get(k, v)) for g, k, v in items if k != "data.gen_batch_size"]
        items.append(("data", "data.gen_batch_size", 1))
    out = [*items, ("trainer", HYBRID_KEY, False)]
    for native, verl, modes in PLACEMENT_KEYS:
        if p.mode in modes:
            out.append(("trainer", verl, getattr(p, native.split(".", 1)[1])))
    return out


def launch_module(s: Any) -> str:
    return LAUNCH_MODULES.get(s.placement.mode, "verl.trainer.main_ppo")


__all__ = [
    "ENTRY_KEY",
    "ENTRY_MODULES",
    "PLACEMENT_KEYS",
    "RLPLAN_ONLY_PLACEMENT",
    "placement_items",
    "import_placement",
    "is_placement_key",
    "launch_module",
]
