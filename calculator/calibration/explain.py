"""Explain a real OOM (``python -m calculator explain-oom``): the phase, the predicted component whose size matches
the failed allocation, what else the model says was resident, and the advisor's ranked fixes.

Matching: in the phase the stack names, the candidate sizes are the phase's components (GiB per GPU, as
``estimate()`` gives them) and, when the failing frame is a logits function (``entropy_from_logits``,
``logprobs_from_logits``...), the fp32 copy of the logits those functions allocate (DESIGN.md 4.4: the softmax of
``tokens x V`` in fp32 is twice the bf16 logits component). The match is the candidate closest to the allocation
on a log scale. Engine start failures match the rollout engine's figures (``startup_required_gib``, the KV
cache); a Ray host kill matches the node's RAM. Fixes come from :func:`calculator.planning.advisor.advise`; when
the model thinks the scenario fits but the run failed, the advisor is asked for a margin that excludes the
predicted peak, so that it ranks the changes that lower it.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict

from calculator.calibration.compare import host_components_gib, host_ram_gib
from calculator.calibration.oom_parse import OomEvent, parse_oom
from calculator.errors import InputError
from calculator.inputs.scenario import Scenario
from calculator.loading import load_scenario
from calculator.planning.advisor import advise
from calculator.planning.fit import DEFAULT_MARGIN
from calculator.planning.settings import format_verl_value
from calculator.report.estimate import estimate
from calculator.report.models import PhaseOut, Report
from calculator.verl.fields import native_to_verl_items

MAX_FIXES = 8
# The engine started but its KV cache is too small: vLLM's own advice is to give it MORE of the GPU
# ("Try increasing `gpu_memory_utilization`", vllm/v1/core/kv_cache_utils.py) or fewer bytes per token per GPU.
KV_SHORTAGE = ("vllm_kv_below_max_model_len", "vllm_no_kv_cache", "sglang_no_kv_cache")
GPU_UTIL_KEY = "actor_rollout_ref.rollout.gpu_memory_utilization"
HOST_KINDS = ("host_oom", "host_oom_suspected")


class Fix(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rank: int
    lever: str
    title: str
    fits: bool
    peak_gib_per_gpu: float
    added_step_s: float | None
    verl_overrides: list[str]
    phase_gib_after: float | None = None


class OomExplanation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    phase: str
    component: str
    allocation_gib: float | None
    matched_gib: float | None
    fixes: list[Fix]
    event: OomEvent
    resident_gib: dict[str, float]
    predicted_phase_gib: float | None
    usable_memory_gib: float
    summary: str
    advice_status: str
    notes: list[str]


# The tensors a step allocates anew (DESIGN.md 4.3-4.6): a failed allocation is one of these, never a tensor that
# was already resident (parameters, optimizer state, the CUDA context, the engine's weights and KV cache).
TRANSIENT_COMPONENTS = (
    "_activations",
    "_logits",
    "_entropy",
    "_grads",
    "_unsharded_params",
    "_optimizer_step",
    "sync_",
)
PHASE_ROLE = {
    "update_actor": "actor_",
    "old_log_prob": "actor_",
    "ref_log_prob": "ref_",
    "critic_values": "critic_",
    "update_critic": "critic_",
    "reward": "reward_",
    "weight_sync": "sync_",
}


def _candidates(phase: PhaseOut, logits_function: str | None) -> dict[str, float]:
    """The components the failed allocation can be: the phase's own role's transient tensors (the actor's in
    ``update_actor``), else any transient tensor, else every component; plus the fp32 logits copy of a logits
    function in the stack."""
    positive = {k: v for k, v in phase.components.items() if v > 0}
    transient = {k: v for k, v in positive.items() if any(t in k for t in TRANSIENT_COMPONENTS)}
    role = PHASE_ROLE.get(phase.name, "")
    own = {k: v for k, v in transient.items() if role and k.startswith(role)}
    cands = own or transient or positive
    if logits_function:
        for k, v in positive.items():
            if k.endswith("_logits") and (not role or k.startswith(role)):
                cands[f"{k} (fp32 copy in {logits_function})"] = 2 * v
    return cands


def _closest(cands: dict[str, float], target: float) -> tuple[str, float] | None:
    if not cands or target <= 0:
        return None
    return min(cands.items(), key=lambda kv: abs(math.log(kv[1] / target)))


def _match(report: Report, event: OomEvent) -> tuple[str, float | None, PhaseOut | None]:
    """(component, its predicted GiB, the phase) for the event."""
    ro = report.rollout
    if event.kind == "vllm_startup_free_memory":
        return "rollout_startup_required (gpu_memory_utilization x total)", ro.startup_required_gib, None
    if event.kind in ("vllm_kv_below_max_model_len", "vllm_no_kv_cache", "sglang_no_kv_cache"):
        return "kv_cache", ro.kv_cache_gib_per_gpu, None
    if event.kind == "vllm_wake_up_oom":
        rollout = next((p for p in report.phases if p.name == "rollout"), None)
        engine = (ro.weights_gib_per_gpu + ro.kv_cache_gib_per_gpu) if ro else None
        return "rollout_weights + kv_cache (mapped back at wake_up)", engine, rollout
    if event.kind in HOST_KINDS:
        return "host_ram_used_per_node (predicted)", host_ram_gib(report), None
    if event.kind == "sglang_cuda_graph_oom":
        rollout = next((p for p in report.phases if p.name == "rollout"), None)
        graphs = rollout.components.get("cuda_graphs") if rollout is not None else None
        return "cuda_graphs", graphs, rollout
    phase = next((p for p in report.phases if p.name == event.phase), None)
    if phase is None:
        phase = max(report.phases, key=lambda p: p.total_gib)
    hit = _closest(_candidates(phase, event.logits_function), event.allocation_gib or 0.0)
    return (hit[0], hit[1], phase) if hit else ("unknown", None, phase)


def _phase_after(scenario: Scenario, changes: dict[str, Any], phase: str) -> float | None:
    """The failed phase's predicted GiB per GPU once a fix is applied."""
    try:
        report = estimate(load_scenario(scenario, changes))
    except InputError:
        return None
    return next((p.total_gib for p in report.phases if p.name == phase), None)


