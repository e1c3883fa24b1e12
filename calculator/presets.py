"""Preset loading: YAML files under presets/{models,gpus,scenarios}/, validated by the same models.

A team can add its own GPUs, prices, models and scenarios in a directory named by the
``RLPLAN_PRESETS_DIR`` environment variable (same layout); its files are merged over the
shipped ones (same id wins) and validated the same way. Loading is the calculator's only I/O.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from calculator.architecture import Architecture, ArchitectureError, parse_hf_config
from calculator.errors import InputError, from_validation_error
from calculator.hardware import GpuSpec

PRESETS_DIR = Path(__file__).resolve().parent.parent / "presets"
EXTRA_PRESETS_ENV = "RLPLAN_PRESETS_DIR"
MAX_YAML_BYTES = 2 * 2**20  # a preset or uploaded file larger than this is refused


class ModelPreset(BaseModel):
    """A model: its HF config.json (verbatim fields) and its published parameter count."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    name: str
    family: str
    hf_repo: str
    source: str = Field(min_length=1, description="Where the config.json was read.")
    published_params: int = Field(gt=0)
    published_params_source: str = Field(min_length=1)
    config: dict[str, Any]
    notes: str = ""

    @field_validator("config")
    @classmethod
    def _parses(cls, cfg: dict[str, Any]) -> dict[str, Any]:
        parse_hf_config(cfg)  # raises ArchitectureError (a ValueError) naming the field
        return cfg

    @property
    def architecture(self) -> Architecture:
        return _architecture_cached(self.id, json.dumps(self.config, sort_keys=True))


@functools.lru_cache(maxsize=256)
def _architecture_cached(_id: str, cfg_json: str) -> Architecture:
    return parse_hf_config(json.loads(cfg_json))


def read_yaml_text(text: str, what: str) -> Any:
    """Parse YAML safely: no tags that build objects (safe_load), bounded size, alias bombs refused."""
    if len(text.encode("utf-8", "ignore")) > MAX_YAML_BYTES:
        raise InputError(f"{what}: larger than {MAX_YAML_BYTES // 2**20} MiB")
    if text.count("*") > 1000 and text.count("&") > 0:
        raise InputError(f"{what}: too many YAML aliases")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "malformed YAML"
        raise InputError(f"{what}: not valid YAML ({first})") from None
    except RecursionError:
        raise InputError(f"{what}: nested too deeply") from None


def read_mapping_file(path: str | Path, what: str | None = None) -> dict[str, Any]:
    """Read a YAML or JSON file that must hold a mapping."""
    p = Path(path)
    what = what or str(p)
    try:
        if p.stat().st_size > MAX_YAML_BYTES:
            raise InputError(f"{what}: larger than {MAX_YAML_BYTES // 2**20} MiB")
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{what}: cannot read ({exc.__class__.__name__})") from None
    data = read_yaml_text(text, what)
    if not isinstance(data, dict):
        raise InputError(f"{what}: must be a mapping of fields, got {type(data).__name__}")
    return data


def _preset_dirs(kind: str) -> list[Path]:
    dirs = [PRESETS_DIR / kind]
    extra = os.environ.get(EXTRA_PRESETS_ENV)
    if extra:
        dirs.append(Path(extra) / kind)
    return dirs


def _load_kind(kind: str, model: type[BaseModel] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for d in _preset_dirs(kind):
        if not d.is_dir():
            continue
        for f in sorted(d.glob("*.yaml")) + sorted(d.glob("*.yml")):
            data = read_mapping_file(f, f"{kind} preset {f.name}")
            if model is None:
                pid = f.stem
                out[pid] = data
                continue
            try:
                obj = model(**data)
            except ValidationError as err:
                raise from_validation_error(err, prefix=f"{kind} preset {f.name}: ") from None
            except ArchitectureError as err:
                raise InputError(f"{kind} preset {f.name}: {err}") from None
            out[obj.id] = obj
    return out


@functools.lru_cache(maxsize=1)
def _models() -> dict[str, ModelPreset]:
    return _load_kind("models", ModelPreset)


@functools.lru_cache(maxsize=1)
def _gpus() -> dict[str, GpuSpec]:
    return _load_kind("gpus", GpuSpec)


@functools.lru_cache(maxsize=1)
def _scenarios() -> dict[str, dict[str, Any]]:
    return _load_kind("scenarios", None)


def clear_cache() -> None:
    """Forget loaded presets (after the presets directory changed)."""
    for fn in (_models, _gpus, _scenarios):
        fn.cache_clear()


def model_presets() -> dict[str, ModelPreset]:
    return dict(_models())


def gpu_presets() -> dict[str, GpuSpec]:
    return dict(_gpus())


def scenario_presets() -> dict[str, dict[str, Any]]:
    """Raw scenario mappings by id (file stem); ``load_scenario`` validates them."""
    return {k: dict(v) for k, v in _scenarios().items()}


def _unknown(kind: str, field: str, value: str, known: list[str]) -> InputError:
    close = difflib.get_close_matches(value.lower(), known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return InputError(f"{field}: unknown {kind} {value!r}{hint} (known: {', '.join(sorted(known))})")


def get_model(model_id: str, field: str = "model.path") -> ModelPreset:
    models = _models()
    if model_id in models:
        return models[model_id]
    lowered = {k.lower(): v for k, v in models.items()}
    if model_id.lower() in lowered:
        return lowered[model_id.lower()]
    by_repo = {m.hf_repo.lower(): m for m in models.values()}
    key = model_id.lower().rstrip("/").split("huggingface.co/")[-1]
    if key in by_repo:
        return by_repo[key]
    raise _unknown("model", field, model_id, list(models))


def get_gpu(gpu_id: str, field: str = "hardware.gpu") -> GpuSpec:
    gpus = _gpus()
    if gpu_id in gpus:
        return gpus[gpu_id]
    lowered = {k.lower(): v for k, v in gpus.items()} | {v.name.lower(): v for v in gpus.values()}
    if gpu_id.lower() in lowered:
        return lowered[gpu_id.lower()]
    raise _unknown("GPU", field, gpu_id, list(gpus))
