"""The planner's search over Megatron layouts for one GPU type (a Megatron actor only; FSDP plans never come here).

A layout (TP, PP, EP; ``calculator.planning.layouts``) is just another base scenario: each is searched by the
unchanged :class:`calculator.planning.search.GpuSearch` (its frontier, its monotone count search and their
invariants hold per layout), with the scenario's layout first.

- **min_gpus**: the smallest count at which any layout's searched configuration fits. The scenario's layout is
  searched as without layouts; another layout is searched only where it can do better, at counts strictly below
  the best minimum found so far (all counts up to ``max_gpus`` while none fits), and skipped without an estimate
  when its smallest world (``Layout.min_world``) is above them. Layouts come least model parallelism first, so a
  tie keeps the scenario's layout, then the one with less model parallelism. A layout that fits nowhere below the
  bound costs one probe: its search starts at the bound's top count (the fit is monotone over the counts), or at
  the count another GPU type's minimum of that layout suggests. Exact over the listed layouts (checked against
  every layout x every count in ``tests/planning/test_layout_search.py``).
- **recommended**: the existing selection key (``calculator.planning.recommend.selection_key``) over the fastest
  configurations of the winning layout at 1x, 2x and 4x its minimum and, when it fits somewhere, the scenario's
  layout's at 1x, 2x and 4x its own (first, so it wins ties).
- **Shared work**: each layout keeps one :class:`SharedCandidates` for the whole plan (builds, and memory estimates
  of GPU types of equal memory; with vLLM one KV verdict cache for every layout, :class:`LayoutCaches`);
  ``num_estimates`` counts every estimate the layouts' searches ran.

Left out: layouts other than the winner's and the scenario's are not compared at 2x / 4x (a layout with less model
parallelism could be cheaper per step there); a critic with a layout or model of its own keeps its ``critic.megatron`` (one with the actor's moves with it,
``calculator.planning.layouts.critic_follows_actor``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from calculator.inputs.scenario import Scenario
from calculator.memory.training import megatron_state
from calculator.model.architecture import Architecture
from calculator.model.roles import policy_role
from calculator.names import Role
from calculator.planning.layouts import Layout, candidate_layouts, with_layout
from calculator.planning.recommend import GpuResult, fastest_candidates, selection_key, unfit_result
from calculator.planning.search import GpuSearch
from calculator.planning.shared import MemorySignature, SharedCandidates
from calculator.planning.space import Evaluation
from calculator.resolve.architectures import resolve_architectures
from calculator.units import GIB_BYTES


@dataclass
class LayoutCaches:
    """One :class:`SharedCandidates` per layout, shared by the GPU types of one ``plan()`` call. With a vLLM rollout
    the layouts also share one KV verdict cache: whether vLLM's KV cache holds a ``max_model_len`` sequence reads the
    rollout's settings and the GPU's memory, never the trainer's layout (``GpuSearch._kv_ok``; SGLang's pool reads
    the trainer's resident memory, so its verdicts stay per layout)."""

    share_kv: bool = False
    by_layout: dict[Layout, SharedCandidates] = field(default_factory=dict)
    kv_ok: dict[tuple[MemorySignature, tuple[object, ...]], bool] = field(default_factory=dict)

    @classmethod
    def for_scenario(cls, s: Scenario) -> LayoutCaches:
        return cls(share_kv=s.rollout.name == "vllm")

    def get(self, lay: Layout) -> SharedCandidates:
        if lay not in self.by_layout:
            self.by_layout[lay] = SharedCandidates(kv_ok=self.kv_ok) if self.share_kv else SharedCandidates()
        return self.by_layout[lay]


@dataclass
class _Best:
    """The best minimum found so far: its layout's search and the fitting frontier evaluation."""

    srch: GpuSearch
    first: Evaluation

    @property
    def count(self) -> int:
        return self.first.knobs.num_gpus


def update_floor_bytes(s: Scenario, arch: Architecture) -> int:
    """A lower bound on ``s``'s ``update_actor`` memory per GPU that no GPU count changes: the actor's bf16 params
    and its grad buffer, which the update holds (``calculator.memory.phases.role_state``: params are loaded for the
    pass, grads live through the update) and Megatron's data parallelism does not shard (only the distributed
    optimizer does: ``calculator.memory.training.megatron_state``). A layout whose floor is over the fit limit
    (usable x (1 - margin), ``calculator.planning.fit``) fits at no count, so it is skipped without an estimate;
    the answer is the one the search would give."""
    st = megatron_state(s, policy_role(Role.ACTOR, arch), s.actor.megatron, trained=True)
    return st.params.bytes + st.grads.bytes


def _scan(
    base: Scenario, layouts: list[Layout], own: GpuSearch, best: _Best | None, caches: LayoutCaches, **kw: object
) -> tuple[_Best | None, list[GpuSearch]]:
    """Search the other layouts below the best minimum (module docstring); returns the best and the searches run."""
    searches: list[GpuSearch] = []
    limit_gib = own.gpu.usable_memory_gib * (1.0 - own.margin)
    for lay in layouts:
        top = best.count - 1 if best is not None else own.max_gpus
        if lay.min_world > top:
            continue
        s = with_layout(base, lay)
        if update_floor_bytes(s, own.arch) / GIB_BYTES > limit_gib:
            continue  # fits at no count: the update alone holds more than the limit (update_floor_bytes)
        srch = GpuSearch(s, own.gpu.id, shared=caches.get(lay), **kw)  # type: ignore[arg-type]
        first, _ = srch.min_count(guess=srch.shared.count_guess(srch.gpu) or top, top=top)
        searches.append(srch)
        if first is not None:
            best = _Best(srch, first)
    return best, searches


def search_gpu_layouts(
    base: Scenario,
    gpu_id: str,
    *,
    max_gpus: int,
    margin: float,
    allow_lora: bool,
    caches: LayoutCaches,
) -> GpuResult:
    """:func:`calculator.planning.recommend.search_gpu` over the Megatron layouts of ``base`` (module docstring)."""
    arch = resolve_architectures(base)[0]
    layouts = candidate_layouts(base, arch, max_gpus)
    kw = {"max_gpus": max_gpus, "margin": margin, "allow_lora": allow_lora}
    own = GpuSearch(base, gpu_id, shared=caches.get(layouts[0]), **kw)  # type: ignore[arg-type]
    first, own_counts = own.min_count(guess=own.shared.count_guess(own.gpu))
    own_best = _Best(own, first) if first is not None else None
    best, others = _scan(base, layouts[1:], own, own_best, caches, **kw)
    num_layouts = 1 + len(others)
    if best is None:
        return unfit_result(own, own_counts, own.num_estimates + sum(s.num_estimates for s in others), num_layouts)
    counts = own_counts if best.srch is own else [n for n in best.srch.counts if best.srch.is_valid_count(n)]
    won = fastest_candidates(best.srch, best.first, counts)
    mine = fastest_candidates(own, own_best.first, own_counts) if own_best is not None and best.srch is not own else []
    price, base_lora = own.gpu.hourly_price_usd, base.model.lora_rank > 0
    recommended = min(mine + won, key=lambda e: selection_key(e, base_lora, price))  # ties: the scenario's layout
    return GpuResult(
        own.gpu,
        won[0],
        recommended,
        tuple(mine + won),
        tuple(counts),
        None,
        own.num_estimates + sum(s.num_estimates for s in others),
        num_layouts,
        own_best.count if own_best is not None else None,
    )


__all__ = ["LayoutCaches", "search_gpu_layouts"]
