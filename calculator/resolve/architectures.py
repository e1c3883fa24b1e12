"""The architectures a scenario names (actor, critic, reward model) and the model's display name.

A preset id is looked up in the catalogue; an inline ``model.config`` is parsed once per distinct config
(cached by its canonical JSON text). An unknown id or a config the parser refuses is an :class:`InputError`
naming the field.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from calculator.errors import InputError
from calculator.inputs.presets import get_model
from calculator.inputs.scenario import Scenario
from calculator.model.architecture import Architecture, ArchitectureError, parse_hf_config


@functools.lru_cache(maxsize=512)
def _arch_from_json(cfg_json: str) -> Architecture:
    return parse_hf_config(json.loads(cfg_json))


def _arch(model_id: str | None, config: dict[str, Any] | None, field: str) -> Architecture:
    if config is not None:
        try:
            return _arch_from_json(json.dumps(config, sort_keys=True, default=str))
        except ArchitectureError as err:
            raise InputError(f"{field}: {err}") from None
        except (TypeError, ValueError, RecursionError) as err:  # keys of mixed types, nesting json cannot write
            raise InputError(f"{field}: not a JSON object of config.json fields ({type(err).__name__})") from None
    assert model_id is not None
    return get_model(model_id, field).architecture


def resolve_architectures(s: Scenario) -> tuple[Architecture, Architecture | None, Architecture | None]:
    """Actor, critic and reward-model architectures (critic/reward default to the actor's)."""
    actor = _arch(s.model.path, s.model.config, "model.config" if s.model.config is not None else "model.path")
    critic = _arch(s.critic.model_path, None, "critic.model_path") if s.critic.model_path else None
    reward = _arch(s.reward_model.model_path, None, "reward_model.model_path") if s.reward_model.model_path else None
    return actor, critic, reward


def model_name(s: Scenario) -> str:
    if s.model.config is not None:
        return str(
            s.model.config.get("_name_or_path")
            or s.model.config.get("name")
            or f"custom {s.model.config.get('model_type')}"
        )
    return get_model(s.model.path).name
