"""The placement keys and entry modules against verl 0.9.1's real recipe configs (the wheel's
``verl/experimental/{one_step_off_policy,fully_async_policy}``), read with ``zipfile`` as in ``test_verl_real``."""

from __future__ import annotations

import yaml

from calculator.inputs.placement import PlacementSection
from calculator.verl.placement_keys import ENTRY_MODULES, HYBRID_KEY, PLACEMENT_KEYS
from tests.reference.test_verl_real import _flat, generated, wheel  # noqa: F401  (fixtures)

RECIPES = {
    "one_step_off": "verl/experimental/one_step_off_policy/config/one_step_off_ppo_trainer.yaml",
    "fully_async": "verl/experimental/fully_async_policy/config/fully_async_ppo_trainer.yaml",
}


def _recipe(wheel, mode: str) -> dict:  # noqa: F811
    return _flat(yaml.safe_load(wheel.read(RECIPES[mode])))


def test_hybrid_engine_key_exists(generated):  # noqa: F811
    assert generated["fsdp"][HYBRID_KEY] is True  # verl's default: colocated
    assert generated["megatron"][HYBRID_KEY] is True


def test_every_placement_key_is_in_its_recipe_config_with_our_default(wheel):  # noqa: F811
    for native, verl, modes in PLACEMENT_KEYS:
        for mode in modes:
            cfg = _recipe(wheel, mode)
            assert verl in cfg, f"{verl} not in {RECIPES[mode]}"
        default = PlacementSection.model_fields[native.split(".", 1)[1]].default
        assert _recipe(wheel, modes[-1])[verl] == default, native


def test_recipe_forces_the_engine_awake(wheel):  # noqa: F811
    # the pool model keeps the engine awake: the recipe config says free_cache_engine False
    assert _recipe(wheel, "one_step_off")["actor_rollout_ref.rollout.free_cache_engine"] is False


def test_entry_modules_exist(wheel):  # noqa: F811
    names = set(wheel.namelist())
    present = [m for m in ENTRY_MODULES if m.replace(".", "/") + ".py" in names]
    assert "verl.experimental.one_step_off_policy.main_ppo" in present
    assert "verl.experimental.fully_async_policy.fully_async_main" in present
