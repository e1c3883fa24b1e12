"""rlplan calculator: GPU memory, step time and hardware plans for verl RL post-training.

Pure Python (pydantic, pyyaml, stdlib). Views (the Streamlit app, the CLI) import this package;
it never imports them. The names below are the public API: the app imports only these
(``tests/test_public_api.py``); everything else is an implementation detail of a layer subpackage.

    from calculator import estimate, load_scenario
    report = estimate(load_scenario("qwen2.5-7b-grpo-8xh100"))
"""

from calculator.errors import InputError
from calculator.inputs.algorithms import (
    ALGORITHM_BY_LABEL,
    ALGORITHMS,
    RECIPE_LABELS,
    Algorithm,
    algorithm_for,
    algorithm_label,
    recipe_overrides,
)
from calculator.inputs.display import differs_from, scenario_title
from calculator.inputs.presets import (
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
from calculator.planning.planner import plan
from calculator.planning.rows import Plan
from calculator.planning.tradeoff import TechniqueRow, TradeoffPoint, pareto_front, technique_table, tradeoff_sweep
from calculator.report.estimate import estimate
from calculator.report.models import PhaseOut, Report
from calculator.resolve.architectures import parse_config
from calculator.units import format_count, format_gib
from calculator.verl import format_overrides
from calculator.verl.checks import ConfigProblem, check_config

__all__ = [
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
    # planning
    "Advice",
    "Plan",
    "Suggestion",
    "TechniqueRow",
    "TradeoffPoint",
    "advise",
    "pareto_front",
    "plan",
    "technique_table",
    "tradeoff_sweep",
    # verl
    "ConfigProblem",
    "check_config",
    "format_overrides",
    # units
    "format_count",
    "format_gib",
]
