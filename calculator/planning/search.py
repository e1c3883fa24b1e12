"""The planner's search machinery (issue #6): pruned search over the space of ``calculator.planning.space``.

``calculator.planning.recommend`` (one GPU type's minimum and recommended configuration, for the hardware
table of ``calculator.planning.planner``) and ``calculator.planning.advisor`` (the OOM advisor) are built on
it. Every candidate is judged by ``estimate()`` itself, with the fit rule of ``calculator.planning.fit``.

**GPU counts searched**: the ladder of ``calculator.planning.space`` (powers of two up to a node, then whole nodes, up
to ``max_gpus``); a count is skipped when verl would reject its batch geometry: ``train_batch_size x n`` must divide
over the GPUs (``verl/utils/config.py`` validate_config "real_train_batch_size ... must be divisible by minimal possible
batch size") and each mini-batch over the data-parallel ranks (``verl/workers/engine_workers.py`` ``train_batch``:
``mini_batch_size % data_parallel_size == 0``, mini-batch = ``ppo_mini_batch_size x n``, DP = GPUs / SP).

**Levers** (:class:`Knobs`, listed in ``calculator.planning.space``): each lever's candidate values run
from the least memory-saving (usually the fastest) to the most saving.

**Pruning** rests on one property checked by the tests: the *frontier* configurations of a count (every monotone lever
at its most saving value, the largest valid SP with the most saving micro-batch sizing valid there (one fixed sequence
per micro-batch, or a token budget the count's SP can hold), the lowest ``gpu_memory_utilization`` whose KV still holds
a max-length sequence; and, when the configured sizing makes an update one micro-batch per mini-batch, that sizing too,
since its gradients are born during the backward (``calculator.memory.backward``)) need no more memory than any other
searched configuration of that count, for each rollout TP and fused-kernel choice (the two levers that are not monotone,
so both values are tried), up to the Ulysses attention copies a larger SP adds where the tokens per GPU do not shrink
(``calculator.memory.transients.ulysses_extra_bytes``). Their memory never grows with the GPU count (training state
shrinks as 1/N, everything else per GPU is constant) from 2 GPUs on, so the smallest feasible count is found by
galloping from a guess then bisection over the ladder (``calculator.planning.gallop``; the answer is the one a scan from
the bottom gives, whatever the guess), and the count before it has been evaluated and found infeasible. One GPU is the
exception (FSDP's NO_SHARD gathers nothing, so a LoRA sync does not summon the fp32 model): it is probed whenever the
search answers more. A frontier candidate that fails with one fused-kernel choice by more than the logits, entropy and
fragmentation it holds fails with the other too, which is then not estimated
(``calculator.planning.fit.fails_with_either_fused_choice``). The fastest configuration at a count is then found by
relaxing levers one at a time from the frontier (first improvement, in a fixed order; ladder levers by bisection), which
is a heuristic, not an exhaustive search.

**Work shared between GPU types** (issue #18, ``calculator.planning.shared``): one plan's searches share the candidates'
scenarios, and GPU types with the same usable memory and host RAM share the candidates' memory estimates; only the step
time is computed per GPU type. ``num_estimates`` counts the estimates a search ran itself.
"""

from __future__ import annotations

from typing import Any

from calculator.inputs.hardware import GpuSpec
from calculator.inputs.presets import get_gpu
from calculator.inputs.scenario import HardwareSection, Scenario
from calculator.names import Strategy
from calculator.planning.fit import (
    FitCheck,
    fails_with_either_fused_choice,
    fit_check,
    max_model_len,
    one_micro_batch_update,
)
from calculator.planning.gallop import first_true
from calculator.planning.layouts import layout_of, section_layout
from calculator.planning.shared import SharedCandidates, for_gpu, memory_signature, with_gpu
from calculator.planning.space import (
    BOOL_LEVERS,
    RELAX_ORDER,
    ROLLOUT_TP_CHOICES,
    ULYSSES_SP_CHOICES,
    UTIL_GRID,
    Evaluation,
    Knobs,
    batch_options_for,
    build_scenario,
    gpu_count_ladder,
    knobs_of,
)
from calculator.report.estimate import build_context, estimate
from calculator.report.models import Report
from calculator.resolve.architectures import resolve_architectures
from calculator.resolve.roles import critic_strategy, need_critic

_REL_EPS = 1e-9  # step times equal within this relative tolerance count as a tie


