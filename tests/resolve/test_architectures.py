"""The architectures a scenario names (calculator/resolve/architectures.py): preset ids, an inline config.json
(the same architecture in any key order), critic / reward models defaulting to the actor's, the display name, and bad
configs as input errors naming the field."""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator.errors import InputError
from calculator.inputs.presets import model_presets
from calculator.resolve.architectures import model_name, resolve_architectures

BASE = "qwen2.5-7b-grpo-8xh100"
PRESETS = model_presets()


def test_preset_ids():
    s = load_scenario("qwen2.5-7b-ppo-8xh100", overrides={"critic.model_path": "qwen2.5-0.5b"})
    actor, critic, reward = resolve_architectures(s)
    assert actor == PRESETS["qwen2.5-7b"].architecture
    assert critic == PRESETS["qwen2.5-0.5b"].architecture
    assert reward is None  # no reward model path: the actor's architecture is used where needed
    assert model_name(s) == PRESETS["qwen2.5-7b"].name


def test_inline_config_gives_the_preset_architecture_in_any_key_order():
    cfg = dict(PRESETS["qwen2.5-0.5b"].config)
    first = resolve_architectures(load_scenario(BASE, overrides={"model.config": cfg}))[0]
    again = resolve_architectures(load_scenario(BASE, overrides={"model.config": dict(reversed(list(cfg.items())))}))[0]
    assert first == again == PRESETS["qwen2.5-0.5b"].architecture


@pytest.mark.parametrize(
    ("config", "name"),
    [
        ({"_name_or_path": "org/my-model"}, "org/my-model"),
        ({"name": "nickname"}, "nickname"),
        ({}, "custom qwen2"),
    ],
)
def test_display_name_of_an_inline_config(config: dict, name: str):
    cfg = {**{k: v for k, v in PRESETS["qwen2.5-0.5b"].config.items() if k not in ("_name_or_path", "name")}, **config}
    assert model_name(load_scenario(BASE, overrides={"model.config": cfg})) == name


def test_bad_config_names_the_field():
    bad = {**PRESETS["qwen2.5-0.5b"].config, "num_hidden_layers": -1}
    with pytest.raises(
        InputError, match=r"^model\.config: config\.json: field 'num_hidden_layers' must be a non-negative"
    ):
        load_scenario(BASE, overrides={"model.config": bad})
    with pytest.raises(InputError, match=r"^reward_model\.model_path: unknown model 'nope'"):
        load_scenario(BASE, overrides={"reward_model.enable": True, "reward_model.model_path": "nope"})