def _kv_fixes(scenario: Scenario, report: Report) -> list[Fix]:
    """For a KV-cache shortage: a larger ``gpu_memory_utilization`` (+0.1, at most 0.95) and twice the rollout TP, each
    kept when ``estimate()`` says it grows the KV cache per GPU; ``fits`` says whether the trainer still fits beside it."""
    ro = report.rollout
    util, tp = scenario.rollout.gpu_memory_utilization, scenario.rollout.tensor_model_parallel_size
    options = []
    if util < 0.95:
        new = round(min(util + 0.1, 0.95), 2)
        options.append(("gpu_memory_utilization", f"Give the engine more memory: gpu_memory_utilization {new}", new))
    if 2 * tp <= scenario.hardware.gpus_per_node:
        options.append(("tensor_model_parallel_size", f"Larger rollout tensor parallelism: {2 * tp}", 2 * tp))
    fixes: list[Fix] = []
    for name, title, value in options:
        changes = {f"rollout.{name}": value}
        try:
            after = estimate(load_scenario(scenario, changes))
        except InputError:
            continue
        if ro is None or after.rollout is None or after.rollout.kv_cache_gib_per_gpu <= ro.kv_cache_gib_per_gpu:
            continue
        step_before = report.time.step_s if report.time else None
        step_after = after.time.step_s if after.time else None
        fixes.append(
            Fix(
                rank=len(fixes) + 1,
                lever=f"rollout_{name}",
                title=title,
                fits=after.peak.fits,
                peak_gib_per_gpu=after.peak.gib_per_gpu,
                added_step_s=step_after - step_before if step_after is not None and step_before is not None else None,
                verl_overrides=[
                    f"{k}={format_verl_value(v)}" for k, v in native_to_verl_items(f"rollout.{name}", value, scenario)
                ],
                phase_gib_after=after.rollout.kv_cache_gib_per_gpu,
            )
        )
    return fixes


