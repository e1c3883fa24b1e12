"""Export: Scenario -> verl 0.9.1 overrides, launch command or YAML (DESIGN.md 6.4 ``export``).

``export_overrides`` / ``format_overrides`` / ``export_yaml`` emit the keys whose value differs from
verl's default plus the keys a launch needs anyway (``ALWAYS_EMIT``). Where verl's default is an
interpolation (``ref.log_prob_use_dynamic_bsz: ${oc.select:actor_rollout_ref.actor.use_dynamic_bsz,false}``)
rlplan's default is None ("inherit"), and an explicit value is emitted even when it equals the inherited one:
it no longer follows the other key. The launch command groups keys data / algorithm / actor / rollout / ref /
critic / reward / trainer with a ``# group`` marker line (in backticks), which bash expands to nothing (a
comment line would end the backslash-continued command). Settings verl cannot express (the GPU type, mean
lengths, overhead constants, a Megatron section under FSDP, ...) become ``# rlplan: key=<json>`` comment
lines: bash, Hydra and verl ignore them, and the importer reads them back, so ``import(export(s)) == s``
exactly (``export_scenario`` imports its own overrides to find them). ``--format overrides`` prints verl
keys only (no comments).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from calculator.inputs.readers import dump_yaml
from calculator.inputs.scenario import Scenario
from calculator.resolve.roles import need_critic
from calculator.resolve.versions import behaviour
from calculator.verl.defaults import verl_defaults
from calculator.verl.fields import (
    _DEFAULTS,
    SCENARIO_FIELDS,
    _get,
    _kv_dtype_to_verl,
    _to_verl_value,
    engine_of,
    native_default,
)
from calculator.verl.imports import _import_flat, apply_natives
from calculator.verl.interpolate import _parse_scalar
from calculator.verl.keys import (
    _A,
    _R,
    ALWAYS_EMIT,
    GROUPS,
    KEY_MAPS,
    LAUNCH,
    MEGATRON_LORA_KEYS,
    PLUS_KEYS,
    KeyMap,
)
from calculator.verl.legacy import reset_inherited_means
from calculator.verl.placement_keys import launch_module, placement_items


@dataclass
class Export:
    """What ``export`` produces for one scenario."""

    overrides: list[tuple[str, str, Any]] = field(default_factory=list)  # (group, verl key, value)
    rlplan: list[tuple[str, Any]] = field(default_factory=list)  # (native key, value): not expressible in verl
    scenario_name: str = ""
    launch: str = LAUNCH  # the entry command (a recipe's module for split placements)


Item = tuple[str, str, Any]  # (group, verl key, value)


@dataclass(frozen=True)
class _Field:
    """One mapped Scenario field of the scenario being exported."""

    km: KeyMap
    value: Any
    differs_from_base: bool  # the base scenario (if any) has another value: emit it so it is restored
    s: Scenario
    engine: str
    defaults: dict[str, Any]  # verl's defaults for the engine

    def item(self, value: Any, key: str | None = None) -> list[Item]:
        verl = f"+{self.km.verl}" if self.km.verl in PLUS_KEYS else self.km.verl  # Hydra appends with '+'
        return [(self.km.group, key or verl, value)]


def _critic_strategy(f: _Field) -> list[Item]:
    if f.engine == "megatron":
        return []
    effective = f.value or f.s.actor.strategy
    if effective == "megatron":
        return []  # a Megatron critic beside an FSDP actor: not expressible, goes to # rlplan
    if (need_critic(f.s) or f.value is not None or f.differs_from_base) and effective != f.defaults[f.km.verl]:
        return f.item(effective)
    return []


def _model_path_of(used: Callable[[Scenario], bool]) -> Callable[[_Field], list[Item]]:
    """A second model's path (critic, reward model): emitted when that model runs or the path is set."""

    def items(f: _Field) -> list[Item]:
        if used(f.s) or f.value is not None or f.differs_from_base:
            return f.item(_to_verl_value(f.km.native, f.value, f.s))
        return []

    return items


def _kv_cache_dtype(f: _Field) -> list[Item]:
    if f.value == "auto":
        return []
    name = f.s.rollout.name
    return f.item(_kv_dtype_to_verl(f.value, name), key=f"+{_R}.engine_kwargs.{name}.kv_cache_dtype")


