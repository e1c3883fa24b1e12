"""The fit rule and the startup rules of verl and vLLM that the planner and the advisor apply
(issue #6). A configuration **fits** when all five hold:

1. expected peak (``report.peak.gib_per_gpu``, mean lengths) <= usable x (1 - margin);
2. worst-case peak (every sequence at max length) <= usable (no margin: it is already the extreme);
3. the rollout engine starts (``report.rollout.starts``: vLLM's free-memory check at startup, KV > 0);
4. the KV cache holds one sequence of ``max_model_len`` tokens: vLLM refuses to start otherwise
   (``vllm/v1/core/kv_cache_utils.py`` ``check_enough_kv_cache_memory``). verl 0.9's async vLLM server
   sets ``max_model_len`` to the model's ``max_position_embeddings`` when it is null
   (``verl/workers/rollout/vllm_rollout/vllm_async_server.py``), so this can bind for long-context models;
5. verl accepts the config: no check with severity ``error`` (``report.checks``, the same criterion as
   ``report.peak.reasons``, ``calculator.report.verdict``).

verl also rejects some GPU counts and parallel sizes before anything is allocated
(:func:`batch_geometry_problem`, :func:`parallel_problem`; sources on each rule).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, computed_field

from calculator.inputs.scenario import Scenario
from calculator.model.architecture import Architecture
from calculator.names import Phase
from calculator.planning.defaults import DEFAULT_MARGIN
from calculator.report.estimate import build_context
from calculator.report.models import PhaseOut, Report
from calculator.resolve.architectures import resolve_architectures
from calculator.resolve.engines import rollout_engine
from calculator.resolve.inheritance import value
from calculator.resolve.roles import need_critic
from calculator.units import GIB_BYTES
from calculator.verl.checks.problem import rejections


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FitCheck(_Frozen):
    """Whether one estimate fits, criterion by criterion (see the module docstring)."""

    peak_gib_per_gpu: float
    peak_phase: str
    worst_case_gib_per_gpu: float
    usable_memory_gib: float
    margin: float
    limit_gib_per_gpu: float  # usable x (1 - margin)
    within_margin: bool  # 1. expected peak <= limit
    worst_case_fits: bool  # 2. worst case <= usable
    engine_starts: bool  # 3. report.rollout.starts
    kv_holds_max_model_len: bool  # 4. KV tokens per engine (per DP rank) >= max_model_len
    kv_cache_tokens_per_replica: int
    max_model_len: int
    verl_errors: list[str] = Field(
        default_factory=list, description="5. verl's checks that raise (report.checks with severity error)."
    )
    kv_cache_tokens_per_engine: int = Field(
        default=0, description="KV tokens of one engine (one vLLM DP rank); equal to the replica's without rollout DP."
    )
    host_reason: str | None = Field(
        default=None, description="6. host RAM per node (report.host; calculator.memory.host): why it does not fit."
    )
    overshoot_gib: float = Field(
        description="How far from fitting, GiB per GPU: every phase's excess over the limit (expected) or "
        "usable (worst case), the vLLM startup shortfall and the KV cache a max_model_len sequence still needs."
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fits(self) -> bool:
        return (
            self.within_margin
            and self.worst_case_fits
            and self.engine_starts
            and self.kv_holds_max_model_len
            and not self.verl_errors
            and self.host_reason is None
        )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def reasons(self) -> list[str]:
        """One line per failed criterion, with the numbers."""
        out = []
        if not self.within_margin:
            out.append(
                f"peak {self.peak_gib_per_gpu:.1f} GiB in {self.peak_phase} > {self.limit_gib_per_gpu:.1f} GiB "
                f"(usable {self.usable_memory_gib} GiB minus the {self.margin:.0%} margin)"
            )
        if not self.worst_case_fits:
            out.append(
                f"worst case (max lengths) {self.worst_case_gib_per_gpu:.1f} GiB > usable {self.usable_memory_gib} GiB"
            )
        if not self.engine_starts:
            out.append("the rollout engine does not start (free memory at startup or no KV cache)")
        if not self.kv_holds_max_model_len:
            out.append(
                f"KV cache holds {self.kv_cache_tokens_per_engine} tokens per "
                f"{'replica' if self.kv_cache_tokens_per_engine == self.kv_cache_tokens_per_replica else 'engine'}"
                f" < max_model_len "
                f"{self.max_model_len}: vLLM refuses to start"
            )
        out += [f"verl rejects the config: {m}" for m in self.verl_errors]
        return out + ([self.host_reason] if self.host_reason else [])


def max_model_len(s: Scenario, arch: Architecture) -> int:
    """The ``max_model_len`` verl gives vLLM (``calculator.resolve.engines.rollout_engine``)."""
    return rollout_engine(s, arch).max_model_len


def fit_check(report: Report, scenario: Scenario, margin: float = DEFAULT_MARGIN) -> FitCheck:
    """Apply the fit rule to an estimate of ``scenario``."""
    usable = report.peak.usable_memory_gib
    limit = usable * (1.0 - margin)
    arch = resolve_architectures(scenario)[0]
    mml = max_model_len(scenario, arch)
    kv_tokens = report.rollout.kv_cache_tokens_per_engine  # each DP rank must hold one max_model_len sequence
    ro = report.rollout
    kv_per_token_gib = report.model.kv_cache_bytes_per_token / scenario.rollout.tensor_model_parallel_size / GIB_BYTES
    overshoot = (
        sum(max(0.0, p.total_gib - limit) for p in report.phases)
        + sum(max(0.0, p.total_gib - usable) for p in report.worst_case_phases)
        + (max(0.0, ro.startup_required_gib - ro.startup_free_gib) if scenario.rollout.name == "vllm" else 0.0)
        + max(0, mml - kv_tokens) * kv_per_token_gib
    )
    return FitCheck(
        peak_gib_per_gpu=report.peak.gib_per_gpu,
        peak_phase=report.peak.phase,
        worst_case_gib_per_gpu=report.peak.worst_case_gib_per_gpu,
        usable_memory_gib=usable,
        margin=margin,
        limit_gib_per_gpu=limit,
        within_margin=report.peak.gib_per_gpu <= limit,
        worst_case_fits=report.peak.worst_case_gib_per_gpu <= usable,
        engine_starts=report.rollout.starts,
        kv_holds_max_model_len=kv_tokens >= mml,
        kv_cache_tokens_per_replica=report.rollout.kv_cache_tokens_per_replica,
        kv_cache_tokens_per_engine=kv_tokens,
        max_model_len=mml,
        verl_errors=[p.message for p in rejections(report.checks)],
        host_reason=next((x for x in report.peak.reasons if x.startswith("host RAM:")), None),
        overshoot_gib=overshoot,
    )


def batch_geometry_problem(s: Scenario) -> str | None:
    """Why verl would reject this GPU count's batch split, or None (sources in the module docstring)."""
    g = s.hardware.num_gpus
    n = s.rollout.n
    seqs = s.data.train_batch_size * n
    if seqs % g:
        return f"train_batch_size x n ({seqs}) is not divisible by {g} GPUs"
    sp = s.actor.ulysses_sequence_parallel_size
    mini = min(s.actor.ppo_mini_batch_size, s.data.train_batch_size) * n
    if mini % (g // sp):
        return f"ppo_mini_batch_size x n ({mini}) is not divisible by the {g // sp} data-parallel ranks"
    if need_critic(s):
        csp = s.critic.ulysses_sequence_parallel_size
        cmini = min(value(s, "critic.ppo_mini_batch_size"), s.data.train_batch_size) * n
        if g % csp or cmini % (g // csp):
            return f"critic mini-batch ({cmini}) is not divisible by the {g // max(csp, 1)} critic DP ranks"
    return None


def parallel_problem(s: Scenario, arch: Architecture) -> str | None:
    """Head-count and token-budget rules verl and vLLM assert at startup."""
    tp = s.rollout.tensor_model_parallel_size
    if arch.num_attention_heads % tp:
        return f"vLLM: attention heads ({arch.num_attention_heads}) not divisible by rollout TP {tp}"
    max_seq = s.data.max_prompt_length + s.data.max_response_length
    # verl/models/transformers/monkey_patch.py: heads % sp == 0 and (kv % sp == 0 or sp % kv == 0).
    for sp in {s.actor.ulysses_sequence_parallel_size, s.critic.ulysses_sequence_parallel_size}:
        if sp > 1 and (arch.num_attention_heads % sp or (arch.num_kv_heads % sp and sp % arch.num_kv_heads)):
            return f"Ulysses SP {sp} does not divide the attention / KV heads"
    a = s.actor
    sp = a.ulysses_sequence_parallel_size
    if a.use_dynamic_bsz:
        # verl/utils/seqlen_balancing.py: "max_token_len must be greater than the sequence length".
        budgets = [a.ppo_max_token_len_per_gpu]
        budgets += [x for x in (s.rollout.log_prob_max_token_len_per_gpu, s.ref.log_prob_max_token_len_per_gpu) if x]
        if min(budgets) * sp < max_seq:
            return f"token budget {min(budgets)} x SP {sp} < longest sequence {max_seq}"
    if need_critic(s):
        dyn = value(s, "critic.use_dynamic_bsz")
        if dyn and s.critic.ppo_max_token_len_per_gpu * s.critic.ulysses_sequence_parallel_size < max_seq:
            return "critic token budget x SP < longest sequence"
    return None


# What the fused-kernel choice changes in a phase: only the logits and entropy tensors read
# ``model.use_fused_kernels`` (``calculator.memory.transients.logits_components``), and the fragmentation share
# of the phase's transients that include them (``calculator.memory.phases._fragmentation``). The optimizer step
# (``_optimizer_step``) counts only its excess over the backward's transients: if the other choice's logits L'
# raise those transients, the excess falls by at most L', which the other phase then holds itself; so the other
# choice's phase holds at least total - logits - entropy - fragmentation.
_HEAD_SUFFIXES = ("_logits", "_entropy")
FUSED_DEPENDENT_SUFFIXES = (*_HEAD_SUFFIXES, "fragmentation")


def fused_independent_bytes(p: PhaseOut) -> int:
    """A lower bound on phase ``p``'s bytes with the other fused-kernel choice (exact ints; see above)."""
    if not any(c.name.endswith(_HEAD_SUFFIXES) for c in p.details):
        return p.total_bytes
    return p.total_bytes - sum(c.bytes for c in p.details if c.name.endswith(FUSED_DEPENDENT_SUFFIXES))


def fails_with_either_fused_choice(f: FitCheck, report: Report) -> bool:
    """The estimate fails for a reason that fused kernels cannot change: the engine does not start, or some
    phase is over the limit by the bytes the other choice holds at least (:func:`fused_independent_bytes`)."""
    if not (f.engine_starts and f.kv_holds_max_model_len):
        return True
    over = any(fused_independent_bytes(p) / GIB_BYTES > f.limit_gib_per_gpu for p in report.phases)
    return over or any(fused_independent_bytes(p) / GIB_BYTES > f.usable_memory_gib for p in report.worst_case_phases)


_UPDATES = frozenset({Phase.UPDATE_ACTOR, Phase.UPDATE_CRITIC})


def one_micro_batch_update(s: Scenario) -> bool:
    """Whether an update pass of ``s`` (actor or critic) is one micro-batch per mini-batch at the expected or the
    worst-case lengths: its gradients are then born during the backward (``calculator.memory.backward``), so its
    memory is not bounded by that of a more saving micro-batch sizing (the planner's frontier tries both)."""
    passes = build_context(s).r.passes
    return any(p.batch(w).num_micro_batches == 1 for ph, p in passes.items() if ph in _UPDATES for w in (False, True))


__all__ = [
    "DEFAULT_MARGIN",
    "FUSED_DEPENDENT_SUFFIXES",
    "FitCheck",
    "batch_geometry_problem",
    "fails_with_either_fused_choice",
    "fit_check",
    "fused_independent_bytes",
    "max_model_len",
    "one_micro_batch_update",
    "parallel_problem",
]
