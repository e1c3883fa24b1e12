"""Preset loading: YAML files under presets/{models,gpus,scenarios}/, validated by the same models.

A team can add its own GPUs, prices, models and scenarios in a directory named by the
``RLPLAN_PRESETS_DIR`` environment variable (same layout); its files are merged over the
shipped ones (same id wins) and validated the same way. Loading is the calculator's only I/O.

A preset file that cannot be read or does not validate is skipped and reported, never fatal to the
lookups (``get_model``, ``get_gpu``, ``load_scenario``): a broken team file leaves the shipped presets
usable. ``preset_problems()`` names every skipped file; ``model_presets()``, ``gpu_presets()`` and
``scenario_presets()`` raise :class:`InputError` for them unless called with ``strict=False``.

Every text read here or handed in by a user (YAML, JSON) goes through :func:`read_yaml_text` /
:func:`read_json_text`: bounded size, bounded nesting, YAML aliases bounded by the number of values they
expand to (a "billion laughs" document is refused before anything walks it), no object-building tags.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from calculator.errors import InputError, from_validation_error
from calculator.inputs.hardware import GpuSpec
from calculator.model.architecture import Architecture, ArchitectureError, parse_hf_config

PRESETS_DIR = Path(__file__).resolve().parents[2] / "presets"
EXTRA_PRESETS_ENV = "RLPLAN_PRESETS_DIR"
MAX_INPUT_BYTES = 2 * 2**20  # a preset, uploaded or pasted text larger than this is refused
MAX_YAML_BYTES = MAX_INPUT_BYTES
MAX_NESTING = 64  # mappings / lists inside each other (configs need < 10; Python's own limit is ~1000)
MAX_YAML_VALUES = 100_000  # values of a YAML document once its aliases are expanded (verl's whole tree: ~2,000)


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


class _Refused(yaml.YAMLError):
    """A YAML document refused for its shape (too deep, too many values after alias expansion)."""


def _yaml_children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_expanded(root: yaml.Node) -> None:
    """Refuse a composed document whose alias expansion is too large, too deep or recursive.

    An alias is a reference to an anchored node, so a few hundred bytes can stand for 10**9 values
    ("billion laughs"); PyYAML builds them as shared references, and the blow-up happens later in
    whatever walks the result (validation, repr, json.dumps). Sizes and heights are memoised per
    node, so this costs one visit per node written in the document, and the recursion is at most
    ``MAX_NESTING`` deep (a path is refused as soon as it gets deeper).
    """
    memo: dict[int, tuple[int, int]] = {}  # id(node) -> (values after expansion, height)
    active: set[int] = set()

    def visit(node: yaml.Node, depth: int) -> tuple[int, int]:
        key = id(node)
        if key in memo:
            count, height = memo[key]
        else:
            if key in active:
                raise _Refused("a YAML alias refers to a node that contains it (recursive alias)")
            if depth > MAX_NESTING:
                raise _Refused(f"nested deeper than {MAX_NESTING} levels once YAML aliases are expanded")
            active.add(key)
            count, height = 1, 1
            for child in _yaml_children(node):
                c, h = visit(child, depth + 1)
                count += c
                height = max(height, h + 1)
                if count > MAX_YAML_VALUES:
                    raise _Refused(
                        f"more than {MAX_YAML_VALUES:,} values once YAML aliases are expanded (an alias bomb?)"
                    )
            active.discard(key)
            memo[key] = (count, height)
        if depth + height - 1 > MAX_NESTING:
            raise _Refused(f"nested deeper than {MAX_NESTING} levels once YAML aliases are expanded")
        return count, height

    visit(root, 1)


class _PyEventParser(Reader, Scanner, Parser):
    """PyYAML's pure-Python event parser (used when libyaml is not installed)."""

    def __init__(self, stream: Any) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)


try:  # libyaml's event parser (~10x faster); composing stays in Python so that it can be bounded
    from yaml.cyaml import CParser as _EventParser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _EventParser = _PyEventParser  # type: ignore[misc,assignment]


def _bounded_loader(event_parser: type) -> type:
    """A safe YAML loader class (``SafeConstructor``: no tags that build Python objects) on ``event_parser``,
    whose composer refuses, before anything is constructed, documents nested deeper than ``MAX_NESTING`` or
    holding more than ``MAX_YAML_VALUES`` values, counting each alias as the values it expands to."""

    class Loader(Composer, event_parser, SafeConstructor, Resolver):  # type: ignore[misc,valid-type]
        def __init__(self, stream: Any) -> None:
            event_parser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self._depth = 0
            self._composed = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self._depth += 1
            self._composed += 1
            try:
                if self._depth > MAX_NESTING:
                    raise _Refused(f"nested deeper than {MAX_NESTING} levels")
                if self._composed > MAX_YAML_VALUES:  # written-out values count too: stop before composing all
                    raise _Refused(f"more than {MAX_YAML_VALUES:,} values")
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def compose_document(self) -> Any:
            node = super().compose_document()
            if node is not None:
                _check_expanded(node)
            return node

    return Loader


