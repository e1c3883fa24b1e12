"""Import: verl settings -> Scenario fields (``import_verl_text``, ``import_verl_yaml``, ``apply_verl_overrides``).

Reads a bash launch script (tokenized by :mod:`calculator.verl.shell`), a ``--format overrides`` file or
a verl YAML config (a nested fragment, dotted keys, or a full config verl/Hydra wrote). Hydra
interpolations are resolved against the other settings and verl's defaults
(:mod:`calculator.verl.interpolate`); whatever stays unresolved is reported and ignored. Unknown keys are
warnings, never fatal. verl 0.9.1 selects Megatron with ``model_engine=megatron``
(``trainer/config/ppo_trainer.yaml`` defaults list); keys of the other engine's config are ignored with a
note. verl's own checks on the raw keys (``calculator.verl.checks.check_raw_config``) add their messages,
and ``# rlplan: key=<json>`` lines are applied last.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from calculator.errors import InputError
from calculator.inputs.overrides import set_dotted
from calculator.inputs.readers import RefusedInput, read_file_text, read_json_text, read_yaml_text
from calculator.verl.checks.raw import check_raw_config
from calculator.verl.defaults import _FSDP_ONLY_KEYS, _MEGATRON_ONLY_KEYS, _MISSING, verl_defaults
from calculator.verl.fields import _resolved_or_none, _to_native, native_default, native_field_exists
from calculator.verl.ignored import classify
from calculator.verl.interpolate import _hydra_parse, _parse_scalar, _Resolver
from calculator.verl.keys import _A, _F, _M, ALIASES, DEPRECATED_MICRO_KEYS, MEGATRON_LORA_KEYS, verl_to_native
from calculator.verl.legacy import convert_global_micro, release_defaults, reset_inherited_means
from calculator.verl.placement_keys import import_placement, is_placement_key
from calculator.verl.shell import _RLPLAN_LINE, SCRIPT, _parse_script, _Unresolved

_MEGATRON_PARALLEL = {
    "tensor_model_parallel_size",
    "pipeline_model_parallel_size",
    "virtual_pipeline_model_parallel_size",
    "context_parallel_size",
    "expert_model_parallel_size",
    "expert_tensor_parallel_size",
}


def _flatten(mapping: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in mapping.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _known(key: str) -> bool:
    return (
        verl_to_native(key) is not None
        or key in DEPRECATED_MICRO_KEYS
        or key in ("trainer.n_gpus_per_node", "critic.ulysses_sequence_parallel_size")
        or classify(key) is not None
    )


# (explicit verl_version, the base scenario's verl_version, the base scenario's GPU count)
Release = tuple[str | None, str | None, int]

_STRATEGY_KEYS = (f"{_A}.fsdp_config.strategy", f"{_A}.strategy")
_CRITIC_ULYSSES_NOTE = (
    "critic.ulysses_sequence_parallel_size is deprecated and not forwarded to the critic engine in "
    "verl 0.9.1 (workers/config/critic.py FSDPCriticConfig.__post_init__); use "
    "critic.fsdp.ulysses_sequence_parallel_size. Ignored"
)


@dataclass
class _Import:
    """One import in progress: the given keys, verl's defaults, the resolver, and what was found."""

    given: dict[str, Any]
    engine: str
    source: Literal["script", "yaml"]
    quiet: bool
    defaults: dict[str, Any]
    res: _Resolver
    notes: list[str] = field(default_factory=list)
    natives: dict[str, Any] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)
    not_modelled: list[tuple[str, str]] = field(default_factory=list)  # (key, likely effect on memory / time)

    def note(self, text: str, *, always: bool = False) -> None:
        if always or not self.quiet:
            self.notes.append(text)

    def resolved(self, key: str) -> Any:
        return self.res.value(key)