# Host-RAM levers: each offload moves a state to the node's RAM (DESIGN.md 4.9); turning it off gives that RAM back
# and costs GPU memory (``fits`` says whether the GPU still holds it).
HOST_OFFLOAD_FIELDS = (
    "actor.fsdp_config.param_offload",
    "actor.fsdp_config.optimizer_offload",
    "ref.fsdp_config.param_offload",
    "critic.fsdp.param_offload",
    "critic.fsdp.optimizer_offload",
    "actor.megatron.param_offload",
    "actor.megatron.optimizer_offload",
    "critic.megatron.param_offload",
    "critic.megatron.optimizer_offload",
)


def _field(scenario: Scenario, dotted: str) -> Any:
    obj: Any = scenario
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
    return obj


def _host_fixes(scenario: Scenario, report: Report) -> list[Fix]:
    """For a host kill: each offload the scenario turns on, turned off, kept when ``estimate()`` says the node's RAM
    drops; ranked by the RAM it saves (``phase_gib_after``: the node's predicted RAM after the change)."""
    before = host_ram_gib(report)
    found: list[tuple[float, Fix]] = []
    for path in HOST_OFFLOAD_FIELDS:
        if _field(scenario, path) is not True:
            continue
        try:
            after = estimate(load_scenario(scenario, {path: False}))
        except InputError:
            continue
        ram = host_ram_gib(after)
        if before is None or ram is None or ram >= before - 0.01:
            continue
        fix = Fix(
            rank=0,
            lever=f"no_{path.replace('.', '_')}",
            title=f"Turn off {path} (keeps that state on the GPU: {before - ram:.1f} GiB less host RAM per node)",
            fits=after.peak.fits,
            peak_gib_per_gpu=after.peak.gib_per_gpu,
            added_step_s=None,
            verl_overrides=[f"{k}={format_verl_value(v)}" for k, v in native_to_verl_items(path, False, scenario)],
            phase_gib_after=ram,
        )
        found.append((ram, fix))
    found.sort(key=lambda rf: rf[0])
    return [f.model_copy(update={"rank": i + 1}) for i, (_, f) in enumerate(found)]


def _lowers_util(s: object) -> bool:
    return any(line.startswith(GPU_UTIL_KEY + "=") for line in getattr(s, "verl_overrides", []))


def _fixes(scenario: Scenario, report: Report, event: OomEvent) -> tuple[list[Fix], str, list[str]]:
    notes: list[str] = []
    if event.kind == "host_oom_suspected":
        notes.append(
            "Ray names the kernel's OOM killer as the first possible cause of this worker's death, not the only one: "
            "check the node's kernel log (dmesg) for 'Out of memory: Killed process'"
        )
    if event.kind in HOST_KINDS:
        notes.append(
            "host RAM: the fixes turn off the offloads that put state in the node's RAM (their GPU cost in 'fits'); "
            "beyond them: fewer data-loader workers, or more RAM per node"
        )
        return _host_fixes(scenario, report), "host", notes
    advice = advise(scenario)
    if advice.status == "fits":
        usable = report.peak.usable_memory_gib
        margin = min(max(1 - 0.95 * report.peak.gib_per_gpu / usable, DEFAULT_MARGIN), 0.9)
        notes.append(
            f"the model predicts a peak of {report.peak.gib_per_gpu:.1f} GiB of {usable:.1f} usable, but the run "
            f"failed: fixes are ranked for a {margin:.0%} margin, i.e. for lowering that peak"
        )
        advice = advise(scenario, margin=margin)
    fixes: list[Fix] = _kv_fixes(scenario, report) if event.kind in KV_SHORTAGE else []
    if event.kind in KV_SHORTAGE:
        notes.append(
            "the KV cache is too small: fixes that give the engine more memory come first; the advisor's changes "
            "that lower gpu_memory_utilization are left out (they shrink the KV cache further)"
        )
    before = next((p.total_gib for p in report.phases if p.name == event.phase), None)
    for s in advice.suggestions:
        if len(fixes) >= MAX_FIXES:
            break
        if event.kind in KV_SHORTAGE and _lowers_util(s):
            continue
        after = _phase_after(scenario, dict(s.native_changes), event.phase) if before is not None else None
        lowers = after is not None and before is not None and after < before - 0.01
        if not (lowers if event.kind == "cuda_oom" and before is not None else s.helps):
            continue
        fixes.append(
            Fix(
                rank=len(fixes) + 1,
                lever=s.lever,
                title=s.title,
                fits=s.fits,
                peak_gib_per_gpu=s.peak_gib_per_gpu,
                added_step_s=s.added_step_s,
                verl_overrides=list(s.verl_overrides),
                phase_gib_after=after,
            )
        )
    if event.kind == "cuda_oom" and before is not None:
        notes.append(f"fixes kept in the advisor's order if they lower {event.phase} ({before:.1f} GiB predicted)")
    return fixes, advice.status, notes