def _optimizer(f: _Field) -> list[Item] | None:
    if f.engine != "megatron":
        return None  # FSDP: the generic rule
    verl_value = _to_verl_value(f.km.native, f.value, f.s)
    if verl_value not in ("adam", "sgd"):
        return []  # Megatron offers adam / sgd / muon only: goes to # rlplan
    return f.item(verl_value) if verl_value != f.defaults[f.km.verl] or f.differs_from_base else []


def _max_num_seqs(f: _Field) -> list[Item] | None:
    """Written whenever the scenario's release has another default (its import would take that default)."""
    if f.value != behaviour(f.s.verl_version).max_num_seqs_default:
        return f.item(f.value)
    return None


def _layered_summon(f: _Field) -> list[Item] | None:
    """``layered_summon`` on: also a real ``rollout.load_format``. verl raises at the first LoRA weight sync when
    vLLM started from ``dummy`` weights (``collect_lora_params``: "To use layered_summon, you must make sure
    base-model is preloaded in vllm, e.g. let rollout.load_format=safetensors"; every release 0.5.0-0.9.1)."""
    if not f.value:
        return None
    return _generic(f) + [(f.km.group, f"{_R}.load_format", LAYERED_SUMMON_LOAD_FORMAT)]


def _release_has_key(f: _Field) -> list[Item] | None:
    """A key some releases do not have (``megatron.grad_offload``: in the 0.5.0-0.9.0 Megatron configs, removed in
    0.9.1, where Hydra would refuse it): left to a ``# rlplan:`` line for those releases."""
    if behaviour(f.s.verl_version).megatron_grad_offload_key:
        return None
    return []


def _megatron_lora(f: _Field) -> list[Item] | None:
    """Under Megatron, LoRA is the model.lora dict (``keys.MEGATRON_LORA_KEYS``): the same value, that key. The
    0.5 / 0.6 Megatron configs have no such dict (Hydra would refuse it): a ``# rlplan:`` line there."""
    if f.engine != "megatron":
        return None
    if not behaviour(f.s.verl_version).megatron_lora:
        return []
    return [(g, MEGATRON_LORA_KEYS[f.km.native], v) for g, _, v in _generic(f)]


# Fields whose export is not the generic rule; a handler returning None falls back to it.


_SPECIAL: dict[str, Callable[[_Field], list[Item] | None]] = {
    "model.lora_rank": _megatron_lora,
    "model.lora_alpha": _megatron_lora,
    "critic.strategy": _critic_strategy,
    "critic.model_path": _model_path_of(need_critic),
    "reward_model.model_path": _model_path_of(lambda s: s.reward_model.enable),
    "rollout.kv_cache_dtype": _kv_cache_dtype,
    "actor.optim.optimizer": _optimizer,
    "rollout.max_num_seqs": _max_num_seqs,
    "rollout.layered_summon": _layered_summon,
    "actor.megatron.grad_offload": _release_has_key,
    "critic.megatron.grad_offload": _release_has_key,
}
LAYERED_SUMMON_LOAD_FORMAT = "safetensors"  # the value verl's own message asks for
# Fields a launch spells otherwise: the cluster shape (trainer.*) and the actor strategy (model_engine).
_NOT_KEYED = frozenset({"hardware.num_gpus", "hardware.gpus_per_node", "actor.strategy"})


def _generic(f: _Field) -> list[Item]:
    """A value that differs from the default (or from the base, or one a launch always needs)."""
    native = f.km.native
    if (
        f.value == native_default(native)
        and not f.differs_from_base
        and not (native in ALWAYS_EMIT and f.value is not None)
    ):
        return []
    if f.value is None:
        return f.item(f.defaults.get(f.km.verl))  # back to verl's default (an interpolation for "inherit" fields)
    return f.item(_to_verl_value(native, f.value, f.s))


def _field_items(km: KeyMap, s: Scenario, base: Scenario | None, engine: str, defaults: dict[str, Any]) -> list[Item]:
    value = _get(s, km.native)
    f = _Field(km, value, base is not None and _get(base, km.native) != value, s, engine, defaults)
    special = _SPECIAL.get(km.native)
    out = special(f) if special is not None else None
    return _generic(f) if out is None else out