def _engine(given: dict[str, Any], engine_hint: str | None, source: str) -> tuple[str, list[str]]:
    """The engine the keys select (verl 0.9.1: ``model_engine=megatron``), and notes about the choice."""
    notes: list[str] = []
    engine = engine_hint
    strategy, model_engine = given.get(f"{_A}.strategy"), given.get("model_engine")
    if model_engine == "megatron" or strategy == "megatron":
        engine = "megatron"
    if strategy == "megatron" and model_engine != "megatron" and source == "script":
        notes.append(
            "verl 0.9.1 selects Megatron with model_engine=megatron (trainer/config/ppo_trainer.yaml defaults list); "
            "actor_rollout_ref.actor.strategy=megatron alone keeps the FSDP config group. Estimated as Megatron."
        )
    if model_engine not in (None, "dp", "megatron"):
        notes.append(f"model_engine={model_engine}: only dp (FSDP) and megatron are modelled; FSDP assumed")
    return engine or "fsdp", notes


def _strategy_key(imp: _Import, key: str) -> None:
    try:
        v = imp.resolved(key)
    except _Unresolved as exc:
        imp.note(f"verl {key}: {exc}; ignored", always=True)
        return
    if v in ("fsdp", "fsdp2"):
        imp.natives["actor.strategy"] = v
    elif v != "megatron":
        imp.note(f"verl {key}={v}: only fsdp, fsdp2 and megatron are modelled; ignored", always=True)


def _ref_megatron_key(imp: _Import, key: str) -> None:
    actor_key = f"{_A}.megatron.{key.rsplit('.', 1)[1]}"
    try:
        same = imp.resolved(key) == imp.resolved(actor_key)
    except _Unresolved:
        same = False
    if not same:
        imp.note(f"verl {key}: a ref sharded unlike the actor is not modelled (rlplan uses {actor_key})")


def _lora_key_of_other_engine(imp: _Import, key: str, raw: Any) -> bool:
    """LoRA keys the engine does not read: Megatron takes LoRA from model.lora.* (``keys.MEGATRON_LORA_KEYS``),
    FSDP from model.lora_rank / lora_alpha. verl's main_ppo still reads either rank to run the reference pass on
    the actor (``ref_in_actor``), which rlplan does not model for a LoRA the engine ignores."""
    megatron_keys = set(MEGATRON_LORA_KEYS.values())
    fsdp_keys = {f"{_M}.lora_rank", f"{_M}.lora_alpha"}
    ignored = fsdp_keys if imp.engine == "megatron" else megatron_keys
    if key not in ignored:
        return False
    if key.endswith("rank") and raw not in (0, None, "0"):
        used = f"{_M}.lora.rank" if imp.engine == "megatron" else f"{_M}.lora_rank"
        imp.note(
            f"verl {key}={raw}: the {imp.engine} engine does not read it (its LoRA rank is {used}): every "
            "parameter is trained; estimated as full fine-tuning",
            always=True,
        )
    return True


def _skipped_key(imp: _Import, key: str, raw: Any) -> bool:
    """Keys handled without a native field of their own (True when ``key`` was one of them)."""
    if key == "model_engine" or is_placement_key(key):  # placement keys: _placement
        return True
    wrong = _MEGATRON_ONLY_KEYS if imp.engine == "fsdp" else _FSDP_ONLY_KEYS  # only in the other engine's config
    if key in wrong:
        if imp.source == "script":
            other = "model_engine=megatron" if imp.engine == "fsdp" else "the FSDP config (model_engine=dp)"
            imp.note(f"verl override {key}: exists only with {other}; verl would reject it. Ignored", always=True)
        return True
    if _lora_key_of_other_engine(imp, key, raw):
        return True
    if key == "critic.ulysses_sequence_parallel_size" and raw not in (1, None):
        imp.note(_CRITIC_ULYSSES_NOTE)
        return True
    if key.startswith(f"{_F}.megatron.") and key.rsplit(".", 1)[1] in _MEGATRON_PARALLEL:
        _ref_megatron_key(imp, key)
        return True
    return False


