"""The planner's search machinery (issue #6): GPU-count ladder, lever space, pruned search.

``calculator.planner`` (the hardware table) and ``calculator.advisor`` (the OOM advisor) are built on
it. Every candidate is judged by ``estimate()`` itself, with the fit rule of ``calculator.fit``.

**GPU counts searched**: powers of two up to a node (``hardware.gpus_per_node``), then every whole
number of nodes, up to ``max_gpus``; a count is skipped when verl would reject its batch geometry:
``train_batch_size x n`` must divide over the GPUs (``verl/utils/config.py`` validate_config
"real_train_batch_size ... must be divisible by minimal possible batch size") and each mini-batch over
the data-parallel ranks (``verl/workers/engine_workers.py`` ``train_batch``:
``mini_batch_size % data_parallel_size == 0``, mini-batch = ``ppo_mini_batch_size x n``, DP = GPUs / SP).

**Levers** (:class:`Knobs`): param / optimizer offload (actor and critic together), activation offload,
gradient checkpointing, fused kernels, entropy chunking, micro-batch or token budget, Ulysses SP,
rollout TP, ``gpu_memory_utilization``, ``max_model_len`` capped at prompt + response,
``free_cache_engine``, full sharding (``fsdp_size=-1``) and LoRA (only when allowed). A lever's
candidate values are listed from the least memory-saving (usually the fastest) to the most saving.

**Pruning** rests on one property checked by the tests: the *frontier* configuration of a count (every
monotone lever at its most saving value, one fixed sequence per micro-batch, the lowest
``gpu_memory_utilization`` whose KV still holds a max-length sequence, the largest valid SP) needs no
more memory than any other searched configuration of that count, for each rollout TP and fused-kernel
choice (the two levers that are not monotone, so both values are tried). Its memory never grows with
the GPU count (training state shrinks as 1/N, everything else per GPU is constant), so the smallest
feasible count is found by exponential search then bisection over the ladder, and the count before it
has been evaluated and found infeasible. The fastest configuration at a count is then found by
relaxing levers one at a time from the frontier (first improvement, in a fixed order; ladder levers by
bisection), which is a heuristic, not an exhaustive search.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from calculator.api import build_context, estimate, resolve_architectures
from calculator.fit import (
    FitCheck,
    batch_geometry_problem,
    fit_check,
    max_model_len,
    parallel_problem,
)
from calculator.hardware import GpuSpec
from calculator.presets import get_gpu
from calculator.report import Report
from calculator.roles import need_critic
from calculator.scenario import HardwareSection, Scenario

# verl's LoRA examples use rank 64 (examples/grpo_trainer/run_qwen2_5-3b_gsm8k_grpo_lora.sh).
LORA_RANK = 64
# gpu_memory_utilization values tried (verl examples use 0.4-0.9; 0.3 lets a tight trainer fit).
UTIL_GRID = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
ROLLOUT_TP_CHOICES = (1, 2, 4, 8)  # vLLM replicas inside one node
ULYSSES_SP_CHOICES = (1, 2, 4, 8)  # Ulysses groups inside one node
# Dynamic-batch token budgets tried below the configured micro-batch size (powers of two).
TOKEN_BUDGETS = (65536, 32768, 16384, 8192, 4096, 2048, 1024, 512)
# Critic budget relative to the actor's when the planner sets one: the value model has no vocab-sized
# logits; verl's examples/ppo_trainer/run_qwen2-7b_seq_balance.sh gives it 4x (98304 vs 24000). 2x is a
# conservative choice for memory.
CRITIC_BUDGET_FACTOR = 2
_REL_EPS = 1e-9  # step times equal within this relative tolerance count as a tie


def gpu_count_ladder(gpus_per_node: int, max_gpus: int) -> list[int]:
    """1, 2, 4, ... below a node, the node, then every whole number of nodes, up to ``max_gpus``."""
    counts: list[int] = []
    c = 1
    while c < gpus_per_node and c <= max_gpus:
        counts.append(c)
        c *= 2
    k = 1
    while k * gpus_per_node <= max_gpus:
        counts.append(k * gpus_per_node)
        k += 1
    return counts


def _fails_without_logits(ev: Evaluation) -> bool:
    """The estimate fails for a reason that fused kernels cannot change: a phase without logits or
    entropy tensors is over the limit, or the engine does not start. (Fused kernels only change the
    ``*_logits`` / ``*_entropy`` components, DESIGN.md 4.4, and the fragmentation share of them.)"""
    f = ev.fit
    if not (f.engine_starts and f.kv_holds_max_model_len):
        return True

    def logits_free(p: Any) -> bool:
        return not any(name.endswith(("_logits", "_entropy")) for name in p.components)

    over = any(logits_free(p) and p.total_gib > f.limit_gib_per_gpu for p in ev.report.phases)
    return over or any(logits_free(p) and p.total_gib > f.usable_memory_gib for p in ev.report.worst_case_phases)


# ---- knobs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchOption:
    """How micro-batches are sized: as configured, a dynamic token budget, or a fixed sequence count."""

    kind: str  # "configured" | "dynamic" | "fixed"
    value: int = 0  # token budget per GPU (dynamic) or sequences per micro-batch (fixed)

    @property
    def label(self) -> str:
        if self.kind == "configured":
            return "as configured"
        return f"token budget {self.value}" if self.kind == "dynamic" else f"{self.value} sequence(s) per micro-batch"


@dataclass(frozen=True)
class Knobs:
    """One point of the search space. Booleans are True when the memory-saving value is on."""

    num_gpus: int
    rollout_tp: int
    gpu_memory_utilization: float
    param_offload: bool
    optimizer_offload: bool
    activation_offload: bool
    gradient_checkpointing: bool
    fused_kernels: bool
    entropy_chunking: bool
    batch: int  # index into the search's batch options: 0 = as configured ... last = 1 sequence
    ulysses_sp: int
    lora: bool
    cap_max_model_len: bool
    free_cache_engine: bool
    full_shard: bool


# Order in which levers are relaxed from the frontier: the first gets the first claim on headroom.
# LoRA first (full fine-tuning is the experiment asked for), then the levers that cost the most time per
# GiB saved (offloads move state over PCIe every step; activation offload and SP add transfers and
# all-to-alls), then the ladders that buy speed with memory (micro-batch size, KV cache), then the
# cheap ones, then the non-monotone choices (fused kernels, rollout TP), then restoring the user's values.
RELAX_ORDER = (
    "lora",
    "param_offload",
    "optimizer_offload",
    "activation_offload",
    "ulysses_sp",
    "batch",
    "gpu_memory_utilization",
    "gradient_checkpointing",
    "entropy_chunking",
    "fused_kernels",
    "rollout_tp",
    "cap_max_model_len",
    "free_cache_engine",
    "full_shard",
)
_BOOL_LEVERS = (
    "lora",
    "param_offload",
    "optimizer_offload",
    "activation_offload",
    "gradient_checkpointing",
    "entropy_chunking",
    "cap_max_model_len",
    "free_cache_engine",
    "full_shard",
)


@dataclass(frozen=True)
class Evaluation:
    """A searched configuration with its estimate."""

    knobs: Knobs
    scenario: Scenario
    report: Report
    fit: FitCheck

    @property
    def step_s(self) -> float | None:
        return self.report.time.step_s if self.report.time is not None else None


def _upd(section: Any, **changes: Any) -> Any:
    changed = {k: v for k, v in changes.items() if getattr(section, k) != v}
    return section.model_copy(update=changed) if changed else section


def _min_or_none(value: int | None, cap: int) -> int | None:
    return None if value is None else min(value, cap)


def batch_overrides(s: Scenario, opt: BatchOption) -> dict[str, Any]:
    """Native dotted fields that size every pass's micro-batches as ``opt`` says. The log-prob and
    critic settings follow the actor's where they are set explicitly (verl asserts that
    ``log_prob_use_dynamic_bsz`` equals ``actor.use_dynamic_bsz``); an explicit log-prob budget or
    micro-batch is capped, never raised; the critic gets ``CRITIC_BUDGET_FACTOR`` x the token budget."""
    if opt.kind == "configured":
        return {}
    dyn = opt.kind == "dynamic"
    out: dict[str, Any] = {"actor.use_dynamic_bsz": dyn}
    critic = need_critic(s)
    for sec in ("rollout", "ref"):
        if getattr(s, sec).log_prob_use_dynamic_bsz is not None:
            out[f"{sec}.log_prob_use_dynamic_bsz"] = dyn
    if critic and s.critic.use_dynamic_bsz is not None:
        out["critic.use_dynamic_bsz"] = dyn
    if dyn:
        t = opt.value
        out["actor.ppo_max_token_len_per_gpu"] = t
        for sec in ("rollout", "ref"):
            out[f"{sec}.log_prob_max_token_len_per_gpu"] = _min_or_none(
                getattr(s, sec).log_prob_max_token_len_per_gpu, t
            )
        if critic:
            ct = CRITIC_BUDGET_FACTOR * t
            out["critic.ppo_max_token_len_per_gpu"] = min(s.critic.ppo_max_token_len_per_gpu, ct)
            out["critic.forward_max_token_len_per_gpu"] = _min_or_none(s.critic.forward_max_token_len_per_gpu, ct)
    else:
        m = opt.value
        out["actor.ppo_micro_batch_size_per_gpu"] = m
        for sec in ("rollout", "ref"):
            out[f"{sec}.log_prob_micro_batch_size_per_gpu"] = _min_or_none(
                getattr(s, sec).log_prob_micro_batch_size_per_gpu, m
            )
        if critic:
            for f in ("ppo_micro_batch_size_per_gpu", "forward_micro_batch_size_per_gpu"):
                out[f"critic.{f}"] = _min_or_none(getattr(s.critic, f), m)
    return out


class GpuSearch:
    """Search one GPU type for a scenario: smallest feasible count and the cheapest configuration."""

    def __init__(self, base: Scenario, gpu_id: str, *, max_gpus: int, margin: float, allow_lora: bool):
        self.gpu: GpuSpec = get_gpu(gpu_id, "gpus")
        hw = HardwareSection(
            gpu=self.gpu.id, num_gpus=base.hardware.num_gpus, gpus_per_node=base.hardware.gpus_per_node
        )
        self.base = base if base.hardware == hw else base.model_copy(update={"hardware": hw})
        self.arch = resolve_architectures(base)[0]
        self.margin = margin
        self.max_gpus = max_gpus
        self.has_critic = need_critic(base)
        self.megatron = base.actor.strategy == "megatron"
        self.cache: dict[Knobs, Evaluation | None] = {}
        self.num_estimates = 0
        self._kv_cache: dict[tuple[Any, ...], bool] = {}
        self._frontiers: dict[int, list[Knobs]] = {}
        self._built: dict[Knobs, Scenario | None] = {}
        self.batch_options = self._batch_options()
        self.base_knobs = self._base_knobs()
        per_node = base.hardware.gpus_per_node
        self.counts = gpu_count_ladder(per_node, max_gpus)
        self.allow_lora = allow_lora and base.model.lora_rank == 0 and not base.model.use_dora

    # -- the space -------------------------------------------------------------------------------

    def _batch_options(self) -> list[BatchOption]:
        b = self.base
        a = b.actor
        mean_len = (b.data.mean_prompt_length or b.data.max_prompt_length) + (
            b.data.mean_response_length or b.data.max_response_length
        )
        if not b.model.use_remove_padding:
            mean_len = b.data.max_prompt_length + b.data.max_response_length
        configured = (
            a.ppo_max_token_len_per_gpu if a.use_dynamic_bsz else (a.ppo_micro_batch_size_per_gpu or 1) * mean_len
        )
        opts = [BatchOption("configured")]
        opts += [BatchOption("dynamic", t) for t in TOKEN_BUDGETS if t < configured]
        if a.use_dynamic_bsz or (a.ppo_micro_batch_size_per_gpu or 1) > 1:
            opts.append(BatchOption("fixed", 1))
        return opts

    def _base_knobs(self) -> Knobs:
        b = self.base
        off = b.actor.megatron if self.megatron else b.actor.fsdp_config
        return Knobs(
            num_gpus=b.hardware.num_gpus,
            rollout_tp=b.rollout.tensor_model_parallel_size,
            gpu_memory_utilization=b.rollout.gpu_memory_utilization,
            param_offload=off.param_offload,
            optimizer_offload=off.optimizer_offload,
            activation_offload=b.model.enable_activation_offload,
            gradient_checkpointing=b.model.enable_gradient_checkpointing,
            fused_kernels=b.model.use_fused_kernels,
            entropy_chunking=b.actor.entropy_from_logits_with_chunking,
            batch=0,
            ulysses_sp=b.actor.ulysses_sequence_parallel_size,
            lora=b.model.lora_rank > 0,
            cap_max_model_len=b.rollout.max_model_len is not None,
            free_cache_engine=b.rollout.free_cache_engine,
            full_shard=b.actor.fsdp_config.fsdp_size == -1 and b.critic.fsdp.fsdp_size == -1,
        )

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
            self._built[k] = self._build(k)
        return self._built[k]

    def _build(self, k: Knobs) -> Scenario | None:
        b = self.base
        try:
            hw = b.hardware
            if k.num_gpus != hw.num_gpus:
                hw = HardwareSection(gpu=hw.gpu, num_gpus=k.num_gpus, gpus_per_node=hw.gpus_per_node)
        except ValidationError:
            return None
        opt = self.batch_options[k.batch]
        model = _upd(
            b.model,
            enable_gradient_checkpointing=k.gradient_checkpointing,
            enable_activation_offload=k.activation_offload,
            use_fused_kernels=k.fused_kernels,
            lora_rank=b.model.lora_rank if b.model.lora_rank or not k.lora else LORA_RANK,
        )
        fsdp_size = -1 if k.full_shard else b.actor.fsdp_config.fsdp_size
        actor_fsdp = _upd(b.actor.fsdp_config, fsdp_size=fsdp_size)
        actor_meg = b.actor.megatron
        if self.megatron:
            actor_meg = _upd(actor_meg, param_offload=k.param_offload, optimizer_offload=k.optimizer_offload)
        else:
            actor_fsdp = _upd(actor_fsdp, param_offload=k.param_offload, optimizer_offload=k.optimizer_offload)
        actor_changes: dict[str, Any] = {
            "fsdp_config": actor_fsdp,
            "megatron": actor_meg,
            "entropy_from_logits_with_chunking": k.entropy_chunking,
            "ulysses_sequence_parallel_size": k.ulysses_sp,
        }
        rollout_changes: dict[str, Any] = {
            "tensor_model_parallel_size": k.rollout_tp,
            "gpu_memory_utilization": k.gpu_memory_utilization,
            "free_cache_engine": k.free_cache_engine,
            "max_model_len": b.rollout.max_model_len
            if b.rollout.max_model_len is not None or not k.cap_max_model_len
            else b.data.max_prompt_length + b.data.max_response_length,
        }
        ref_changes: dict[str, Any] = {}
        if b.ref.ulysses_sequence_parallel_size is not None:
            ref_changes["ulysses_sequence_parallel_size"] = k.ulysses_sp
        critic_changes: dict[str, Any] = {}
        if self.has_critic:
            critic_changes = {
                "enable_gradient_checkpointing": k.gradient_checkpointing
                if not self.megatron
                else b.critic.enable_gradient_checkpointing,
                "ulysses_sequence_parallel_size": k.ulysses_sp,
            }
            cf = _upd(b.critic.fsdp, fsdp_size=-1 if k.full_shard else b.critic.fsdp.fsdp_size)
            cm = b.critic.megatron
            if (b.critic.strategy or b.actor.strategy) == "megatron":
                cm = _upd(cm, param_offload=k.param_offload, optimizer_offload=k.optimizer_offload)
            else:
                cf = _upd(cf, param_offload=k.param_offload, optimizer_offload=k.optimizer_offload)
            critic_changes |= {"fsdp": cf, "megatron": cm}
        sections = {"actor": actor_changes, "rollout": rollout_changes, "ref": ref_changes, "critic": critic_changes}
        for key, value in batch_overrides(b, opt).items():
            section, field = key.split(".")
            sections[section][field] = value
        fields = {name: getattr(b, name) for name in Scenario.model_fields}
        fields["hardware"] = hw
        fields["model"] = model
        fields["actor"] = _upd(b.actor, **actor_changes)
        fields["rollout"] = _upd(b.rollout, **rollout_changes)
        fields["ref"] = _upd(b.ref, **ref_changes)
        fields["critic"] = _upd(b.critic, **critic_changes)
        try:
            s = Scenario.model_validate(fields)  # re-runs the cross-field rules; sections are trusted
        except ValidationError:
            return None
        if batch_geometry_problem(s) or parallel_problem(s, self.arch):
            return None
        return s

    def evaluate(self, k: Knobs) -> Evaluation | None:
        """Estimate ``k`` (cached); None when the configuration is invalid."""
        if k in self.cache:
            return self.cache[k]
        s = self.build(k)
        ev = None
        if s is not None:
            report = estimate(s)
            self.num_estimates += 1
            ev = Evaluation(k, s, report, fit_check(report, s, self.margin))
        self.cache[k] = ev
        return ev

    def fits(self, k: Knobs) -> Evaluation | None:
        ev = self.evaluate(k)
        return ev if ev is not None and ev.fit.fits else None

    def _kv_ok(self, k: Knobs) -> bool:
        """Whether the engine's KV cache holds a max_model_len sequence. For vLLM this does not depend on
        the trainer or the GPU count, so it is cached across counts."""
        key: tuple[Any, ...] = (k.rollout_tp, k.gpu_memory_utilization, k.lora, k.cap_max_model_len)
        if self.base.rollout.name == "sglang":
            key = (*key, k)
        if key not in self._kv_cache:
            s = self.build(k)
            if s is None:
                return False
            eb = build_context(s).rollout
            self._kv_cache[key] = eb.kv_cache_bytes > 0 and eb.kv_tokens >= max_model_len(s, self.arch)
        return self._kv_cache[key]

    # -- frontier and minimum count ---------------------------------------------------------------

    def frontier(self, n: int) -> list[Knobs]:
        """Most memory-saving valid configurations of count ``n``, one per rollout TP x fused-kernel
        choice (larger TP first), each at the lowest ``gpu_memory_utilization`` whose KV cache holds a
        max_model_len sequence (those with no such value are left out). Cached per count."""
        if n in self._frontiers:
            return self._frontiers[n]
        most = {lever: max(self.bool_domain(lever)) for lever in _BOOL_LEVERS}
        utils = self.util_values()
        out: list[Knobs] = []
        for tp in sorted(self.tp_values(n), reverse=True):
            for fused in (True, False):
                for sp in sorted(self.sp_values(n), reverse=True):
                    proto = Knobs(
                        num_gpus=n,
                        rollout_tp=tp,
                        gpu_memory_utilization=utils[-1],
                        fused_kernels=fused,
                        batch=len(self.batch_options) - 1,
                        ulysses_sp=sp,
                        **most,
                    )
                    if self.build(proto) is None:
                        continue
                    ks = (replace(proto, gpu_memory_utilization=u) for u in utils)
                    k = next((k for k in ks if self._kv_ok(k)), None)
                    if k is not None:
                        out.append(k)
                    break  # the largest valid SP is the most saving one
        self._frontiers[n] = out
        return out

    def is_valid_count(self, n: int) -> bool:
        """Some configuration of ``n`` GPUs passes verl's batch-geometry rules (arithmetic only; see
        :func:`batch_geometry_problem`) and has a valid rollout TP."""
        b = self.base
        if (b.data.train_batch_size * b.rollout.n) % n or not self.tp_values(n):
            return False
        if self.megatron:
            m = b.actor.megatron
            if n % (m.tensor_model_parallel_size * m.pipeline_model_parallel_size * m.context_parallel_size):
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
            if replace(k, fused_kernels=not k.fused_kernels) in failed_everywhere:
                continue
            ev = self.evaluate(k)
            if ev is not None and ev.fit.fits:
                return ev
            if ev is not None and _fails_without_logits(ev):
                failed_everywhere.add(k)
        return None

    def min_count(self) -> tuple[Evaluation | None, list[int]]:
        """Smallest feasible count: exponential search from the bottom, then bisection, over the valid
        ladder (valid because the frontier's memory never grows with the count). Returns the fitting
        frontier evaluation there (None when nothing up to max_gpus fits) and the valid counts."""
        counts = [n for n in self.counts if self.is_valid_count(n)]
        probes: dict[int, Evaluation | None] = {}

        def ok(i: int) -> bool:
            if i not in probes:
                probes[i] = self.first_fit_at(counts[i])
            return probes[i] is not None

        bad, i, step = -1, 0, 1
        while i < len(counts) and not ok(i):
            bad, i, step = i, i + step, step * 2
        if i >= len(counts):
            last = len(counts) - 1
            if bad == last or not ok(last):
                return None, counts
            i = last
        while i - bad > 1:
            mid = (bad + i) // 2
            if ok(mid):
                i = mid
            else:
                bad = mid
        return probes[i], counts

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
            return [replace(k, ulysses_sp=v) for v in vals]
        if lever == "batch":
            return [replace(k, batch=i) for i in range(k.batch)]
        if lever == "gpu_memory_utilization":
            vals = [u for u in reversed(self.util_values()) if u > k.gpu_memory_utilization]
            return [replace(k, gpu_memory_utilization=u) for u in vals]
        raise ValueError(lever)

    def relax(self, start: Evaluation) -> Evaluation:
        """Turn memory savings off one lever at a time while the configuration fits and is not slower."""
        cur = start
        for lever in RELAX_ORDER:
            k = cur.knobs
            if lever in _BOOL_LEVERS:
                if getattr(k, lever) and False in self.bool_domain(lever):
                    cand = self.evaluate(replace(k, **{lever: False}))
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
            alts = [replace(k, fused_kernels=not k.fused_kernels)]
        else:
            # Rollout TP: the neighbours of the current value (half and double) and the user's value.
            near = {k.rollout_tp // 2, k.rollout_tp * 2, self.base_knobs.rollout_tp}
            alts = [replace(k, rollout_tp=t) for t in self.tp_values(k.num_gpus) if t in near and t != k.rollout_tp]
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
            start = self.fits(replace(hint, num_gpus=n))
        if start is None:
            start = self.first_fit_at(n)
        return self.relax(start) if start is not None else None


# Counts tried for the recommended configuration: the minimum and its double and quadruple (the first
# valid ladder count at or above each). Past 4x the minimum the per-step cost only grows in practice
# (step time falls less than linearly: rollout long tail, collectives across nodes); the search also
# stops early once a larger count costs more per step than the previous one.
RECOMMEND_MULTIPLES = (1, 2, 4)


@dataclass(frozen=True)
class GpuResult:
    """What the search found for one GPU type."""

    gpu: GpuSpec
    minimum: Evaluation | None  # fastest configuration found at the smallest feasible count
    recommended: Evaluation | None  # lowest cost per step over RECOMMEND_MULTIPLES x minimum
    candidates: tuple[Evaluation, ...]  # the fastest configuration found at each count tried
    counts: tuple[int, ...]  # valid counts of the ladder
    largest_tried: Evaluation | None  # when nothing fits: the frontier at the largest count (for the note)
    num_estimates: int


def selection_key(ev: Evaluation, base_lora: bool, hourly_price_usd: float) -> tuple[Any, ...]:
    """Ranking of configurations: full fine-tuning before LoRA the user did not ask for, then the lowest
    cost per step (``step_s x num_gpus x price / 3600``), then the shorter step, then fewer GPUs. Without
    a step time the cost is unknown and the fewest GPUs win."""
    adds_lora = ev.knobs.lora and not base_lora
    step = ev.step_s
    cost = cost_per_step_usd(step, ev.knobs.num_gpus, hourly_price_usd) if step is not None else float("inf")
    return (adds_lora, cost, step if step is not None else float("inf"), ev.knobs.num_gpus)


def search_gpu(base: Scenario, gpu_id: str, *, max_gpus: int, margin: float, allow_lora: bool) -> GpuResult:
    """Smallest feasible GPU count of one type (with its fastest configuration) and the recommended
    (cheapest per step) configuration for ``base``'s model, algorithm and workload."""
    srch = GpuSearch(base, gpu_id, max_gpus=max_gpus, margin=margin, allow_lora=allow_lora)
    first, counts = srch.min_count()
    if first is None:
        top = srch.frontier(counts[-1]) if counts else []
        largest = srch.evaluate(top[0]) if top else None
        return GpuResult(srch.gpu, None, None, (), tuple(counts), largest, srch.num_estimates)
    minimum = srch.relax(first)
    price = srch.gpu.hourly_price_usd
    base_lora = base.model.lora_rank > 0
    candidates = [minimum]
    if minimum.step_s is not None:
        c = minimum.knobs.num_gpus
        targets = []
        for m in RECOMMEND_MULTIPLES[1:]:
            n = next((x for x in counts if x >= m * c), None)
            if n is not None and n not in targets and n != c:
                targets.append(n)
        for n in targets:
            ev = srch.at_count(n, hint=candidates[-1].knobs)
            if ev is None:
                continue
            worse = selection_key(ev, base_lora, price) > selection_key(candidates[-1], base_lora, price)
            candidates.append(ev)
            if worse:
                break
    recommended = min(candidates, key=lambda e: selection_key(e, base_lora, price))
    return GpuResult(srch.gpu, minimum, recommended, tuple(candidates), tuple(counts), None, srch.num_estimates)


def cost_per_step_usd(step_s: float, num_gpus: int, hourly_price_usd: float) -> float:
    """GPU-hours of one step times the (editable, example) price per GPU-hour."""
    return step_s * num_gpus * hourly_price_usd / 3600.0


__all__ = [
    "BatchOption",
    "Evaluation",
    "GpuResult",
    "GpuSearch",
    "Knobs",
    "batch_overrides",
    "cost_per_step_usd",
    "gpu_count_ladder",
    "search_gpu",
    "selection_key",
]
