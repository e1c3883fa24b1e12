"""Preset loading: YAML files under presets/{models,gpus,scenarios}/, validated by the same models.

A team can add its own GPUs, prices, models and scenarios in a directory named by the
``RLPLAN_PRESETS_DIR`` environment variable (same layout); its files are merged over the
shipped ones (same id wins) and validated the same way. Loading is the calculator's only I/O.

A preset file that cannot be read or does not validate is skipped and reported, never fatal to the
lookups (``get_model``, ``get_gpu``, ``load_scenario``): a broken team file leaves the shipped presets
usable. ``preset_problems()`` names every skipped file; ``model_presets()``, ``gpu_presets()`` and
``scenario_presets()`` raise :class:`InputError` for them unless called with ``strict=False``.

Every preset file is read through :mod:`calculator.inputs.readers` (regular files only, inside the preset
directories, at most ``MAX_INPUT_BYTES``, bounded YAML); at most ``MAX_PRESET_FILES`` files per kind and
directory are read. A preset id chosen by a user (``scenario_preset``) is looked up, never opened as a path.
A shipped file whose text is the one recorded in ``presets/<kind>/catalogue.json`` is not parsed again: its
mapping comes from there (``calculator.inputs.catalogue``; validated as any other).
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from calculator.errors import InputError, from_validation_error
from calculator.inputs.catalogue import cached_mapping, load_catalogue
from calculator.inputs.hardware import GpuSpec
from calculator.inputs.limits import MAX_INPUT_BYTES, MAX_NESTING, MAX_PRESET_FILES, MAX_YAML_VALUES
from calculator.inputs.readers import (
    MAX_YAML_BYTES,
    RefusedInput,
    mapping_from_text,
    read_file_text,
    read_json_text,
    read_mapping_file,
    read_yaml_text,
    yaml_files,
)
from calculator.memo import forget_all
from calculator.model.architecture import Architecture, ArchitectureError, parse_hf_config

# The bounded readers live in calculator.inputs.readers; these names stay importable from here.

__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_NESTING",
    "MAX_YAML_BYTES",
    "MAX_YAML_VALUES",
    "RefusedInput",
    "read_file_text",
    "read_json_text",
    "read_mapping_file",
    "read_yaml_text",
]

PRESETS_DIR = Path(__file__).resolve().parents[2] / "presets"
EXTRA_PRESETS_ENV = "RLPLAN_PRESETS_DIR"


# The scenario a bare command starts from (the dashboard's first view, and the CLI when neither SCENARIO nor
# --verl is given): GRPO on a 7B model, set the way verl's GRPO quickstart sets it (issue 13 item 1). A launch
# script without a SCENARIO starts from verl's own defaults instead, as verl would.
DEFAULT_SCENARIO = "qwen2.5-7b-grpo-8xh100"


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
        """The parsed config (per preset object: every estimate asks, and the JSON key costs ~15 us)."""
        hit = _ARCH_OF.get(id(self))
        if hit is not None and hit[0] is self:
            return hit[1]
        arch = _architecture_cached(self.id, json.dumps(self.config, sort_keys=True))
        if len(_ARCH_OF) >= _MAX_ARCH_OF:  # presets reloaded many times (clear_cache): start afresh
            _ARCH_OF.clear()
        _ARCH_OF[id(self)] = (self, arch)
        return arch


# id(preset) -> (preset, its architecture); the preset is kept so that its id cannot be reused while listed.
_ARCH_OF: dict[int, tuple[ModelPreset, Architecture]] = {}
_MAX_ARCH_OF = 1024


@functools.lru_cache(maxsize=256)
def _architecture_cached(_id: str, cfg_json: str) -> Architecture:
    return parse_hf_config(json.loads(cfg_json))


def _extra_dir() -> Path | None:
    extra = os.environ.get(EXTRA_PRESETS_ENV)
    return Path(extra) if extra else None


def extra_presets_dir() -> Path | None:
    """The team's preset directory (``$RLPLAN_PRESETS_DIR``), or None when unset."""
    return _extra_dir()


def _preset_dirs(kind: str) -> list[Path]:
    dirs = [PRESETS_DIR / kind]
    extra = _extra_dir()
    if extra is not None:
        dirs.append(extra / kind)
    return dirs


T = TypeVar("T")


@dataclass(frozen=True)
class _Loaded(Generic[T]):
    """The presets of one kind that loaded, and one message per file that did not (naming the file)."""

    items: dict[str, T]
    problems: tuple[str, ...]


