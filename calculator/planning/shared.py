"""What the searches of several GPU types in one plan share (issue #18): candidate scenarios, and the memory
estimates of GPU types whose memory is the same.

``plan()`` searches every GPU type for the same scenario. Two facts make much of that work common:

- **A candidate's scenario differs between GPU types only in ``hardware.gpu``.** ``build_scenario`` reads the
  GPU type nowhere: the Scenario's own rules, ``batch_geometry_problem`` and ``parallel_problem`` are GPU-free,
  so a point of the space is valid for every GPU type or for none. One build serves all of them; another
  GPU type's scenario is that one with ``hardware.gpu`` replaced (:func:`with_gpu`).
- **The memory model reads three facts of the GPU** (:func:`memory_signature`): its usable memory
  (``GpuSpec.usable_memory_bytes``: ``calculator/memory/context.py``, ``phases.py``, ``pools.py`` and
  ``report/estimate.py`` read nothing else of ``ctx.gpu``), the host RAM per node
  (``calculator.memory.host``: ``hardware.host_ram_gib_per_node``, else the GPU's server-class default) and
  whether verl's expandable-segments switch reaches its allocator (``resolve.resolved.allocator_switch_reaches``,
  read through ``Resolved.trainer_expandable_segments`` by the fragmentation term).
  GPU types with equal signatures (e.g. H100-SXM and H800, A100-80GB and A800, L20 and L40S, RTX 3090 and
  4090) get the same memory estimate of the same candidate, field for field, except the report's
  ``hardware.gpu`` / ``gpu_name`` (:func:`for_gpu`); so the fit verdict is the same and only the step time,
  which reads FLOPs and bandwidths, is computed per GPU type. ``tests/planning/test_shared.py`` checks both
  facts on every pair of presets with equal signatures.

Left out: sharing between GPU types whose memory differs (a candidate's KV cache and vLLM's startup check read
the usable memory); the time model, which is per GPU type.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from calculator.inputs.hardware import GpuSpec, host_ram_gib_per_node
from calculator.inputs.scenario import Scenario
from calculator.planning.fit import FitCheck
from calculator.planning.space import Knobs
from calculator.report.models import Report
from calculator.resolve.resolved import allocator_switch_reaches

MemorySignature = tuple[float, float, bool]  # (usable memory GiB, host RAM GiB per node, allocator switch reaches)


def memory_signature(s: Scenario, gpu: GpuSpec) -> MemorySignature:
    """Everything the memory estimate of ``s`` reads of its GPU type ``gpu`` (module docstring)."""
    host = host_ram_gib_per_node(gpu.id, s.hardware.host_ram_gib_per_node)
    return (gpu.usable_memory_gib, host, allocator_switch_reaches(gpu))


def with_gpu(s: Scenario, gpu_id: str) -> Scenario:
    """``s`` on GPU type ``gpu_id`` (no other field changes, so no rule of the Scenario can change its verdict)."""
    if s.hardware.gpu == gpu_id:
        return s
    return s.model_copy(update={"hardware": s.hardware.model_copy(update={"gpu": gpu_id})})


def for_gpu(report: Report, gpu: GpuSpec) -> Report:
    """A memory estimate made for another GPU type of the same :func:`memory_signature`, as ``gpu``'s."""
    hw = report.hardware
    if hw.gpu == gpu.id:
        return report
    return report.model_copy(update={"hardware": hw.model_copy(update={"gpu": gpu.id, "gpu_name": gpu.name})})


@dataclass
class SharedCandidates:
    """Caches one ``plan()`` call shares between the searches of its GPU types: built scenarios by knobs (for
    whichever GPU type built them first), and memory estimates (report without time, fit verdict) by memory
    signature and knobs. Valid for one base scenario (up to ``hardware.gpu``) and one margin."""

    base: Scenario | None = None  # the first search's base scenario (bound by :meth:`serves`)
    margin: float | None = None
    builds: dict[Knobs, Scenario | None] = field(default_factory=dict)
    memory: dict[tuple[MemorySignature, Knobs], tuple[Report, FitCheck]] = field(default_factory=dict)
    kv_ok: dict[tuple[MemorySignature, tuple[object, ...]], bool] = field(default_factory=dict)
    minima: dict[float, int] = field(default_factory=dict)  # usable memory GiB -> smallest feasible count
    # (GPUs, rollout TP, fused kernels) -> the one-micro-batch frontier member (GpuSearch._one_micro_batch): the
    # micro-batch counts do not depend on the GPU type
    singles: dict[tuple[int, int, bool], Knobs | None] = field(default_factory=dict)

    def count_guess(self, gpu: GpuSpec) -> int | None:
        """Where to start the search for ``gpu``'s smallest feasible count (only the number of probes depends on
        it): the minimum found for the GPU type of nearest usable memory, scaled by the ratio of usable memory
        (the training state per GPU falls as 1/N). None before any minimum is known."""
        if not self.minima:
            return None
        u = gpu.usable_memory_gib
        ref = min(self.minima, key=lambda x: (abs(math.log(x / u)), x))
        return max(1, math.ceil(self.minima[ref] * ref / u - 1e-9))

    def serves(self, base: Scenario, margin: float) -> bool:
        """Whether a search of ``base`` (one GPU type of the plan) at ``margin`` may use these caches; the first
        search to ask binds them to its base and margin."""
        if self.base is None:
            self.base, self.margin = base, margin
            return True
        return margin == self.margin and with_gpu(base, self.base.hardware.gpu) == self.base


__all__ = ["MemorySignature", "SharedCandidates", "for_gpu", "memory_signature", "with_gpu"]
