"""A Scenario from the CLI's scenario options: preset or YAML, ``--model`` (preset, config.json or a size),
``--gpu``, ``--num-gpus``, ``--gpus-per-node``, ``--verl FILE`` and ``--set KEY=VALUE`` (native or verl keys)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

# calculator.verl loads its names on first use: a preset without --set / --verl never imports verl's readers.
from calculator import verl as verl_api
from calculator.cli.terminal import one_line
from calculator.errors import InputError
from calculator.inputs.overrides import parse_value
from calculator.inputs.presets import (
    DEFAULT_SCENARIO,
    is_later_release,
    model_id_for_path,
    model_presets,
    preset_problems,
    read_mapping_file,
)
from calculator.loading import load_scenario_with_warnings
from calculator.model.sizes import approximate_model, parse_size


def _model_overrides(model: str) -> tuple[dict[str, Any], list[str]]:
    """``--model``: a preset id, a config.json path, or a size (``70B``, ``30B-A3B``) approximated from the closest
    model family, as the dashboard does (``calculator.model.sizes``)."""
    if model.endswith(".json") or Path(model).is_file():
        return {"model.config": read_mapping_file(model, f"--model {model}")}, []
    if model in model_presets(strict=False):
        return {"model.path": model, "model.config": None}, []
    try:
        spec = parse_size(model)
    except ValueError:
        # A Hugging Face repo id or checkpoint path reads as verl's model.path does (Qwen/Qwen2.5-7B-Instruct ->
        # qwen2.5-7b); an unknown one goes on as an id, which load_scenario refuses naming the presets.
        preset = model_id_for_path(model)
        if preset is None:
            return {"model.path": model, "model.config": None}, []
        note = f"--model {model}: the model preset {preset} ({model_presets(strict=False)[preset].hf_repo})" + (
            ", of which it is a later release: its config.json may differ; pass that config.json for the exact one"
            if is_later_release(model)
            else ", the same architecture"
        )
        return {"model.path": preset, "model.config": None}, [note]
    approx = approximate_model(spec)
    note = (
        f"--model {model}: approximated as {approx.base_name} with {approx.num_layers} layers "
        f"({approx.total_params / 1e9:.1f}B total, {approx.active_params / 1e9:.1f}B active, "
        f"{approx.error_fraction:.1%} from the size)"
    )
    return {"model.config": approx.config}, [note]


def _set_items(items: list[str]) -> tuple[dict[str, Any], list[str]]:
    """``--set KEY=VALUE``: a native dotted field (value typed by the field), or a verl key
    (``actor_rollout_ref.rollout.n=8``) passed to the verl importer as an override."""
    native: dict[str, Any] = {}
    verl: list[str] = []
    for item in items:
        if "=" not in item:
            raise InputError(f"--set {item!r}: expected KEY=VALUE")
        key, _, value = item.partition("=")
        key = key.strip()
        if verl_api.native_field_exists(key):
            native[key] = parse_value(value, key)
        elif verl_api.verl_to_native(key) is not None:
            verl.append(f"{key}={value}")
        else:
            raise InputError(
                f"--set {one_line(key)}: not a scenario field (e.g. rollout.n) nor a verl key rlplan models "
                "(e.g. actor_rollout_ref.rollout.n)"
            )
    return native, verl


def scenario_from_args(args: argparse.Namespace) -> tuple[Any, list[str]]:
    overrides, notes = _model_overrides(args.model) if args.model else ({}, [])
    if getattr(args, "calibration", None):  # fitted values first: --gpu, --set... given with it still win
        from calculator.calibration.profile import load_profile, profile_overrides  # only when a profile is given

        profile = load_profile(args.calibration)
        overrides = {**profile_overrides(profile), **overrides}
        notes.append(
            f"calibration profile {profile.id} applied: " + ", ".join(f"{k}={v:g}" for k, v in profile.fitted.items())
        )
    if args.gpu:
        overrides["hardware.gpu"] = args.gpu
    if args.num_gpus is not None:
        overrides["hardware.num_gpus"] = args.num_gpus
    if args.gpus_per_node is not None:
        overrides["hardware.gpus_per_node"] = args.gpus_per_node
    native, verl_set = _set_items(args.set)
    overrides.update(native)
    verl_text = [verl_api.read_verl_file(f) for f in args.verl] + (["\n".join(verl_set)] if verl_set else [])
    base = args.scenario if args.scenario is not None or verl_text else DEFAULT_SCENARIO
    scenario, load_notes = load_scenario_with_warnings(base, overrides, verl_text or None)
    return scenario, [f"preset skipped: {p}" for p in preset_problems()] + notes + load_notes