def _preset_files(d: Path) -> tuple[list[Path], int]:
    """The ``*.yaml`` / ``*.yml`` files of a preset directory (at most ``MAX_PRESET_FILES``) and how many more
    there were."""
    return yaml_files(d, MAX_PRESET_FILES)


def _roots() -> list[Path]:
    """The directories preset files may live in (a symbolic link leading elsewhere is refused)."""
    extra = _extra_dir()
    return [PRESETS_DIR] + ([extra] if extra is not None else [])


def _load_file(f: Path, what: str, model: type[BaseModel] | None, parsed: Any = None) -> tuple[str, Any]:
    """(id, preset) of one file; raises InputError naming the file. ``parsed`` is the file's catalogue entry
    (``calculator.inputs.catalogue``): its mapping is used when the file's text is the one recorded."""
    text = read_file_text(f, what, within=_roots())
    data = cached_mapping(parsed, text)
    if data is None:
        data = mapping_from_text(text, what)
    if model is None:
        return f.stem, data
    try:
        obj = model(**data)
    except ValidationError as err:
        raise from_validation_error(err, prefix=f"{what}: ") from None
    except (ArchitectureError, TypeError) as err:
        raise InputError(f"{what}: {err}") from None
    return obj.id, obj


def _load_kind(kind: str, model: type[BaseModel] | None) -> _Loaded[Any]:
    out: dict[str, Any] = {}
    problems: list[str] = []
    for d in _preset_dirs(kind):
        if not d.is_dir():
            continue
        shipped = d.parent == PRESETS_DIR
        where = f"{kind}" if shipped else f"${EXTRA_PRESETS_ENV}/{kind}"
        files, left_out = _preset_files(d)
        parsed = load_catalogue(PRESETS_DIR, kind) if shipped else {}
        if left_out:
            problems.append(f"{kind} presets in {where}: more than {MAX_PRESET_FILES:,} files; {left_out:,} skipped")
        for f in files:
            what = f"{kind} preset {f.name}" if shipped else f"{kind} preset {where}/{f.name}"
            try:
                key, obj = _load_file(f, what, model, parsed.get(f.name))
            except InputError as err:  # one line per file, naming it, with every problem of the file
                problems.append(f"{what}: " + "; ".join(p.removeprefix(f"{what}: ") for p in err.problems))
                continue
            out[key] = obj
    return _Loaded(out, tuple(problems))


@functools.lru_cache(maxsize=1)
def _models() -> _Loaded[ModelPreset]:
    return _load_kind("models", ModelPreset)


@functools.lru_cache(maxsize=1)
def _gpus() -> _Loaded[GpuSpec]:
    return _load_kind("gpus", GpuSpec)


@functools.lru_cache(maxsize=1)
def _scenarios() -> _Loaded[dict[str, Any]]:
    return _load_kind("scenarios", None)


def clear_cache() -> None:
    """Forget loaded presets (after the presets directory changed), and every result remembered from them
    (``calculator.memo.forget_all``)."""
    for fn in (_models, _gpus, _scenarios):
        fn.cache_clear()
    forget_all()


def _checked(loaded: _Loaded[T], strict: bool) -> dict[str, T]:
    if strict and loaded.problems:
        raise InputError(list(loaded.problems))
    return dict(loaded.items)


def model_presets(*, strict: bool = True) -> dict[str, ModelPreset]:
    """Model presets by id; a preset file that cannot be used raises, or with ``strict=False`` is left out."""
    return _checked(_models(), strict)


def gpu_presets(*, strict: bool = True) -> dict[str, GpuSpec]:
    """GPU presets by id; a preset file that cannot be used raises, or with ``strict=False`` is left out."""
    return _checked(_gpus(), strict)


def scenario_presets(*, strict: bool = True) -> dict[str, dict[str, Any]]:
    """Raw scenario mappings by id (file stem); ``load_scenario`` validates them. A file that is not a
    YAML mapping raises, or with ``strict=False`` is left out."""
    return {k: dict(v) for k, v in _checked(_scenarios(), strict).items()}


def scenario_preset(preset_id: str) -> dict[str, Any]:
    """The raw mapping of one scenario preset, by id. An id that is not in the catalogue is an
    :class:`InputError`; it is never read as a file path (the web app hands user-chosen ids here)."""
    presets = scenario_presets(strict=False)
    if not isinstance(preset_id, str) or preset_id not in presets:
        raise _unknown("scenario preset", "preset", str(preset_id), list(presets), _skipped_hint(_scenarios()))
    return presets[preset_id]