def _map_key(imp: _Import, key: str, raw: Any) -> None:
    """One given verl key -> its native field (or a note saying why not)."""
    if _skipped_key(imp, key, raw):
        return
    native = verl_to_native(key)
    if native is None or native == "actor.strategy":
        kind = classify(key) if native is None else None
        if kind is not None and kind[0] == "not_modelled":
            imp.not_modelled.append((key, kind[1]))
        elif native is None and not _known(key):
            imp.unknown.append(key)
        if key in _STRATEGY_KEYS:
            _strategy_key(imp, key)
        return
    if native in ("hardware.num_gpus", "hardware.gpus_per_node"):
        return  # _gpu_count
    if raw == _MISSING:
        imp.note(f"verl {key}: ??? (required, not set)", always=True)
        return
    if raw == imp.defaults.get(key) and isinstance(raw, str) and "${" in raw:
        if key not in ALIASES:
            imp.natives[native] = native_default(native)  # verl's interpolated default = rlplan's "inherit"
        return
    try:
        value = imp.resolved(key)
    except _Unresolved as exc:
        imp.note(f"verl {key}: cannot resolve {raw!r} ({exc}); ignored", always=True)
        return
    ok, converted, note = _to_native(native, value, key, imp.res)
    if note:
        imp.note(note)
    if ok:
        imp.natives[native] = converted


def _gpu_count(imp: _Import) -> None:
    """trainer.n_gpus_per_node x trainer.nnodes."""
    if "trainer.n_gpus_per_node" not in imp.given and "trainer.nnodes" not in imp.given:
        return
    try:
        per = int(imp.resolved("trainer.n_gpus_per_node"))
        nodes = int(imp.resolved("trainer.nnodes"))
        if nodes > 1:  # one node using `per` GPUs says nothing about the node size (see apply_natives)
            imp.natives["hardware.gpus_per_node"] = per
        imp.natives["hardware.num_gpus"] = per * max(nodes, 1)
    except (_Unresolved, TypeError, ValueError, OverflowError) as exc:
        imp.note(f"verl trainer.n_gpus_per_node / trainer.nnodes: cannot resolve ({exc}); ignored", always=True)


def _placement(imp: _Import) -> None:
    """Separate rollout / trainer pools (``calculator.verl.placement_keys``)."""

    def value(key: str) -> Any:
        try:
            return imp.resolved(key)
        except _Unresolved as exc:
            imp.note(f"verl {key}: cannot resolve ({exc}); ignored", always=True)
            return None

    natives, notes = import_placement(imp.given, value)
    imp.natives.update(natives)
    for n in notes:
        imp.note(n)


def _critic_strategy(imp: _Import) -> None:
    """verl's literal default for the critic's strategy is "fsdp" (dp_critic.yaml), not the actor's."""
    if imp.engine != "fsdp" or imp.natives.get("actor.strategy") != "fsdp2" or "critic.strategy" in imp.given:
        return
    try:
        enable = imp.resolved("critic.enable")
        critic = bool(enable) if enable is not None else imp.resolved("algorithm.adv_estimator") == "gae"
    except _Unresolved:
        critic = True
    if critic:  # (trainer/ppo/utils.py need_critic) without a critic the value does not matter
        imp.natives["critic.strategy"] = "fsdp"


def _rlplan_settings(imp: _Import, rlplan: list[tuple[str, str]]) -> None:
    """``# rlplan: key=<json>`` lines, applied last."""
    for key, text in rlplan:
        try:
            value = read_json_text(text, f"# rlplan: {key}")  # bounded: size and nesting
        except InputError as err:
            if "not valid JSON" not in str(err):
                imp.note(f"{err}; ignored", always=True)
                continue
            value = _parse_scalar(text)
        if not native_field_exists(key):
            imp.note(f"# rlplan: {key}: not a scenario field; ignored", always=True)
            continue
        imp.natives[key] = value


