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

from typing import Any, Literal

from calculator.errors import InputError
from calculator.inputs.overrides import set_dotted
from calculator.inputs.presets import read_json_text, read_yaml_text
from calculator.verl.checks.raw import check_raw_config
from calculator.verl.defaults import _FSDP_ONLY_KEYS, _MEGATRON_ONLY_KEYS, _MISSING, verl_defaults
from calculator.verl.fields import _to_native, native_default, native_field_exists
from calculator.verl.interpolate import _hydra_parse, _parse_scalar, _Resolver
from calculator.verl.keys import _A, _F, ALIASES, DEPRECATED_MICRO_KEYS, IGNORED_PREFIXES, verl_to_native
from calculator.verl.shell import _RLPLAN_LINE, _parse_script, _Unresolved

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
        or any(key.startswith(p) for p in IGNORED_PREFIXES)
    )


def _import_flat(
    given: dict[str, Any],
    *,
    engine_hint: str | None,
    source: Literal["script", "yaml"],
    rlplan: list[tuple[str, str]],
    quiet: bool = False,
) -> tuple[dict[str, Any], list[str]]:
    """Map verl keys (values typed or Hydra text, interpolations kept) to native overrides."""
    notes: list[str] = []
    natives: dict[str, Any] = {}
    given = {k.lstrip("+"): _hydra_parse(v) for k, v in given.items()}

    engine = engine_hint
    if given.get("model_engine") == "megatron" or given.get(f"{_A}.strategy") == "megatron":
        engine = "megatron"
    if given.get(f"{_A}.strategy") == "megatron" and given.get("model_engine") != "megatron" and source == "script":
        notes.append(
            "verl 0.9.1 selects Megatron with model_engine=megatron (trainer/config/ppo_trainer.yaml defaults list); "
            "actor_rollout_ref.actor.strategy=megatron alone keeps the FSDP config group. Estimated as Megatron."
        )
    engine = engine or "fsdp"
    if given.get("model_engine") not in (None, "dp", "megatron"):
        notes.append(f"model_engine={given['model_engine']}: only dp (FSDP) and megatron are modelled; FSDP assumed")

    defaults = verl_defaults(engine)
    flat = {**defaults, **given}
    res = _Resolver(flat)

    def resolved(key: str) -> Any:
        return res.value(key)

    # keys that exist only in the other engine's config
    wrong = _MEGATRON_ONLY_KEYS if engine == "fsdp" else _FSDP_ONLY_KEYS
    other = "model_engine=megatron" if engine == "fsdp" else "the FSDP config (model_engine=dp)"

    if engine == "megatron":
        natives["actor.strategy"] = "megatron"

    unknown: list[str] = []
    # aliases first, so that the canonical key wins when a config has both
    for key, raw in sorted(given.items(), key=lambda kv: kv[0] not in ALIASES):
        if key in ("model_engine",):
            continue
        if key in wrong:
            if source == "script":
                notes.append(f"verl override {key}: exists only with {other}; verl would reject it. Ignored")
            continue
        if key == "critic.ulysses_sequence_parallel_size" and raw not in (1, None):
            if not quiet:
                notes.append(
                    "critic.ulysses_sequence_parallel_size is deprecated and not forwarded to the critic engine in "
                    "verl 0.9.1 (workers/config/critic.py FSDPCriticConfig.__post_init__); use "
                    "critic.fsdp.ulysses_sequence_parallel_size. Ignored"
                )
            continue
        if key.startswith(f"{_F}.megatron.") and key.rsplit(".", 1)[1] in _MEGATRON_PARALLEL:
            actor_key = f"{_A}.megatron.{key.rsplit('.', 1)[1]}"
            try:
                same = resolved(key) == resolved(actor_key)
            except _Unresolved:
                same = False
            if not same and not quiet:
                notes.append(f"verl {key}: a ref sharded unlike the actor is not modelled (rlplan uses {actor_key})")
            continue
        native = verl_to_native(key)
        if native is None or native == "actor.strategy":
            if native is None and not _known(key):
                unknown.append(key)
            if key == f"{_A}.fsdp_config.strategy" or key == f"{_A}.strategy":
                try:
                    v = resolved(key)
                except _Unresolved as exc:
                    notes.append(f"verl {key}: {exc}; ignored")
                    continue
                if v in ("fsdp", "fsdp2"):
                    natives["actor.strategy"] = v
                elif v != "megatron":
                    notes.append(f"verl {key}={v}: only fsdp, fsdp2 and megatron are modelled; ignored")
            continue
        if native in ("hardware.num_gpus", "hardware.gpus_per_node"):
            continue  # below
        if raw == _MISSING:
            notes.append(f"verl {key}: ??? (required, not set)")
            continue
        if raw == defaults.get(key) and isinstance(raw, str) and "${" in raw:
            if key not in ALIASES:
                natives[native] = native_default(native)  # verl's interpolated default = rlplan's "inherit"
            continue
        try:
            value = resolved(key)
        except _Unresolved as exc:
            notes.append(f"verl {key}: cannot resolve {raw!r} ({exc}); ignored")
            continue
        ok, converted, note = _to_native(native, value, key, res)
        if note and not quiet:
            notes.append(note)
        if ok:
            natives[native] = converted

    # trainer.n_gpus_per_node x trainer.nnodes
    if "trainer.n_gpus_per_node" in given or "trainer.nnodes" in given:
        try:
            per = int(resolved("trainer.n_gpus_per_node"))
            nodes = int(resolved("trainer.nnodes"))
            if nodes > 1:  # one node using `per` GPUs says nothing about the node size (see apply_natives)
                natives["hardware.gpus_per_node"] = per
            natives["hardware.num_gpus"] = per * max(nodes, 1)
        except (_Unresolved, TypeError, ValueError) as exc:
            notes.append(f"verl trainer.n_gpus_per_node / trainer.nnodes: cannot resolve ({exc}); ignored")

    # verl's literal default for the critic's strategy is "fsdp" (dp_critic.yaml), not the actor's
    if engine == "fsdp" and natives.get("actor.strategy") == "fsdp2" and "critic.strategy" not in given:
        try:
            enable = resolved("critic.enable")
            critic = bool(enable) if enable is not None else resolved("algorithm.adv_estimator") == "gae"
        except _Unresolved:
            critic = True
        if critic:  # (trainer/ppo/utils.py need_critic) without a critic the value does not matter
            natives["critic.strategy"] = "fsdp"

    if not quiet:
        notes += [f"verl: {p.message}" for p in check_raw_config(given, res, engine)]

    for key, text in rlplan:
        try:
            value = read_json_text(text, f"# rlplan: {key}")  # bounded: size and nesting
        except InputError as err:
            if "not valid JSON" not in str(err):
                notes.append(f"{err}; ignored")
                continue
            value = _parse_scalar(text)
        if not native_field_exists(key):
            notes.append(f"# rlplan: {key}: not a scenario field; ignored")
            continue
        natives[key] = value

    if unknown and not quiet:
        if source == "yaml" and len(unknown) > 12:
            notes.append(
                f"verl config: {len(unknown)} keys not modelled (ignored), e.g. " + ", ".join(sorted(unknown)[:8])
            )
        else:
            notes.append("verl overrides not modelled (ignored): " + ", ".join(unknown))
    return natives, notes


