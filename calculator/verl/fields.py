"""Scenario fields and verl values: the field tree, its defaults, and value conversion both ways.

Most values pass between a Scenario field and its verl key unchanged; the exceptions are converted here:
a model preset id <-> its Hugging Face repo (``actor_rollout_ref.model.path``), rlplan's
``model.target_modules`` short names <-> the module lists verl/PEFT accept, ``rollout.quantization``
``none`` <-> null, the KV-cache dtype (vLLM ``--kv-cache-dtype fp8`` = SGLang ``fp8_e4m3``) and the
optimizer name (FSDP: a torch.optim class name; Megatron: adam / sgd / muon). The Scenario's defaults equal
verl 0.9.1's for every mapped field (checked against the wheel by ``tests/test_verl_real.py``).
``native_to_verl_items`` gives the overrides that set one field (the planner's settings tables).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel

from calculator.inputs.presets import is_later_release, model_id_for_path, model_presets
from calculator.inputs.scenario import Scenario
from calculator.verl.defaults import verl_defaults
from calculator.verl.keys import _A, _M, _R, TARGET_MODULES, VERL_PLACEHOLDER_MODEL_PATH, native_to_verl
from calculator.verl.shell import _Unresolved

if TYPE_CHECKING:
    from calculator.verl.interpolate import _Resolver

# --------------------------------------------------------------------------------------------------
# Scenario field helpers


def _leaf_fields(model: type[BaseModel] = Scenario, prefix: str = "") -> list[str]:
    out: list[str] = []
    for name, f in model.model_fields.items():
        ann = f.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out += _leaf_fields(ann, f"{prefix}{name}.")
        else:
            out.append(prefix + name)
    return out


SCENARIO_FIELDS: tuple[str, ...] = tuple(_leaf_fields())


def native_field_exists(key: str) -> bool:
    """Whether ``a.b.c`` names a field of the Scenario tree (dict-typed fields accept any sub-key)."""
    model: type[BaseModel] | None = Scenario
    for part in key.split("."):
        if model is None:
            return False
        fld = model.model_fields.get(part)
        if fld is None:
            return False
        ann = fld.annotation
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return model is None


def _field_info(native: str):
    model: type[BaseModel] = Scenario
    parts = native.split(".")
    for part in parts[:-1]:
        model = model.model_fields[part].annotation  # type: ignore[assignment]
    return model.model_fields[parts[-1]]


_DEFAULTS = Scenario.model_construct()  # Scenario() itself is invalid: it has no actor micro-batch


def native_default(native: str) -> Any:
    """The Scenario's default for a dotted field (= verl 0.9.1's default for mapped fields)."""
    node: Any = _DEFAULTS
    for part in native.split("."):
        node = getattr(node, part)
    return node


def _get(s: Scenario | dict[str, Any], native: str) -> Any:
    node: Any = s
    for part in native.split("."):
        node = node[part] if isinstance(node, dict) else getattr(node, part)
    return node


def _nullable(native: str) -> bool:
    ann = _field_info(native).annotation
    return ann is None or type(None) in get_args(ann)


def _literal_values(native: str) -> tuple[Any, ...] | None:
    ann = _field_info(native).annotation
    for candidate in (ann, *get_args(ann)):
        if getattr(candidate, "__origin__", None) is Literal:
            return get_args(candidate)
    return None


def engine_of(s: Scenario) -> str:
    return "megatron" if s.actor.strategy == "megatron" else "fsdp"


def native_to_verl_items(key: str, value: Any, scenario: Scenario | None = None) -> list[tuple[str, Any]]:
    """verl overrides that set native field ``key`` to ``value`` (for the planner's settings tables).
    ``hardware.num_gpus`` gives ``trainer.n_gpus_per_node`` and ``trainer.nnodes``."""
    s = scenario or _DEFAULTS
    if key == "hardware.num_gpus":
        per = min(int(value), s.hardware.gpus_per_node)
        return [("trainer.n_gpus_per_node", per), ("trainer.nnodes", max(1, int(value) // per))]
    eng = "megatron" if (key == "actor.strategy" and value == "megatron") else engine_of(s)
    verl_key = native_to_verl(key, eng)
    if verl_key is None:
        return []
    if key == "rollout.kv_cache_dtype":
        name = s.rollout.name
        return [(f"+{_R}.engine_kwargs.{name}.kv_cache_dtype", _kv_dtype_to_verl(value, name))]
    if value is None and key not in ("critic.model_path", "reward_model.model_path"):
        return [(verl_key, verl_defaults(eng).get(verl_key))]  # back to verl's default (may be an interpolation)
    return [(verl_key, _to_verl_value(key, value, s))]


# --------------------------------------------------------------------------------------------------
# Value conversion


def _hf_repo(model_id: str | None) -> str | None:
    if model_id is None:
        return None
    m = model_presets(strict=False).get(model_id)
    return m.hf_repo if m else model_id


def _kv_dtype_to_verl(value: str, engine_name: str) -> str:
    # vLLM: --kv-cache-dtype fp8 (= fp8_e4m3); SGLang: --kv-cache-dtype fp8_e4m3 | fp8_e5m2.
    return "fp8_e4m3" if (value == "fp8" and engine_name == "sglang") else value


def _to_verl_value(native: str, value: Any, s: Scenario) -> Any:
    if native == "model.path":
        return _hf_repo(value)
    if native in ("critic.model_path", "reward_model.model_path"):
        return _hf_repo(value if value is not None else s.model.path)
    if native == "model.target_modules":
        return TARGET_MODULES.get(value, value)
    if native == "rollout.quantization":
        return None if value == "none" else value
    if native == "actor.optim.optimizer":
        if engine_of(s) == "megatron":
            return {"AdamW": "adam", "adam": "adam", "SGD": "sgd"}.get(value, value)
        return {"adam": "Adam"}.get(value, value)  # FSDP: a torch.optim class name
    return value


Converted = tuple[bool, Any, str | None]  # (ok, native value, note)


def _model_path(value: Any, key: str, res: _Resolver) -> Converted:
    if not isinstance(value, str):
        return False, None, f"verl {key}={value!r}: not a path; ignored"
    if value == VERL_PLACEHOLDER_MODEL_PATH:
        return False, None, f"verl {key}: verl's placeholder default ({value}); set the model (--model)"
    mid = model_id_for_path(value)
    if mid is None:
        return (
            False,
            None,
            f"verl override {key}={value}: not a model preset; the model comes from the base scenario or "
            "--model (a preset id or a config.json)",
        )
    return True, mid, _release_note(key, value, mid)


def _release_note(key: str, path: str, model_id: str) -> str | None:
    """A note when the path is a dated or thinking release of the preset it matched (Qwen3-30B-A3B-Instruct-2507 ->
    qwen3-30b-a3b): the same layers, but its config.json may differ (Qwen's 2507 releases raise
    max_position_embeddings to 262,144, which is vLLM's max_model_len when rollout.max_model_len is null)."""
    if not is_later_release(path):
        return None
    return (
        f"verl {key}={path}: estimated with the model preset {model_id}, of which it is a later release; its "
        "config.json may differ (max_position_embeddings, rope scaling): pass it with --model for the exact one"
    )


def _resolved_or_none(res: _Resolver, key: str) -> Any:
    try:
        return res.value(key)
    except _Unresolved:
        return None


def _second_model_path(value: Any, key: str, res: _Resolver) -> Converted:
    """The critic's or reward model's path: None (rlplan's default) when it is the actor's model."""
    if value is None or value == VERL_PLACEHOLDER_MODEL_PATH:
        return True, None, None
    actor_path = _resolved_or_none(res, f"{_M}.path")
    if isinstance(value, str) and actor_path is not None and value.rstrip("/") == str(actor_path).rstrip("/"):
        return True, None, None  # same model as the actor: rlplan's default
    mid = model_id_for_path(str(value))
    if mid is None:
        return False, None, f"verl override {key}={value}: not a model preset; the actor's model is used"
    return True, mid, None


def _critic_strategy(value: Any, key: str, res: _Resolver) -> Converted | None:
    """None (inherit the actor's) when it equals the actor's strategy."""
    return (True, None, None) if value == _resolved_or_none(res, f"{_A}.strategy") else None


def _target_modules(value: Any, key: str, res: _Resolver) -> Converted:
    for name, modules in TARGET_MODULES.items():
        if value == modules or (isinstance(value, list) and isinstance(modules, list) and set(value) == set(modules)):
            return True, name, None
    return False, None, f"verl {key}={value!r}: only all-linear, attention and mlp module sets are modelled; ignored"


def _quantization(value: Any, key: str, res: _Resolver) -> Converted | None:
    return (True, "none", None) if value is None else None


def _kv_cache_dtype(value: Any, key: str, res: _Resolver) -> Converted | None:
    if value in (None, "auto"):
        return True, "auto", None
    if isinstance(value, str) and value.startswith("fp8"):
        return True, "fp8", None
    return None


# Fields whose verl value needs more than the generic check; a converter returning None falls back to it.
_TO_NATIVE: dict[str, Callable[[Any, str, _Resolver], Converted | None]] = {
    "model.path": _model_path,
    "critic.model_path": _second_model_path,
    "reward_model.model_path": _second_model_path,
    "critic.strategy": _critic_strategy,
    "model.target_modules": _target_modules,
    "rollout.quantization": _quantization,
    "rollout.kv_cache_dtype": _kv_cache_dtype,
}
# verl spellings (lower-cased) of a field's values.
_NATIVE_ALIASES: dict[str, dict[str, str]] = {
    "actor.optim.optimizer": {"adamw": "AdamW", "adam": "adam", "sgd": "SGD", "adafactor": "Adafactor"},
}


def _to_native(native: str, value: Any, key: str, res: _Resolver) -> Converted:
    """Convert a resolved verl value to the native field's value: (ok, value, note)."""
    special = _TO_NATIVE.get(native)
    converted = special(value, key, res) if special is not None else None
    if converted is not None:
        return converted
    if native in _NATIVE_ALIASES:
        value = _NATIVE_ALIASES[native].get(str(value).lower(), value)
    if value is None and not _nullable(native):
        return False, None, None  # verl's null = "not set" (e.g. the legacy reward_model.* block)
    allowed = _literal_values(native)
    if allowed is not None and value not in allowed:
        return False, None, f"verl {key}={value!r}: not modelled (rlplan knows {', '.join(map(str, allowed))}); ignored"
    return True, value, None