def _unknown_note(imp: _Import) -> None:
    if imp.source == "script":
        imp.notes += [f"verl {k}: not modelled; likely effect: {effect}" for k, effect in imp.not_modelled]
    elif imp.not_modelled:
        imp.note(
            f"verl config: {len(imp.not_modelled)} keys rlplan does not model (e.g. "
            + ", ".join(k for k, _ in imp.not_modelled[:6])
            + "); at verl's defaults they change nothing rlplan estimates"
        )
    if not imp.unknown:
        return
    if imp.source == "yaml" and len(imp.unknown) > 12:
        imp.note(
            f"verl config: {len(imp.unknown)} keys not modelled (ignored), e.g. " + ", ".join(sorted(imp.unknown)[:8])
        )
    else:
        imp.note("verl overrides not modelled (ignored): " + ", ".join(imp.unknown))


def _import_flat(
    given: dict[str, Any],
    *,
    engine_hint: str | None,
    source: Literal["script", "yaml"],
    rlplan: list[tuple[str, str]],
    quiet: bool = False,
    what: str = "verl settings",
    release: Release = (None, None, 8),
) -> tuple[dict[str, Any], list[str]]:
    """Map verl keys (values typed or Hydra text, interpolations kept) to native overrides, for the verl
    release ``release`` = (explicit version, base scenario's version, base GPU count): see ``_release``. Raises InputError naming ``what`` when interpolation ran over its budget
    (``calculator.inputs.limits``)."""
    given = {k.lstrip("+"): _hydra_parse(v) for k, v in given.items()}
    engine, engine_notes = _engine(given, engine_hint, source)
    defaults = verl_defaults(engine)
    imp = _Import(given, engine, source, quiet, defaults, _Resolver({**defaults, **given}), notes=engine_notes)
    if engine == "megatron":
        imp.natives["actor.strategy"] = "megatron"
    # aliases first, so that the canonical key wins when a config has both
    for key, raw in sorted(given.items(), key=lambda kv: kv[0] not in ALIASES):
        _map_key(imp, key, raw)
    _gpu_count(imp)
    _placement(imp)
    _critic_strategy(imp)
    version = _release(release, rlplan)
    imp.notes += convert_global_micro(given, lambda k: _resolved_or_none(imp.res, k), imp.natives, version, release[2])
    imp.notes += release_defaults(given, imp.natives, version)
    if not quiet:
        imp.notes += [f"verl: {p.message}" for p in check_raw_config(given, imp.res, engine, version)]
    _rlplan_settings(imp, rlplan)
    _unknown_note(imp)
    if imp.res.refusal:
        raise InputError(f"{what}: refused: {imp.res.refusal}")
    return imp.natives, imp.notes


def _release(release: Release, rlplan: list[tuple[str, str]]) -> str:
    """The release the keys are read for: the caller's explicit one (``--set verl_version``), else a
    ``# rlplan: verl_version=`` line of the script, else the base scenario's, else 0.9."""
    lines = [text.strip().strip("\"'") for key, text in rlplan if key == "verl_version"]
    return release[0] or (lines[-1] if lines else None) or release[1] or "0.9"


def _looks_like_verl_yaml(data: Any) -> bool:
    if not isinstance(data, dict) or not data:
        return False
    roots = {"actor_rollout_ref", "data", "algorithm", "critic", "reward", "reward_model", "trainer", "model_engine"}
    return any(str(k).split(".")[0] in roots for k in data)


def import_verl_yaml(
    mapping: dict[str, Any], rlplan: list[tuple[str, str]] | None = None, release: Release = (None, None, 8)
) -> tuple[dict[str, Any], list[str]]:
    """A verl config mapping (a nested fragment, dotted keys, or a full config verl/Hydra wrote) ->
    (native dotted overrides, warnings). Values equal to verl's defaults map to the Scenario's defaults."""
    flat = _flatten(mapping)
    engine = None
    if flat.get("model_engine") == "megatron" or flat.get(f"{_A}.strategy") == "megatron":
        engine = "megatron"
    return _import_flat(
        flat, engine_hint=engine, source="yaml", rlplan=rlplan or [], what="verl config", release=release
    )