def _looks_like_verl_yaml(data: Any) -> bool:
    if not isinstance(data, dict) or not data:
        return False
    roots = {"actor_rollout_ref", "data", "algorithm", "critic", "reward", "reward_model", "trainer", "model_engine"}
    return any(str(k).split(".")[0] in roots for k in data)


def import_verl_yaml(
    mapping: dict[str, Any], rlplan: list[tuple[str, str]] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """A verl config mapping (a nested fragment, dotted keys, or a full config verl/Hydra wrote) ->
    (native dotted overrides, warnings). Values equal to verl's defaults map to the Scenario's defaults."""
    flat = _flatten(mapping)
    engine = None
    if flat.get("model_engine") == "megatron" or flat.get(f"{_A}.strategy") == "megatron":
        engine = "megatron"
    return _import_flat(flat, engine_hint=engine, source="yaml", rlplan=rlplan or [])


def import_verl_text(text: str) -> tuple[dict[str, Any], list[str]]:
    """A bash launch script, a ``--format overrides`` file or a verl YAML config -> (native dotted
    overrides, warnings). ``# rlplan: key=value`` lines (written by ``export``) are applied last."""
    stripped = text.lstrip()
    if stripped and not stripped.startswith(("python", "#!")) and ":" in text:
        try:
            data = read_yaml_text(text, "verl config")
        except InputError:
            data = None
        if _looks_like_verl_yaml(data):
            rlplan = [(m.group(1), m.group(2)) for m in map(_RLPLAN_LINE.match, text.splitlines()) if m]
            return import_verl_yaml(data, rlplan)
    parsed = _parse_script(text)
    natives, notes = _import_flat(
        {k: parsed.overrides[k] for k in parsed.order}, engine_hint=parsed.engine, source="script", rlplan=parsed.rlplan
    )
    return natives, parsed.notes + notes


def apply_verl_overrides(data: dict[str, Any], overrides: list[str] | str) -> list[str]:
    """Apply verl settings (launch-script text, or a list of texts / ``key=value`` tokens) onto a scenario
    mapping in place; return the warnings."""

    if isinstance(overrides, str):
        texts = [overrides]
    else:  # whole files separately; single-line tokens together (they may split trainer.* keys)
        texts = [t for t in overrides if "\n" in t.strip()]
        tokens = [t for t in overrides if "\n" not in t.strip()]
        texts += ["\n".join(tokens)] if tokens else []
    notes: list[str] = []
    for text in texts:
        natives, more = import_verl_text(text)
        apply_natives(data, natives)
        notes += more
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
    from pathlib import Path

    p = Path(path)
    try:
        if p.stat().st_size > 2 * 2**20:
            raise InputError(f"--verl {path}: larger than 2 MiB")
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"--verl {path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--verl {path}: cannot read ({exc.__class__.__name__})") from None