class GpuSearch:
    """Search one GPU type for a scenario: smallest feasible count and the cheapest configuration."""

    def __init__(
        self,
        base: Scenario,
        gpu_id: str,
        *,
        max_gpus: int,
        margin: float,
        allow_lora: bool,
        shared: SharedCandidates | None = None,
    ):
        self.gpu: GpuSpec = get_gpu(gpu_id, "gpus")
        # A configured host RAM per node describes the scenario's own nodes: it holds for its own GPU type; other
        # GPU types are planned on their server class's default (calculator.inputs.hardware.host_ram_gib_per_node).
        own = get_gpu(base.hardware.gpu).id == self.gpu.id
        hw = HardwareSection(
            gpu=self.gpu.id,
            num_gpus=base.hardware.num_gpus,
            gpus_per_node=base.hardware.gpus_per_node,
            host_ram_gib_per_node=base.hardware.host_ram_gib_per_node if own else None,
        )
        self.base = base if base.hardware == hw else base.model_copy(update={"hardware": hw})
        # Builds and memory estimates shared with the other GPU types of one plan (calculator.planning.shared).
        if shared is None or not shared.serves(self.base, margin):
            shared = SharedCandidates(self.base, margin)
        self.shared = shared
        self.signature = memory_signature(self.base, self.gpu)
        self.arch = resolve_architectures(base)[0]
        self.margin = margin
        self.max_gpus = max_gpus
        self.has_critic = need_critic(base)
        self.megatron = base.actor.strategy == "megatron"
        self.cache: dict[Knobs, Evaluation | None] = {}
        self.num_estimates = 0
        self._frontiers: dict[int, list[Knobs]] = {}
        self._built: dict[Knobs, Scenario | None] = {}
        self.batch_options = batch_options_for(self.base)
        self.base_knobs = knobs_of(self.base)
        per_node = base.hardware.gpus_per_node
        self.counts = gpu_count_ladder(per_node, max_gpus)
        self.allow_lora = allow_lora and base.model.lora_rank == 0 and not base.model.use_dora

    # -- the space -------------------------------------------------------------------------------

    def bool_domain(self, lever: str) -> tuple[bool, ...]:
        """Values a boolean lever may take (False = not saving), given the scenario."""
        base = getattr(self.base_knobs, lever)
        if lever == "lora":
            return (False, True) if self.allow_lora else (base,)
        if lever in ("activation_offload", "gradient_checkpointing") and self.megatron:
            return (base,)  # FSDP-only switches in verl
        if lever in ("free_cache_engine", "full_shard", "cap_max_model_len") and base:
            return (True,)  # never undo a saving the user already has that costs nothing
        return (False, True)

    def tp_values(self, n: int) -> list[int]:
        dp = self.base.rollout.data_parallel_size
        per_node = self.base.hardware.gpus_per_node
        vals = set(ROLLOUT_TP_CHOICES) | {self.base.rollout.tensor_model_parallel_size}
        return sorted(
            t
            for t in vals
            if t * dp <= min(n, per_node) and n % (t * dp) == 0 and self.arch.num_attention_heads % t == 0
        )

    def sp_values(self, n: int) -> list[int]:
        base = self.base.actor.ulysses_sequence_parallel_size
        if self.megatron or not self.base.model.use_remove_padding:
            return [base] if n % base == 0 else []
        per_node = self.base.hardware.gpus_per_node
        vals = set(ULYSSES_SP_CHOICES) | {base}
        return sorted(v for v in vals if v <= min(n, per_node) and n % v == 0)

    def util_values(self) -> list[float]:
        return sorted(set(UTIL_GRID) | {self.base.rollout.gpu_memory_utilization})

    # -- building and evaluating candidates -------------------------------------------------------

    def build(self, k: Knobs) -> Scenario | None:
        """The scenario for ``k``, or None when verl / vLLM / the scenario's own rules reject it (cached)."""
        if k not in self._built:
            builds = self.shared.builds
            if k not in builds:
                builds[k] = build_scenario(self.base, k, self.batch_options, self.arch)
            s = builds[k]
            self._built[k] = None if s is None else with_gpu(s, self.gpu.id)
        return self._built[k]

    def evaluate(self, k: Knobs) -> Evaluation | None:
        """Estimate ``k`` (cached); None when the configuration is invalid."""
        if k in self.cache:
            return self.cache[k]
        s = self.build(k)
        ev = None
        if s is not None:
            # The search reads numbers only, and a step time only of configurations that fit (``_better``): the time
            # model runs for those alone, when first read (``Evaluation.report``, issue #18); a fitting one's engine
            # starts, so its time is what ``estimate`` gives.
            ev = Evaluation(k, s, *self._memory(k, s))
        self.cache[k] = ev
        return ev

    def _memory(self, k: Knobs, s: Scenario) -> tuple[Report, FitCheck]:
        """The memory estimate of ``k`` (no time) and its fit verdict; from a GPU type of the same memory
        signature when one of the plan's searches estimated it already (calculator.planning.shared)."""
        key = (self.signature, k)
        known = self.shared.memory.get(key)
        if known is not None:
            return for_gpu(known[0], self.gpu), known[1]
        report = estimate(s, with_warnings=False, with_time=False)
        self.num_estimates += 1
        fit = fit_check(report, s, self.margin)
        self.shared.memory[key] = (report, fit)
        return report, fit

    def fits(self, k: Knobs) -> Evaluation | None:
        ev = self.evaluate(k)
        return ev if ev is not None and ev.fit.fits else None

    def _kv_ok(self, k: Knobs) -> bool:
        """Whether the engine's KV cache holds a max_model_len sequence. For vLLM this does not depend on
        the trainer or the GPU count, so it is cached across counts."""
        key: tuple[Any, ...] = (k.rollout_tp, k.gpu_memory_utilization, k.lora, k.cap_max_model_len)
        if self.base.rollout.name == "sglang":
            key = (*key, k)
        cache = self.shared.kv_ok  # the KV cache reads the GPU's usable memory only: shared by memory signature
        if (self.signature, key) not in cache:
            s = self.build(k)
            if s is None:
                return False
            eb = build_context(s).rollout
            cache[self.signature, key] = eb.kv_cache_bytes > 0 and eb.kv_tokens >= max_model_len(s, self.arch)
        return cache[self.signature, key]

    # -- frontier and minimum count ---------------------------------------------------------------

    def frontier(self, n: int) -> list[Knobs]:
        """Most memory-saving valid configurations of count ``n``, one per rollout TP x fused-kernel
        choice (larger TP first), then the one-micro-batch ones (``_one_micro_batch``, evaluated last), each at the
        lowest ``gpu_memory_utilization`` whose KV cache holds a max_model_len sequence (those with no such value are
        left out). Cached per count."""
        if n in self._frontiers:
            return self._frontiers[n]
        most = {lever: max(self.bool_domain(lever)) for lever in BOOL_LEVERS}
        utils = self.util_values()
        out: list[Knobs | None] = []
        singles: list[Knobs | None] = []
        for tp in sorted(self.tp_values(n), reverse=True):
            for fused in (True, False):
                proto = self._most_saving_valid(n, tp, fused, most, utils[-1])
                if proto is None:
                    continue
                out.append(self._lowest_util(proto, utils))
                one = self._one_micro_batch(n, tp, fused, most, utils[-1])
                if one is not None and one != proto:
                    singles.append(self._lowest_util(one, utils))
        self._frontiers[n] = [k for k in out + singles if k is not None]
        return self._frontiers[n]

    def _lowest_util(self, k: Knobs, utils: list[float]) -> Knobs | None:
        return next((x for x in (k.updated(gpu_memory_utilization=u) for u in utils) if self._kv_ok(x)), None)

    def _one_micro_batch(self, n: int, tp: int, fused: bool, most: dict[str, bool], util: float) -> Knobs | None:
        """The configured (largest) sizing at the smallest valid SP if it makes an update one micro-batch per
        mini-batch (``one_micro_batch_update``); all such sizings hold the same tokens per GPU. Shared by GPU types."""
        key = (n, tp, fused)
        if key not in self.shared.singles:
            self.shared.singles[key] = None
            for sp in self.sp_values(n):
                k = Knobs(n, tp, util, fused_kernels=fused, batch=0, ulysses_sp=sp, **most)  # GPUs, TP, util
                if (s := self.build(k)) is not None:
                    self.shared.singles[key] = k if one_micro_batch_update(s) else None
                    break
        return self.shared.singles[key]

    def _most_saving_valid(self, n: int, tp: int, fused: bool, most: dict[str, bool], util: float) -> Knobs | None:
        """The largest Ulysses SP with a valid configuration, at the most saving batch option valid there. A token
        budget below the longest sequence is valid only with enough SP (``parallel_problem``), and SP is bounded by
        the count: at a small count the most saving budget may be invalid while a less saving option is not (seed002
        on 1 A100 fits with the configured micro-batch; skipping the count would report 2)."""
        for sp in sorted(self.sp_values(n), reverse=True):
            for batch in reversed(range(len(self.batch_options))):
                proto = Knobs(
                    num_gpus=n,
                    rollout_tp=tp,
                    gpu_memory_utilization=util,
                    fused_kernels=fused,
                    batch=batch,
                    ulysses_sp=sp,
                    **most,
                )
                if self.build(proto) is not None:
                    return proto
        return None

    def is_valid_count(self, n: int) -> bool:
        """Some configuration of ``n`` GPUs passes verl's batch-geometry rules (arithmetic only; see
        :func:`batch_geometry_problem`) and has a valid rollout TP."""
        b = self.base
        if (b.data.train_batch_size * b.rollout.n) % n or not self.tp_values(n):
            return False
        # Megatron-core's world rules (calculator.planning.layouts): a count that breaks them fails on verl's check
        # whatever the memory, which would break the monotone fit the count search relies on.
        if self.megatron and n % layout_of(b).min_world:
            return False
        if (
            self.has_critic
            and critic_strategy(b) is Strategy.MEGATRON
            and n % section_layout(b.critic.megatron).min_world
        ):
            return False
        mini = min(b.actor.ppo_mini_batch_size, b.data.train_batch_size) * b.rollout.n
        cmini = min(b.critic.ppo_mini_batch_size or b.actor.ppo_mini_batch_size, b.data.train_batch_size) * b.rollout.n
        return any(
            mini % (n // sp) == 0 and (not self.has_critic or cmini % (n // sp) == 0) for sp in self.sp_values(n)
        )

    def first_fit_at(self, n: int) -> Evaluation | None:
        """The first frontier configuration of ``n`` that fits, or None when none does (then no
        searched configuration of ``n`` GPUs fits)."""
        failed_everywhere: set[Knobs] = set()
        for k in self.frontier(n):
            if k.updated(fused_kernels=not k.fused_kernels) in failed_everywhere:
                continue
            ev = self.evaluate(k)
            if ev is not None and ev.fit.fits:
                return ev
            if ev is not None and fails_with_either_fused_choice(ev.fit, ev.report):
                failed_everywhere.add(k)
        return None

    def min_count(self, guess: int | None = None, top: int | None = None) -> tuple[Evaluation | None, list[int]]:
        """Smallest feasible count over the valid ladder (up to ``top`` when given), by galloping from the first
        valid count >= ``guess`` (the bottom without one) then bisection (``calculator.planning.gallop``). Fitting
        is monotone over the counts that have a frontier (its memory never grows with the count), so the answer does
        not depend on the guess; a count without one (no valid most-saving configuration) answers as the next count
        that has one (the last one above the top). Returns the fitting frontier evaluation there (None when nothing
        up to max_gpus, or ``top``, fits) and the valid counts searched."""
        counts = [n for n in self.counts if (top is None or n <= top) and self.is_valid_count(n)]
        probes: dict[int, Evaluation | None] = {}

        def stand_in(i: int) -> int | None:
            j = next((j for j in range(i, len(counts)) if self.frontier(counts[j])), None)
            return j if j is not None else next((j for j in range(i - 1, -1, -1) if self.frontier(counts[j])), None)

        def ok(i: int) -> bool:
            j = stand_in(i)
            if j is not None and j not in probes:
                probes[j] = self.first_fit_at(counts[j])
            return j is not None and probes[j] is not None

        start = 0 if guess is None else next((i for i, n in enumerate(counts) if n >= guess), len(counts) - 1)
        i = first_true(len(counts), ok, start)
        j = None if i is None else stand_in(i)
        found = None if j is None else probes[j]
        # One GPU is where fit is not monotone: FSDP runs NO_SHARD there, so nothing is all-gathered (a LoRA sync
        # does not summon the fp32 model, ``lingering_roots``); a count of 1 can fit where 2 does not. Probed
        # whenever the search answered more (seed002 on an Ascend 910B: 1 fits, 2 does not, 4 does).
        if counts and counts[0] == 1 and (found is None or found.knobs.num_gpus > 1) and 0 not in probes:
            one = self.first_fit_at(1)
            found = one if one is not None else found
        return found, counts

    # -- relaxation: the fastest configuration at one count ----------------------------------------

    def _better(self, cand: Evaluation | None, cur: Evaluation) -> bool:
        if cand is None or not cand.fit.fits:
            return False
        if cand.step_s is None or cur.step_s is None:
            return True  # no time model: a relaxation never adds work by mechanism
        return cand.step_s <= cur.step_s * (1 + _REL_EPS)

    def _ladder(self, cur: Evaluation, lever: str) -> list[Knobs]:
        """Less-saving values of an ordered lever, least saving first."""
        k = cur.knobs
        if lever == "ulysses_sp":
            vals = [v for v in self.sp_values(k.num_gpus) if v < k.ulysses_sp]
            return [k.updated(ulysses_sp=v) for v in vals]
        if lever == "batch":
            return [k.updated(batch=i) for i in range(k.batch)]
        if lever == "gpu_memory_utilization":
            vals = [u for u in reversed(self.util_values()) if u > k.gpu_memory_utilization]
            return [k.updated(gpu_memory_utilization=u) for u in vals]
        raise ValueError(lever)

    def relax(self, start: Evaluation) -> Evaluation:
        """Turn memory savings off one lever at a time while the configuration fits and is not slower."""
        cur = start
        for lever in RELAX_ORDER:
            k = cur.knobs
            if lever in BOOL_LEVERS:
                if getattr(k, lever) and False in self.bool_domain(lever):
                    cand = self.evaluate(k.updated(**{lever: False}))
                    if self._better(cand, cur):
                        cur = cand  # type: ignore[assignment]
            elif lever in ("ulysses_sp", "batch", "gpu_memory_utilization"):
                options = [o for o in self._ladder(cur, lever) if self.build(o) is not None]
                first = self._util_guess(cur, options) if lever == "gpu_memory_utilization" else 0
                i = self._least_saving_fit(options, first)
                if i is not None:
                    cand = self.evaluate(options[i])
                    if self._better(cand, cur):
                        cur = cand  # type: ignore[assignment]
            else:
                cur = self._best_alternative(cur, lever)
        return cur

    def _util_guess(self, cur: Evaluation, options: list[Knobs]) -> int:
        """First ``gpu_memory_utilization`` option predicted to fit. vLLM's budget is util x total memory
        and the KV cache takes whatever the budget leaves, so every phase that holds the KV cache grows by
        delta-util x total; vLLM also needs free memory >= util x total at startup."""
        r = cur.report
        total_gib = r.peak.usable_memory_gib
        u = cur.knobs.gpu_memory_utilization
        room = [cur.fit.limit_gib_per_gpu - p.total_gib for p in r.phases if "kv_cache" in p.components]
        room += [total_gib - p.total_gib for p in r.worst_case_phases if "kv_cache" in p.components]
        u_max = min([u + x / total_gib for x in room] + [r.rollout.startup_free_gib / total_gib])
        return next((i for i, o in enumerate(options) if o.gpu_memory_utilization <= u_max + 1e-9), len(options))

    def _least_saving_fit(self, options: list[Knobs], first: int = 0) -> int | None:
        """Index of the least-saving option that fits, searched from ``first`` on. ``options`` run from
        least to most saving and the current (fitting) value comes after the last one, so fit is
        monotone along the list: bisect (trusting a fitting ``first`` as the answer)."""
        bad, good = first - 1, len(options)
        while good - bad > 1:
            mid = (bad + good) // 2 if bad >= first else first
            if self.fits(options[mid]) is not None:
                good = mid
            else:
                bad = mid
        return good if good < len(options) else None

    def _best_alternative(self, cur: Evaluation, lever: str) -> Evaluation:
        """Non-monotone levers (fused kernels, rollout TP): try every value. Without a time model, move
        only back to the user's value."""
        k = cur.knobs
        if lever == "fused_kernels":
            alts = [k.updated(fused_kernels=not k.fused_kernels)]
        else:
            # Rollout TP: the neighbours of the current value (half and double) and the user's value.
            near = {k.rollout_tp // 2, k.rollout_tp * 2, self.base_knobs.rollout_tp}
            alts = [k.updated(rollout_tp=t) for t in self.tp_values(k.num_gpus) if t in near and t != k.rollout_tp]
        best = cur
        base_val = getattr(self.base_knobs, lever)
        for a in alts:
            ev = self.fits(a)
            if ev is None:
                continue
            if cur.step_s is None or ev.step_s is None:
                if getattr(a, lever) == base_val:
                    best = ev
                continue
            assert best.step_s is not None
            if ev.step_s < best.step_s * (1 - _REL_EPS) or (
                ev.step_s <= best.step_s * (1 + _REL_EPS) and getattr(a, lever) == base_val
            ):
                best = ev
        return best

    def at_count(self, n: int, hint: Knobs | None = None) -> Evaluation | None:
        """Fastest configuration found at count ``n``: relax from ``hint`` (moved to ``n``) when it fits,
        else from the frontier."""
        start = None
        if hint is not None:
            start = self.fits(hint.updated(num_gpus=n))
        if start is None:
            start = self.first_fit_at(n)
        return self.relax(start) if start is not None else None


__all__ = ["GpuSearch"]