def preset_problems() -> list[str]:
    """One message per preset file that was skipped (it names the file), and a note when
    ``RLPLAN_PRESETS_DIR`` names no directory. Empty when every preset loaded."""
    problems: list[str] = []
    extra = _extra_dir()
    if extra is not None and not extra.is_dir():
        problems.append(f"{EXTRA_PRESETS_ENV}={extra}: not a directory; only the shipped presets are used")
    for loaded in (_models(), _gpus(), _scenarios()):
        problems += loaded.problems
    return problems


@dataclass(frozen=True)
class Presets:
    """Every preset that loaded, and the files that did not (``load_presets``)."""

    models: dict[str, ModelPreset]
    gpus: dict[str, GpuSpec]
    scenarios: dict[str, dict[str, Any]]
    problems: tuple[str, ...]


def load_presets(*, strict: bool = False) -> Presets:
    """All presets at once. ``strict=False`` (a server that must keep running): broken files are left
    out and listed in ``problems``; ``strict=True``: the first kind with a broken file raises."""
    return Presets(
        models=model_presets(strict=strict),
        gpus=gpu_presets(strict=strict),
        scenarios=scenario_presets(strict=strict),
        problems=tuple(preset_problems()),
    )


def _skipped_hint(loaded: _Loaded[Any]) -> str:
    return f" (preset files skipped: {'; '.join(loaded.problems)})" if loaded.problems else ""


def _unknown(kind: str, field: str, value: str, known: list[str], skipped: str = "") -> InputError:
    close = difflib.get_close_matches(value.lower(), known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return InputError(f"{field}: unknown {kind} {value[:200]!r}{hint} (known: {', '.join(sorted(known))}){skipped}")


def get_model(model_id: str, field: str = "model.path") -> ModelPreset:
    loaded = _models()
    models = loaded.items
    if model_id in models:
        return models[model_id]
    lowered = {k.lower(): v for k, v in models.items()}
    if model_id.lower() in lowered:
        return lowered[model_id.lower()]
    by_repo = {m.hf_repo.lower(): m for m in models.values()}
    key = model_id.lower().rstrip("/").split("huggingface.co/")[-1]
    if key in by_repo:
        return by_repo[key]
    raise _unknown("model", field, model_id, list(models), _skipped_hint(loaded))


def get_gpu(gpu_id: str, field: str = "hardware.gpu") -> GpuSpec:
    loaded = _gpus()
    gpus = loaded.items
    if gpu_id in gpus:
        return gpus[gpu_id]
    lowered = {k.lower(): v for k, v in gpus.items()} | {v.name.lower(): v for v in gpus.values()}
    if gpu_id.lower() in lowered:
        return lowered[gpu_id.lower()]
    raise _unknown("GPU", field, gpu_id, list(gpus), _skipped_hint(loaded))


# Fine-tunes and dated releases share their base model's config.json (``model_id_for_path``); a dated or thinking
# release may change it (Qwen's 2507 releases raise max_position_embeddings).
_VARIANT_SUFFIX = re.compile(r"-(instruct|chat|base|hf|it|thinking|bf16|\d{4})$")
_LATER_RELEASE = re.compile(r"-(thinking|\d{4})(-|$)")


def model_id_for_path(path: str) -> str | None:
    """The model preset a checkpoint path or Hugging Face repo id names (``Qwen/Qwen2.5-7B-Instruct``,
    ``/models/Qwen3-30B-A3B-Instruct-2507``): its id, its repo, its repo's last part, else the same with fine-tune and
    release suffixes stripped one at a time (Qwen3-30B-A3B-Instruct-2507 -> Qwen3-30B-A3B, DeepSeek-V3-0324 ->
    DeepSeek-V3); None when none matches. Quantised checkpoints (-FP8, -AWQ, ...) are not stripped: their weights
    differ. verl's ``model.path`` and the CLI's ``--model`` both read paths with it."""
    presets = model_presets(strict=False)
    base = path.rstrip("/").split("/")[-1].lower()
    repo = "/".join(path.rstrip("/").split("/")[-2:]).lower()
    for m in presets.values():
        if m.hf_repo.lower() == repo or m.id == path:
            return m.id
    for m in presets.values():
        if m.id == base or m.hf_repo.split("/")[-1].lower() == base:
            return m.id
    stripped = base
    while True:
        shorter = _VARIANT_SUFFIX.sub("", stripped)
        if shorter == stripped:
            return None
        stripped = shorter
        for m in presets.values():
            if m.id == stripped or m.hf_repo.split("/")[-1].lower() in (stripped, stripped + "-hf"):
                return m.id


def is_later_release(path: str) -> bool:
    """Whether a checkpoint path names a dated or thinking release (``-2507``, ``-Thinking``) of a model."""
    return bool(_LATER_RELEASE.search(path.rstrip("/").split("/")[-1].lower()))