def _summary(event: OomEvent, phase: str, component: str, matched: float | None) -> str:
    alloc = f"{event.allocation_gib:.2f} GiB" if event.allocation_gib is not None else "an allocation"
    pred = f"{matched:.2f} GiB predicted" if matched is not None else "no predicted size"
    where = "" if phase == "host" else f" in {phase}"
    what = {
        "cuda_oom": f"{alloc} failed in {phase}",
        "vllm_startup_free_memory": f"vLLM could not start: it needs {alloc} free at start",
        "vllm_kv_below_max_model_len": "vLLM's KV cache cannot hold one max_model_len sequence",
        "vllm_no_kv_cache": "vLLM has no memory left for the KV cache",
        "vllm_wake_up_oom": f"vLLM could not map its weights and KV cache back at wake_up in {phase}",
        "sglang_no_kv_cache": "SGLang has no memory left for its KV pool (mem_fraction_static)",
        "sglang_cuda_graph_oom": f"SGLang ran out of memory capturing its CUDA graphs ({alloc}) after the KV pool took "
        "its share (SGLang's advice: a smaller mem_fraction_static or cuda_graph_max_bs)",
        "host_oom": f"Ray killed a worker for host memory ({alloc} used on the node){where}",
        "host_oom_suspected": f"a Ray worker was killed by SIGKILL{where}, most likely by the kernel's OOM killer",
    }[event.kind]
    return f"{what}; closest predicted component: {component} ({pred})"


def _resident(report: Report, event: OomEvent, phase: PhaseOut | None) -> dict[str, float]:
    """What the model says was resident: the failed phase's components; for an engine failure the rollout phase's
    (the trainer's resident state beside the engine); for a host kill the node's predicted RAM by component."""
    if event.kind in HOST_KINDS:
        comps = host_components_gib(report)
    else:
        where = phase or next((p for p in report.phases if p.name == "rollout"), None)
        comps = dict(where.components) if where is not None else {}
    return {k: round(v, 3) for k, v in sorted(comps.items(), key=lambda kv: -kv[1]) if v > 0}


def explain_oom(scenario: Scenario, text: str, what: str = "traceback") -> OomExplanation:
    """Parse ``text`` and explain the OOM against ``scenario``'s prediction."""
    event = parse_oom(text, what)
    report = estimate(scenario)
    component, matched, phase = _match(report, event)
    phase_name = event.phase or (phase.name if phase else "unknown")
    resident = _resident(report, event, phase)
    fixes, status, notes = _fixes(scenario, report, event)
    if event.phase is None and phase is not None:
        notes.append(f"no verl function in the stack names the phase; the predicted peak phase {phase.name} is used")
    elif event.kind == "cuda_oom" and phase is not None and phase.name != event.phase:
        notes.append(
            f"the scenario has no {event.phase} phase (roles: {', '.join(report.roles)}); compared with its largest "
            f"phase {phase.name}: check that the scenario matches the run"
        )
    return OomExplanation(
        phase=phase_name,
        component=component,
        allocation_gib=event.allocation_gib,
        matched_gib=matched,
        fixes=fixes,
        event=event,
        resident_gib=resident,
        predicted_phase_gib=phase.total_gib if phase is not None else None,
        usable_memory_gib=report.peak.usable_memory_gib,
        summary=_summary(event, phase_name, component, matched),
        advice_status=status,
        notes=notes,
    )


def explanation_json(e: OomExplanation) -> dict[str, Any]:
    return e.model_dump(mode="json")
