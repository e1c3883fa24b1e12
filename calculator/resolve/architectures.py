"""The architectures a scenario names (actor, critic, reward model) and the model's display name.

A preset id is looked up in the catalogue; an inline ``model.config`` is parsed once per distinct config
(cached by its canonical JSON text). An unknown id or a config the parser refuses is an :class:`InputError`
naming the field.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from pydantic import ValidationError

from calculator.errors import InputError, from_validation_error
from calculator.inputs.presets import get_model
from calculator.inputs.scenario import Scenario
from calculator.memo import last_by_identity
from calculator.model.architecture import Architecture, ArchitectureError, parse_hf_config


@functools.lru_cache(maxsize=512)
def _arch_from_json(cfg_json: str) -> Architecture:
    return parse_hf_config(json.loads(cfg_json))


# Architecture fields computed from others when config.json does not give them (the hint names the inputs).
_DERIVED = {"head_dim": "hidden_size / num_attention_heads"}


def config_error(err: ValidationError, config: dict[str, Any], field: str = "model.config") -> InputError:
    """A config.json that parsed into an impossible architecture (``hidden_size`` smaller than the head count
    gives ``head_dim`` 0): one line per problem naming the config.json field, never pydantic's own text."""
    problems = []
    for line in from_validation_error(err, prefix=f"{field}.").problems:
        name = line.split(":", 1)[0].removeprefix(f"{field}.")
        hint = f" (from {_DERIVED[name]})" if name in _DERIVED and name not in config else ""
        problems.append(line.replace(f"{field}.{name}:", f"{field}.{name}{hint}:", 1))
    return InputError(problems)


def parse_config(config: Any, field: str = "model.config") -> Architecture:
    """An HF config.json mapping -> Architecture; every refusal an InputError naming ``field`` and the key."""
    try:
        return parse_hf_config(config)
    except ArchitectureError as err:
        raise InputError(f"{field}: {err}") from None
    except ValidationError as err:
        raise config_error(err, config if isinstance(config, dict) else {}, field) from None


def _arch(model_id: str | None, config: dict[str, Any] | None, field: str) -> Architecture:
    if config is not None:
        try:
            return _arch_from_json(json.dumps(config, sort_keys=True, default=str))
        except ArchitectureError as err:
            raise InputError(f"{field}: {err}") from None
        except ValidationError as err:
            raise config_error(err, config, field) from None
        except (TypeError, ValueError, RecursionError) as err:  # keys of mixed types, nesting json cannot write
            raise InputError(f"{field}: not a JSON object of config.json fields ({type(err).__name__})") from None
    assert model_id is not None
    return get_model(model_id, field).architecture


@last_by_identity  # resolve() and verl's parallel checks ask for the same scenario's (calculator.memo)
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
