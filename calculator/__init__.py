"""rlplan calculator: GPU memory, step time and hardware plans for verl RL post-training.

Pure Python (pydantic, pyyaml, stdlib). Views (the Streamlit app, the CLI) import this package;
it never imports them. The names below are the public API: the app imports only these
(``tests/test_public_api.py``); everything else is an implementation detail of a layer subpackage.

    from calculator import estimate, load_scenario
    report = estimate(load_scenario("qwen2.5-7b-grpo-8xh100"))

Names are loaded on first use (PEP 562 ``__getattr__``): ``python -m calculator presets`` or ``estimate``
imports only the layers that command needs, not the planner and the verl importer (issue #18, CLI start).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, eagerly, for type checkers
    from calculator.calibration.compare import Calibration, calibrate
    from calculator.calibration.explain import OomExplanation, explain_oom
    from calculator.calibration.logs import RunLog, parse_log
    from calculator.calibration.measured import Measured, measured_from_table, summarize
    from calculator.calibration.profile import (
        CalibrationProfile,
        make_profile,
        profile_from_text,
        profile_overrides,
        profile_yaml,
        save_team_profile,
        team_profile_exists,
        team_profiles,
        validate_fitted,
    )
    from calculator.errors import InputError
    from calculator.inputs.algorithms import (
        ALGORITHM_BY_LABEL,
        ALGORITHMS,
        RECIPE_LABELS,
        Algorithm,
        algorithm_for,
        algorithm_label,
        recipe_overrides,
        role_settings,
    )
    from calculator.inputs.display import differs_from, scenario_title
    from calculator.inputs.limits import MAX_LOG_BYTES, MAX_TRACEBACK_BYTES
    from calculator.inputs.presets import (
        DEFAULT_SCENARIO,
        MAX_INPUT_BYTES,
        gpu_presets,
        model_presets,
        preset_problems,
        read_json_text,
        read_yaml_text,
        scenario_preset,
        scenario_presets,
    )
    from calculator.inputs.readers import dump_yaml
    from calculator.inputs.scenario import Scenario
    from calculator.loading import load_scenario, load_scenario_with_warnings
    from calculator.model.architecture import Architecture, ArchitectureError, parse_hf_config
    from calculator.model.sizes import ApproxModel, SizeSpec, approximate_model, model_families, parse_size
    from calculator.names import PHASE_ORDER, Comp, Phase, Role
    from calculator.planning.advisor import Advice, Suggestion, advise
    from calculator.planning.placement_advice import placement_hint
    from calculator.planning.planner import plan
    from calculator.planning.rows import Plan
    from calculator.planning.tradeoff import TechniqueRow, TradeoffPoint, pareto_front, technique_table, tradeoff_sweep
    from calculator.report.estimate import estimate
    from calculator.report.models import PhaseOut, Report
    from calculator.resolve.architectures import parse_config
    from calculator.units import format_count, format_gib
    from calculator.verl import format_overrides
    from calculator.verl.checks import ConfigProblem, check_config
    from calculator.verl.checks.problem import rejections

_EXPORTS: dict[str, str] = {
    "differs_from": "calculator.inputs.display",
    "scenario_title": "calculator.inputs.display",
    "Calibration": "calculator.calibration.compare",
    "calibrate": "calculator.calibration.compare",
    "OomExplanation": "calculator.calibration.explain",
    "explain_oom": "calculator.calibration.explain",
    "RunLog": "calculator.calibration.logs",
    "parse_log": "calculator.calibration.logs",
    "Measured": "calculator.calibration.measured",
    "measured_from_table": "calculator.calibration.measured",
    "summarize": "calculator.calibration.measured",
    "CalibrationProfile": "calculator.calibration.profile",
    "make_profile": "calculator.calibration.profile",
    "profile_from_text": "calculator.calibration.profile",
    "profile_overrides": "calculator.calibration.profile",
    "profile_yaml": "calculator.calibration.profile",
    "save_team_profile": "calculator.calibration.profile",
    "team_profiles": "calculator.calibration.profile",
    "validate_fitted": "calculator.calibration.profile",
    "team_profile_exists": "calculator.calibration.profile",
    "role_settings": "calculator.inputs.algorithms",
    "MAX_LOG_BYTES": "calculator.inputs.limits",
    "MAX_TRACEBACK_BYTES": "calculator.inputs.limits",
    "InputError": "calculator.errors",
    "ALGORITHM_BY_LABEL": "calculator.inputs.algorithms",
    "ALGORITHMS": "calculator.inputs.algorithms",
    "RECIPE_LABELS": "calculator.inputs.algorithms",
    "Algorithm": "calculator.inputs.algorithms",
    "algorithm_for": "calculator.inputs.algorithms",
    "algorithm_label": "calculator.inputs.algorithms",
    "recipe_overrides": "calculator.inputs.algorithms",
    "DEFAULT_SCENARIO": "calculator.inputs.presets",
    "MAX_INPUT_BYTES": "calculator.inputs.presets",
    "gpu_presets": "calculator.inputs.presets",
    "model_presets": "calculator.inputs.presets",
    "preset_problems": "calculator.inputs.presets",
    "read_json_text": "calculator.inputs.presets",
    "read_yaml_text": "calculator.inputs.presets",
    "scenario_preset": "calculator.inputs.presets",
    "scenario_presets": "calculator.inputs.presets",
    "dump_yaml": "calculator.inputs.readers",
    "Scenario": "calculator.inputs.scenario",
    "load_scenario": "calculator.loading",
    "load_scenario_with_warnings": "calculator.loading",
    "Architecture": "calculator.model.architecture",
    "ArchitectureError": "calculator.model.architecture",
    "parse_hf_config": "calculator.model.architecture",
    "ApproxModel": "calculator.model.sizes",
    "SizeSpec": "calculator.model.sizes",
    "approximate_model": "calculator.model.sizes",
    "model_families": "calculator.model.sizes",
    "parse_size": "calculator.model.sizes",
    "PHASE_ORDER": "calculator.names",
    "Comp": "calculator.names",
    "Phase": "calculator.names",
    "Role": "calculator.names",
    "Advice": "calculator.planning.advisor",
    "Suggestion": "calculator.planning.advisor",
    "advise": "calculator.planning.advisor",
    "placement_hint": "calculator.planning.placement_advice",
    "plan": "calculator.planning.planner",
    "Plan": "calculator.planning.rows",
    "TechniqueRow": "calculator.planning.tradeoff",
    "TradeoffPoint": "calculator.planning.tradeoff",
    "pareto_front": "calculator.planning.tradeoff",
    "technique_table": "calculator.planning.tradeoff",
    "tradeoff_sweep": "calculator.planning.tradeoff",
    "estimate": "calculator.report.estimate",
    "PhaseOut": "calculator.report.models",
    "Report": "calculator.report.models",
    "parse_config": "calculator.resolve.architectures",
    "format_count": "calculator.units",
    "format_gib": "calculator.units",
    "format_overrides": "calculator.verl",
    "ConfigProblem": "calculator.verl.checks",
    "check_config": "calculator.verl.checks",
    "rejections": "calculator.verl.checks.problem",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'calculator' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "rejections",
    "DEFAULT_SCENARIO",
    "dump_yaml",
    "differs_from",
    "scenario_title",
    "PHASE_ORDER",
    "Comp",
    "Phase",
    "Role",
    # estimate
    "InputError",
    "PhaseOut",
    "Report",
    "Scenario",
    "estimate",
    "load_scenario",
    "load_scenario_with_warnings",
    # presets and bounded readers
    "MAX_INPUT_BYTES",
    "gpu_presets",
    "model_presets",
    "preset_problems",
    "read_json_text",
    "read_yaml_text",
    "scenario_preset",
    "scenario_presets",
    # models: config.json and approximate models from a size
    "ApproxModel",
    "Architecture",
    "ArchitectureError",
    "SizeSpec",
    "approximate_model",
    "model_families",
    "parse_config",
    "parse_hf_config",
    "parse_size",
    # algorithms and their recipes
    "ALGORITHMS",
    "ALGORITHM_BY_LABEL",
    "RECIPE_LABELS",
    "Algorithm",
    "algorithm_for",
    "algorithm_label",
    "recipe_overrides",
    "role_settings",
    # planning
    "Advice",
    "Plan",
    "Suggestion",
    "TechniqueRow",
    "TradeoffPoint",
    "advise",
    "pareto_front",
    "placement_hint",
    "plan",
    "technique_table",
    "tradeoff_sweep",
    # calibration from real runs (issue 16)
    "MAX_LOG_BYTES",
    "MAX_TRACEBACK_BYTES",
    "Calibration",
    "CalibrationProfile",
    "Measured",
    "OomExplanation",
    "RunLog",
    "calibrate",
    "explain_oom",
    "make_profile",
    "measured_from_table",
    "parse_log",
    "profile_from_text",
    "profile_overrides",
    "profile_yaml",
    "save_team_profile",
    "summarize",
    "validate_fitted",
    "team_profile_exists",
    "team_profiles",
    # verl
    "ConfigProblem",
    "check_config",
    "format_overrides",
    # units
    "format_count",
    "format_gib",
]