def _verl_yaml(text: str) -> dict[str, Any] | None:
    """The text as a verl YAML config, or None when it is not one (then it is read as a launch script).
    YAML the bounded reader refuses (a tag that builds objects, an alias bomb, too deep, too large) is not
    "not YAML": it is refused, never silently read as an empty script."""
    stripped = text.lstrip()
    if not stripped or stripped.startswith(("python", "#!")) or ":" not in text:
        return None
    try:
        data = read_yaml_text(text, "verl config")
    except RefusedInput:
        raise
    except InputError:
        return None
    return data if _looks_like_verl_yaml(data) else None


def import_verl_text(text: str, release: Release = (None, None, 8)) -> tuple[dict[str, Any], list[str]]:
    """A bash launch script, a ``--format overrides`` file or a verl YAML config -> (native dotted
    overrides, warnings). ``# rlplan: key=value`` lines (written by ``export``) are applied last. Raises
    InputError (one line naming the input) for input over a bound of ``calculator.inputs.limits``."""
    data = _verl_yaml(text)
    if data is not None:
        rlplan = [(m.group(1), m.group(2)) for m in map(_RLPLAN_LINE.match, text.splitlines()) if m]
        return import_verl_yaml(data, rlplan, release)
    parsed = _parse_script(text)
    if text.strip() and not parsed.overrides and not parsed.rlplan:
        # A wrong file (or a script that builds its overrides in a way the reader does not follow) would otherwise
        # give an estimate of verl's defaults without a word.
        empty = (
            "no verl key=value overrides found in the script: the estimate uses verl's defaults (a launch script "
            "passes them to python3 -m verl.trainer.main_ppo, one per line or separated by spaces)"
        )
        parsed.notes.append(empty)
    natives, notes = _import_flat(
        dict(parsed.overrides),
        engine_hint=parsed.engine,
        source="script",
        rlplan=parsed.rlplan,
        what=SCRIPT,
        release=release,
    )
    return natives, parsed.notes + notes


def apply_verl_overrides(
    data: dict[str, Any], overrides: list[str] | str, verl_version: str | None = None
) -> list[str]:
    """Apply verl settings (launch-script text, or a list of texts / ``key=value`` tokens) onto a scenario
    mapping in place, read for ``verl_version`` (else the mapping's, else a ``# rlplan:`` line, else 0.9);
    return the warnings, including the means reset because the script changed a max length."""
    hardware = data.get("hardware") if isinstance(data.get("hardware"), dict) else {}
    gpus = hardware.get("num_gpus")
    base_version = data.get("verl_version")
    release: Release = (
        verl_version,
        base_version if isinstance(base_version, str) else None,
        gpus if isinstance(gpus, int) else 8,
    )

    if isinstance(overrides, str):
        texts = [overrides]
    else:  # whole files separately; single-line tokens together (they may split trainer.* keys)
        texts = [t for t in overrides if "\n" in t.strip()]
        tokens = [t for t in overrides if "\n" not in t.strip()]
        texts += ["\n".join(tokens)] if tokens else []
    notes: list[str] = []
    for text in texts:
        natives, more = import_verl_text(text, release)
        notes += more + reset_inherited_means(data, natives)
        apply_natives(data, natives)
    return notes


def apply_natives(data: dict[str, Any], natives: dict[str, Any]) -> None:
    """Set imported native fields on a scenario mapping. A single-node launch (``trainer.nnodes=1``) gives
    ``hardware.num_gpus`` only: the mapping keeps its node size unless the run needs a bigger node."""
    for key, value in natives.items():
        set_dotted(data, key, value)
    total = natives.get("hardware.num_gpus")
    if isinstance(total, int) and "hardware.gpus_per_node" not in natives:
        hw = data.setdefault("hardware", {})
        node = hw.get("gpus_per_node", native_default("hardware.gpus_per_node"))
        if isinstance(node, int) and total > node:
            hw["gpus_per_node"] = total


def read_verl_file(path: str) -> str:
    """A ``--verl`` file: a regular file of at most ``MAX_INPUT_BYTES`` (bounded reader), as text."""
    return read_file_text(path, f"--verl {path}")