BoundedSafeLoader = _bounded_loader(_EventParser)


def _too_large(text: str, max_bytes: int) -> bool:
    return len(text) > max_bytes or (4 * len(text) > max_bytes and len(text.encode("utf-8", "replace")) > max_bytes)


def _size_text(max_bytes: int) -> str:
    return f"{max_bytes // 2**20} MiB" if max_bytes % 2**20 == 0 else f"{max_bytes // 1024} KiB"


def read_yaml_text(text: str, what: str, *, max_bytes: int = MAX_INPUT_BYTES) -> Any:
    """Parse YAML safely: no tags that build objects, bounded size and nesting, alias bombs refused.
    Raises :class:`InputError` naming ``what``."""
    if _too_large(text, max_bytes):
        raise InputError(f"{what}: larger than {_size_text(max_bytes)}")
    try:
        loader = BoundedSafeLoader(text)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except _Refused as exc:
        raise InputError(f"{what}: refused: {exc}") from None
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "malformed YAML"
        raise InputError(f"{what}: not valid YAML ({first})") from None
    except RecursionError:  # not reached with MAX_NESTING far below Python's limit; kept as a backstop
        raise InputError(f"{what}: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts (4,300)
        raise InputError(f"{what}: not valid YAML ({exc})") from None


def _check_nesting(data: Any, what: str) -> None:
    """Refuse parsed JSON nested deeper than ``MAX_NESTING`` (iterative: safe at any depth)."""
    stack = [(data, 1)]
    while stack:
        obj, depth = stack.pop()
        if isinstance(obj, dict):
            children: Any = obj.values()
        elif isinstance(obj, list):
            children = obj
        else:
            continue
        if depth > MAX_NESTING:
            raise InputError(f"{what}: nested deeper than {MAX_NESTING} levels")
        stack.extend((child, depth + 1) for child in children)


def read_json_text(text: str, what: str, *, max_bytes: int = MAX_INPUT_BYTES) -> Any:
    """Parse JSON with the same bounds as :func:`read_yaml_text` (size, nesting). Raises :class:`InputError`
    naming ``what`` and, for a syntax error, the line and column."""
    if _too_large(text, max_bytes):
        raise InputError(f"{what}: larger than {_size_text(max_bytes)}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what}: not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})") from None
    except RecursionError:  # the C decoder stops at Python's recursion limit (~1000 levels)
        raise InputError(f"{what}: nested deeper than {MAX_NESTING} levels") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts (4,300)
        raise InputError(f"{what}: not valid JSON ({exc})") from None
    _check_nesting(data, what)
    return data


def read_mapping_file(path: str | Path, what: str | None = None) -> dict[str, Any]:
    """Read a YAML or JSON file that must hold a mapping (at most ``MAX_INPUT_BYTES`` are ever read)."""
    p = Path(path)
    what = what or str(p)
    try:
        with p.open("rb") as f:
            raw = f.read(MAX_INPUT_BYTES + 1)  # bounded even for a pipe or a device posing as a file
        if len(raw) > MAX_INPUT_BYTES:
            raise InputError(f"{what}: larger than {_size_text(MAX_INPUT_BYTES)}")
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"{what}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{what}: cannot read ({exc.__class__.__name__})") from None
    data = read_yaml_text(text, what)
    if not isinstance(data, dict):
        raise InputError(f"{what}: must be a mapping of fields, got {type(data).__name__}")
    return data


def _extra_dir() -> Path | None:
    extra = os.environ.get(EXTRA_PRESETS_ENV)
    return Path(extra) if extra else None


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


def _load_kind(kind: str, model: type[BaseModel] | None) -> _Loaded[Any]:
    out: dict[str, Any] = {}
    problems: list[str] = []
    for d in _preset_dirs(kind):
        if not d.is_dir():
            continue
        for f in sorted(d.glob("*.yaml")) + sorted(d.glob("*.yml")):
            shipped = d.parent == PRESETS_DIR
            what = f"{kind} preset {f.name}" if shipped else f"{kind} preset ${EXTRA_PRESETS_ENV}/{kind}/{f.name}"
            try:
                data = read_mapping_file(f, what)
                if model is None:
                    out[f.stem] = data
                    continue
                try:
                    obj = model(**data)
                except ValidationError as err:
                    raise from_validation_error(err, prefix=f"{what}: ") from None
                except (ArchitectureError, TypeError) as err:
                    raise InputError(f"{what}: {err}") from None
            except InputError as err:  # one line per file, naming it, with every problem of the file
                problems.append(f"{what}: " + "; ".join(p.removeprefix(f"{what}: ") for p in err.problems))
                continue
            out[obj.id] = obj
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
    """Forget loaded presets (after the presets directory changed)."""
    for fn in (_models, _gpus, _scenarios):
        fn.cache_clear()


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