def _launch_items(s: Scenario) -> list[Item]:
    """Keys a launch needs beside the mapped fields: FSDP2, the reward model's engine, the cluster shape."""
    items: list[Item] = []
    if s.actor.strategy == "fsdp2":
        items.append(("actor", f"{_A}.strategy", "fsdp2"))
    if s.reward_model.enable:
        items.append(("reward", "reward.reward_model.rollout.name", s.rollout.name))
    per_node = min(s.hardware.num_gpus, s.hardware.gpus_per_node)
    items.append(("trainer", "trainer.n_gpus_per_node", per_node))
    items.append(("trainer", "trainer.nnodes", max(1, s.hardware.num_gpus // per_node)))
    return items


def _verl_items(s: Scenario, base: Scenario | None) -> list[Item]:
    eng = engine_of(s)
    defaults = verl_defaults(eng)
    items: list[Item] = [("actor", "model_engine", "megatron")] if eng == "megatron" else []
    for km in KEY_MAPS:
        if eng in km.engines and km.native not in _NOT_KEYED:
            items += _field_items(km, s, base, eng, defaults)
    items = placement_items(s, base, items + _launch_items(s))
    order = {g: i for i, g in enumerate(GROUPS)}
    return sorted(items, key=lambda it: order[it[0]])  # stable: keeps KEY_MAPS order within a group


def export_scenario(scenario: Scenario, base: Scenario | None = None) -> Export:
    """verl overrides for ``scenario`` plus the ``# rlplan:`` settings verl cannot express.

    With ``base``, keys whose value in ``base`` differs are emitted too, so that reading the overrides
    onto ``base`` (``load_scenario(base, verl_overrides=...)``) gives ``scenario`` back."""
    items = _verl_items(scenario, base)
    natives, _ = _import_flat(
        {key: value for _, key, value in items},
        engine_hint=None,
        source="script",
        rlplan=[],
        quiet=True,
        release=(scenario.verl_version, None, scenario.hardware.num_gpus),
    )
    rebuilt = (base or _DEFAULTS).model_dump(mode="python")
    reset_inherited_means(rebuilt, natives)  # as apply_verl_overrides does: a mean kept needs a # rlplan line
    apply_natives(rebuilt, natives)
    target = scenario.model_dump(mode="python")
    rlplan = [(f, _get(target, f)) for f in SCENARIO_FIELDS if _get(rebuilt, f) != _get(target, f)]
    launch = LAUNCH.replace("verl.trainer.main_ppo", launch_module(scenario))
    return Export(overrides=items, rlplan=rlplan, scenario_name=scenario.name, launch=launch)


def export_overrides(scenario: Scenario, base: Scenario | None = None) -> list[tuple[str, Any]]:
    """``(verl key, value)`` pairs for ``scenario``: keys that differ from verl 0.9.1's defaults plus the
    ones a launch always needs, grouped data / algorithm / actor / rollout / ref / critic / reward / trainer."""
    return [(k, v) for _, k, v in export_scenario(scenario, base).overrides]


def hydra_value(value: Any) -> str:
    """A value in Hydra's override grammar (``null``, ``true``, ``1e-06``, ``[a,b]``, ``'quoted str'``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{hydra_value(v)}" for k, v in value.items()) + "}"
    text = str(value)
    if text.startswith("${") or (re.fullmatch(r"[A-Za-z0-9_./:+@%~-]+", text) and _parse_scalar(text) == text):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _shell_word(key: str, value: Any) -> str:
    word = f"{key}={hydra_value(value)}"
    return word if re.fullmatch(r"[A-Za-z0-9_./:+@%=,-]+", word) else f"{key}={shlex.quote(hydra_value(value))}"


def comment_json(value: Any) -> str:
    """JSON for a ``# rlplan:`` comment line: one line whatever the value holds. Non-ASCII text stays readable,
    but every character that is not printable (controls, and U+2028 / U+2029 / U+0085, which YAML and
    ``str.splitlines`` treat as line breaks) is written as a ``\\uXXXX`` escape: a value can never end the
    comment and start a line of its own (a key injected into an exported YAML)."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return "".join(ch if ch.isprintable() else json.dumps(ch)[1:-1] for ch in text)


def _rlplan_lines(exp: Export) -> list[str]:
    return [f"# rlplan: {k}={comment_json(v)}" for k, v in exp.rlplan]


def format_overrides(
    scenario: Scenario | Export,
    style: Literal["command", "overrides"] = "command",
    base: Scenario | None = None,
) -> str:
    """``command``: a launch command ready to paste (``python3 -m verl.trainer.main_ppo \\`` and one
    ``key=value \\`` per line, a `` `# group` `` marker per role, which bash expands to nothing), preceded by
    ``# rlplan:`` lines for the settings verl has no key for. ``overrides``: one ``key=value`` per line,
    verl keys only (DESIGN.md 6.4), for ``--verl`` on top of the same base scenario."""
    exp = scenario if isinstance(scenario, Export) else export_scenario(scenario, base)
    if style == "overrides":
        return "\n".join(_shell_word(k, v) for _, k, v in exp.overrides) + "\n"
    lines = [
        f"# verl 0.9.1 launch settings exported by rlplan{f' from {exp.scenario_name!r}' if exp.scenario_name else ''}.",
        "# '# rlplan:' lines hold settings verl has no key for; `python -m calculator estimate --verl FILE` reads them.",
        *_rlplan_lines(exp),
        f"{exp.launch} \\",
    ]
    group = None
    for g, k, v in exp.overrides:
        if g != group:
            lines.append(f"    `# {g}` \\")
            group = g
        lines.append(f"    {_shell_word(k, v)} \\")
    lines[-1] = lines[-1][: -len(" \\")]
    return "\n".join(lines) + "\n"


def _nest(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for key, value in pairs:
        node = root
        parts = key.lstrip("+").split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return root


def _group_comments(body: str, tree: dict[str, Any], group_of: dict[str, str]) -> dict[int, str]:
    """Line number (0-based, in ``body``) -> the ``# group`` comment that goes before it: one per change of
    group, top-level keys and the keys under ``actor_rollout_ref``. The lines are found by composing the
    emitted YAML (key nodes carry their position), not by searching the text."""

    def group(prefix: str) -> str:
        return next(g for k, g in group_of.items() if k == prefix or k.startswith(prefix + "."))

    root = yaml.compose(body, Loader=yaml.SafeLoader)
    comments: dict[int, str] = {}
    last = None
    for key_node, value_node in root.value:
        top = key_node.value
        if top == "actor_rollout_ref" and isinstance(tree.get(top), dict):
            for sub_key, _ in value_node.value:
                g = group(f"{top}.{sub_key.value}")
                if g != last:
                    comments[sub_key.start_mark.line] = f"  # {g}"
                    last = g
            continue
        g = group(top)
        if g != last:
            comments[key_node.start_mark.line] = f"# {g}"
            last = g
    return comments


def export_yaml(scenario: Scenario, base: Scenario | None = None) -> str:
    """The same settings as a nested verl YAML fragment, one ``# group`` comment per role, with
    ``# rlplan:`` comment lines on top. ``import_verl_text`` reads it back.

    The body is one YAML emitter call on the data (never values formatted into text); comments are
    constant text or :func:`comment_json`, and the result is read back and compared with the data before
    it is returned."""
    exp = export_scenario(scenario, base)
    head = [
        f"# verl 0.9.1 settings exported by rlplan{f' from {exp.scenario_name!r}' if exp.scenario_name else ''}.",
        *_rlplan_lines(exp),
    ]
    if any(k == "model_engine" for _, k, _ in exp.overrides):
        head.append("# Megatron: also pass model_engine=megatron on the command line (it picks verl's config group).")
    group_of = {k.lstrip("+"): g for g, k, _ in exp.overrides}
    tree = _nest([(k, v) for _, k, v in exp.overrides])
    body = dump_yaml(tree, sort_keys=False) if tree else ""  # line-break characters double-quoted
    comments = _group_comments(body, tree, group_of) if tree else {}
    lines: list[str] = list(head)
    for i, line in enumerate(body.rstrip("\n").split("\n") if body else []):
        if i in comments:
            lines.append(comments[i])
        lines.append(line)
    text = "\n".join(lines) + "\n"
    if yaml.safe_load(text) != (tree or None):  # the comments added nothing: the data reads back unchanged
        raise ValueError("export_yaml: the emitted YAML does not read back as its settings")
    return text
