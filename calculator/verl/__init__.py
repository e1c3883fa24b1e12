"""verl 0.9.1 settings <-> Scenario, both ways (DESIGN.md 6.1 ``--verl``, 6.4 ``export``).

The Scenario mirrors verl's Hydra config with ``actor_rollout_ref.`` dropped. ``KEY_MAPS`` lists, for
every Scenario field verl has, its verl key, the export group and the config(s) the key exists in: the
FSDP config (``model_engine=dp``, the default, ``_generated_ppo_trainer.yaml``) and/or the Megatron one
(``model_engine=megatron``, ``_generated_ppo_megatron_trainer.yaml``). ``RLPLAN_ONLY`` lists the fields
verl does not have. ``tests/test_verl_real.py`` checks every key and every default against the
verl 0.9.1 wheel.

Export (``export_overrides`` / ``format_overrides`` / ``export_yaml``) emits the keys whose value differs
from verl's default plus the keys a launch needs anyway; settings verl cannot express become
``# rlplan: key=<json>`` comment lines, so ``import(export(s)) == s`` exactly. Import
(``import_verl_text`` / ``import_verl_yaml``) reads a bash launch script or a verl YAML config, resolving
shell variables and Hydra interpolations; whatever stays unresolved is reported and ignored. Unknown keys
are warnings, never fatal.

One module per concern, each importing only from the ones above it:

* ``keys``: the key tables (``KEY_MAPS``, ``ALIASES``, ``RLPLAN_ONLY``, ...), ``native_to_verl`` /
  ``verl_to_native``;
* ``defaults``: verl 0.9.1's default for every mapped key (``VERL_DEFAULTS``, ``verl_defaults``);
* ``shell``: bash launch scripts: tokens, shell variables, the integer ``$(( ... ))`` evaluator;
* ``interpolate``: Hydra values and ``${...}`` / ``oc.select`` interpolations;
* ``fields``: Scenario field helpers and value conversion both ways (``native_to_verl_items``);
* ``imports``: ``import_verl_text``, ``import_verl_yaml``, ``apply_verl_overrides``;
* ``export``: ``export_scenario``, ``export_overrides``, ``format_overrides``, ``export_yaml``,
  ``export_main``.

Every name below stays importable from ``calculator.verl``.
Names load on first use (PEP 562 ``__getattr__``), so importing one submodule (``calculator.verl.imports``
for ``load_scenario``) does not import the exporter and the rest.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, eagerly, for type checkers
    from calculator.errors import InputError
    from calculator.inputs.scenario import FsdpSection, MegatronSection, RewardRolloutSection, Scenario
    from calculator.verl.defaults import VERL_DEFAULTS, VERL_MEGATRON_DEFAULTS, verl_defaults
    from calculator.verl.export import (
        Export,
        export_overrides,
        export_scenario,
        export_yaml,
        format_overrides,
        hydra_value,
    )
    from calculator.verl.fields import (
        SCENARIO_FIELDS,
        engine_of,
        native_default,
        native_field_exists,
        native_to_verl_items,
    )
    from calculator.verl.imports import (
        apply_natives,
        apply_verl_overrides,
        import_verl_text,
        import_verl_yaml,
        read_verl_file,
    )
    from calculator.verl.keys import (
        ALIASES,
        ALWAYS_EMIT,
        BOTH,
        DEPRECATED_MICRO_KEYS,
        FSDP_ONLY,
        GROUPS,
        IGNORED_PREFIXES,
        KEY_MAPS,
        LAUNCH,
        MEGATRON_ONLY,
        PLUS_KEYS,
        RLPLAN_ONLY,
        TARGET_MODULES,
        VERL_PLACEHOLDER_MODEL_PATH,
        Engine,
        KeyMap,
        is_rlplan_only,
        native_to_verl,
        verl_to_native,
    )
    from calculator.verl.shell import tokenize_overrides

_EXPORTS: dict[str, str] = {
    "InputError": "calculator.errors",
    "FsdpSection": "calculator.inputs.scenario",
    "MegatronSection": "calculator.inputs.scenario",
    "RewardRolloutSection": "calculator.inputs.scenario",
    "Scenario": "calculator.inputs.scenario",
    "VERL_DEFAULTS": "calculator.verl.defaults",
    "VERL_MEGATRON_DEFAULTS": "calculator.verl.defaults",
    "verl_defaults": "calculator.verl.defaults",
    "Export": "calculator.verl.export",
    "export_overrides": "calculator.verl.export",
    "export_scenario": "calculator.verl.export",
    "export_yaml": "calculator.verl.export",
    "format_overrides": "calculator.verl.export",
    "hydra_value": "calculator.verl.export",
    "SCENARIO_FIELDS": "calculator.verl.fields",
    "engine_of": "calculator.verl.fields",
    "native_default": "calculator.verl.fields",
    "native_field_exists": "calculator.verl.fields",
    "native_to_verl_items": "calculator.verl.fields",
    "apply_natives": "calculator.verl.imports",
    "apply_verl_overrides": "calculator.verl.imports",
    "import_verl_text": "calculator.verl.imports",
    "import_verl_yaml": "calculator.verl.imports",
    "read_verl_file": "calculator.verl.imports",
    "ALIASES": "calculator.verl.keys",
    "ALWAYS_EMIT": "calculator.verl.keys",
    "BOTH": "calculator.verl.keys",
    "DEPRECATED_MICRO_KEYS": "calculator.verl.keys",
    "FSDP_ONLY": "calculator.verl.keys",
    "GROUPS": "calculator.verl.keys",
    "IGNORED_PREFIXES": "calculator.verl.keys",
    "KEY_MAPS": "calculator.verl.keys",
    "LAUNCH": "calculator.verl.keys",
    "MEGATRON_ONLY": "calculator.verl.keys",
    "PLUS_KEYS": "calculator.verl.keys",
    "RLPLAN_ONLY": "calculator.verl.keys",
    "TARGET_MODULES": "calculator.verl.keys",
    "VERL_PLACEHOLDER_MODEL_PATH": "calculator.verl.keys",
    "Engine": "calculator.verl.keys",
    "KeyMap": "calculator.verl.keys",
    "is_rlplan_only": "calculator.verl.keys",
    "native_to_verl": "calculator.verl.keys",
    "verl_to_native": "calculator.verl.keys",
    "tokenize_overrides": "calculator.verl.shell",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'calculator.verl' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    # keys
    "ALIASES",
    "ALWAYS_EMIT",
    "BOTH",
    "DEPRECATED_MICRO_KEYS",
    "FSDP_ONLY",
    "GROUPS",
    "IGNORED_PREFIXES",
    "KEY_MAPS",
    "LAUNCH",
    "MEGATRON_ONLY",
    "PLUS_KEYS",
    "RLPLAN_ONLY",
    "TARGET_MODULES",
    "VERL_PLACEHOLDER_MODEL_PATH",
    "Engine",
    "KeyMap",
    "is_rlplan_only",
    "native_to_verl",
    "verl_to_native",
    # defaults
    "VERL_DEFAULTS",
    "VERL_MEGATRON_DEFAULTS",
    "verl_defaults",
    # fields
    "SCENARIO_FIELDS",
    "engine_of",
    "native_default",
    "native_field_exists",
    "native_to_verl_items",
    # shell
    "tokenize_overrides",
    # imports
    "apply_natives",
    "apply_verl_overrides",
    "import_verl_text",
    "import_verl_yaml",
    "read_verl_file",
    # export
    "Export",
    "export_overrides",
    "export_scenario",
    "export_yaml",
    "format_overrides",
    "hydra_value",
    # models this package reads (importable from calculator.verl before it became a package)
    "FsdpSection",
    "InputError",
    "MegatronSection",
    "RewardRolloutSection",
    "Scenario",
]
