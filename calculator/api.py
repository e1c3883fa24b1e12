"""Python API: ``load_scenario`` and ``estimate`` (DESIGN.md 6.3).

from calculator import load_scenario, estimate
scenario = load_scenario("qwen2.5-7b-grpo-8xh100", overrides={"data.mean_response_length": 300},
                         verl_overrides=["actor_rollout_ref.rollout.n=8"])
report = estimate(scenario)
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from calculator import batching, memory
from calculator.architecture import Architecture, ArchitectureError, parse_hf_config
from calculator.errors import InputError, from_validation_error
from calculator.presets import get_gpu, get_model, read_mapping_file, read_yaml_text, scenario_presets
from calculator.report import (
    HardwareInfo,
    ModelInfo,
    PeakOut,
    PhaseMemory,
    PhaseOut,
    Report,
    RolloutOut,
)
from calculator.rollout import BLOCK_SIZE_TOKENS
from calculator.scenario import Scenario
from calculator.throughput import step_time
from calculator.units import GIB_BYTES, ceil_div
from calculator.warnings import collect_warnings


def parse_value(text: str) -> Any:
    """A ``--set`` / override value as YAML scalar: 8 -> int, true -> bool, null -> None, 1e-6 -> float.
    Text that is not valid YAML, or is refused by the bounded loader (alias bombs, deep nesting), stays text."""
    try:
        value = read_yaml_text(text, "value")
    except InputError:
        return text
    if isinstance(value, str):
        try:
            return float(value) if any(ch in value for ch in ".eE") and value.lower() not in ("e",) else value
        except ValueError:
            return value
    return value


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    """Set ``a.b.c`` in a nested dict, creating mappings on the way; a non-mapping on the path is an error."""
    parts = key.split(".")
    node = data
    for i, part in enumerate(parts[:-1]):
        nxt = node.get(part)
        if nxt is None:
            nxt = {}
            node[part] = nxt
        if not isinstance(nxt, dict):
            raise InputError(f"{'.'.join(parts[: i + 1])}: is a value, cannot set {key}")
        node = nxt
    node[parts[-1]] = value


def _base_mapping(source: str | Path | dict[str, Any] | Scenario | None) -> dict[str, Any]:
    if source is None:
        return {}
    if isinstance(source, Scenario):
        return source.model_dump(mode="python")
    if isinstance(source, dict):
        return copy.deepcopy(source)
    text = str(source)
    presets = scenario_presets(strict=False)  # a broken team file must not take the others down
    if text in presets:
        return copy.deepcopy(presets[text])
    p = Path(text)
    if p.suffix.lower() in (".yaml", ".yml", ".json") or p.exists():
        return read_mapping_file(p, f"scenario file {p.name}")
    raise InputError(f"scenario: unknown scenario preset or file {text!r} (presets: {', '.join(sorted(presets))})")


def load_scenario_with_warnings(
    source: str | Path | dict[str, Any] | Scenario | None = None,
    overrides: dict[str, Any] | None = None,
    verl_overrides: list[str] | str | None = None,
) -> tuple[Scenario, list[str]]:
    """Build a validated scenario; also return the warnings of the verl import (unknown keys...)."""
    from calculator.verl import apply_verl_overrides

    data = _base_mapping(source)
    notes: list[str] = []
    if verl_overrides:
        notes += apply_verl_overrides(data, verl_overrides)
    for key, value in (overrides or {}).items():
        set_dotted(data, key, value)
    try:
        scenario = Scenario(**data)
    except ValidationError as err:
        raise from_validation_error(err) from None
    except TypeError as err:
        raise InputError(f"scenario: {err}") from None
    resolve_architectures(scenario)  # unknown model ids are input errors, reported here
    get_gpu(scenario.hardware.gpu)
    return scenario, notes


def load_scenario(
    source: str | Path | dict[str, Any] | Scenario | None = None,
    overrides: dict[str, Any] | None = None,
    verl_overrides: list[str] | str | None = None,
) -> Scenario:
    """A scenario preset id, a YAML path, a mapping or a Scenario, with native dotted ``overrides`` and
    verl Hydra ``verl_overrides`` applied (verl first, then native). Raises :class:`InputError`."""
    return load_scenario_with_warnings(source, overrides, verl_overrides)[0]


@functools.lru_cache(maxsize=512)
def _arch_from_json(cfg_json: str) -> Architecture:
    import json

    return parse_hf_config(json.loads(cfg_json))


def _arch(model_id: str | None, config: dict[str, Any] | None, field: str) -> Architecture:
    if config is not None:
        import json

        try:
            return _arch_from_json(json.dumps(config, sort_keys=True, default=str))
        except ArchitectureError as err:
            raise InputError(f"{field}: {err}") from None
        except (TypeError, ValueError, RecursionError) as err:  # keys of mixed types, nesting json cannot write
            raise InputError(f"{field}: not a JSON object of config.json fields ({type(err).__name__})") from None
    assert model_id is not None
    return get_model(model_id, field).architecture


def resolve_architectures(s: Scenario) -> tuple[Architecture, Architecture | None, Architecture | None]:
    """Actor, critic and reward-model architectures (critic/reward default to the actor's)."""
    actor = _arch(s.model.path, s.model.config, "model.config" if s.model.config is not None else "model.path")
    critic = _arch(s.critic.model_path, None, "critic.model_path") if s.critic.model_path else None
    reward = _arch(s.reward_model.model_path, None, "reward_model.model_path") if s.reward_model.model_path else None
    return actor, critic, reward


def model_name(s: Scenario) -> str:
    if s.model.config is not None:
        return str(
            s.model.config.get("_name_or_path")
            or s.model.config.get("name")
            or f"custom {s.model.config.get('model_type')}"
        )
    return get_model(s.model.path).name


def _phase_out(p: PhaseMemory) -> PhaseOut:
    comps: dict[str, float] = {}
    for c in p.components:
        comps[c.name] = comps.get(c.name, 0.0) + c.bytes / GIB_BYTES
    return PhaseOut(
        name=p.name,
        total_gib=p.total_bytes / GIB_BYTES,
        components=comps,
        total_bytes=p.total_bytes,
        trainer_allocated_gib=p.trainer_allocated_bytes / GIB_BYTES,
        details=list(p.components),
    )


def build_context(s: Scenario) -> memory.Context:
    actor, critic, reward = resolve_architectures(s)
    return memory.build_context(s, get_gpu(s.hardware.gpu), actor, critic, reward)


def estimate(scenario: Scenario, *, with_time: bool = True, extra_warnings: list[str] | None = None) -> Report:
    """Memory per phase, peak, rollout capacity, step time and warnings for one scenario."""
    s = scenario
    ctx = build_context(s)
    gpu = ctx.gpu
    arch = ctx.actor.arch
    expected = memory.all_phases(ctx, worst=False)
    worst = memory.all_phases(ctx, worst=True)
    usable = gpu.usable_memory_bytes
    peak = max(expected, key=lambda p: p.total_bytes)
    wpeak = max(worst, key=lambda p: p.total_bytes)
    trainer_peak = max(p.trainer_allocated_bytes for p in expected)

    rb = ctx.rollout
    ln = batching.lengths(s, worst=False)
    lw = batching.lengths(s, worst=True)
    blocks = rb.num_blocks

    def concurrency(seq_len: int) -> int:
        per_seq_blocks = ceil_div(max(seq_len, 1), BLOCK_SIZE_TOKENS)
        return min(s.rollout.max_num_seqs, blocks // per_seq_blocks)

    startup_free = memory.startup_free_bytes(ctx)
    required = int(usable * s.rollout.gpu_memory_utilization)
    starts = memory.engine_starts(ctx)
    rollout = RolloutOut(
        engine=s.rollout.name,
        num_replicas=batching.rollout_replicas(s),
        kv_cache_gib_per_gpu=max(0, rb.kv_cache_bytes) / GIB_BYTES,
        kv_cache_tokens_per_replica=rb.kv_tokens,
        max_concurrent_sequences_per_replica=concurrency(ln.sequence),
        max_concurrent_sequences_per_replica_at_max_len=concurrency(lw.sequence),
        sequences_per_replica=batching.sequences_per_replica(s),
        budget_gib_per_gpu=rb.budget_bytes / GIB_BYTES,
        weights_gib_per_gpu=rb.weights_bytes / GIB_BYTES,
        activation_gib_per_gpu=rb.activation_bytes / GIB_BYTES,
        non_torch_gib_per_gpu=rb.non_torch_bytes / GIB_BYTES,
        cuda_graphs_gib_per_gpu=rb.cuda_graph_bytes / GIB_BYTES,
        startup_free_gib=startup_free / GIB_BYTES,
        startup_required_gib=required / GIB_BYTES,
        starts=starts,
        formulas=rb.formulas,
    )
    phases_out = [_phase_out(p) for p in expected]
    peak_out = PeakOut(
        phase=peak.name,
        gib_per_gpu=peak.total_bytes / GIB_BYTES,
        fits=peak.total_bytes <= usable and starts,
        headroom_gib=(usable - peak.total_bytes) / GIB_BYTES,
        worst_case_gib_per_gpu=wpeak.total_bytes / GIB_BYTES,
        worst_case_phase=wpeak.name,
        worst_case_fits=wpeak.total_bytes <= usable and starts,
        trainer_peak_allocated_gib=trainer_peak / GIB_BYTES,
        usable_memory_gib=gpu.usable_memory_gib,
    )
    time = step_time(s, ctx) if with_time else None
    warnings = list(extra_warnings or []) + collect_warnings(s, ctx, expected, worst, rollout, peak_out)
    from calculator.verl_checks import check_config

    warnings += [f"verl: {p.message}" for p in check_config(s)]
    return Report(
        model=ModelInfo(
            name=model_name(s),
            total_params=arch.total_params(),
            active_params=arch.active_params(),
            kv_cache_bytes_per_token=arch.kv_cache_bytes_per_token(2 if s.rollout.kv_cache_dtype == "auto" else 1),
        ),
        hardware=HardwareInfo(
            gpu=gpu.id,
            usable_memory_gib=gpu.usable_memory_gib,
            num_gpus=s.hardware.num_gpus,
            gpus_per_node=s.hardware.gpus_per_node,
            gpu_name=gpu.name,
            num_nodes=s.hardware.num_nodes,
        ),
        phases=phases_out,
        peak=peak_out,
        rollout=rollout,
        time=time,
        warnings=warnings,
        roles=[
            r
            for r in (
                "actor",
                "rollout",
                "ref" if ctx.ref_separate else "",
                "critic" if ctx.critic else "",
                "reward" if ctx.reward else "",
            )
            if r
        ],
        worst_case_phases=[_phase_out(p) for p in worst],
        verl_version=s.verl_version,
    )
