"""How a training backend spends time around its compute: FSDP collectives and host copies per
micro-batch, Megatron TP/EP collectives and pipeline bubble, Ulysses all-to-alls, offload copies
(used by ``calculator.throughput``; its docstring states the assumptions).

FSDP (verl ``workers/engine/fsdp``): bf16 all-gather of the weights per forward (and again per backward
with ``reshard_after_forward``), fp32 reduce-scatter of the gradients (``reduce_dtype`` fp32), HSDP
all-reduce across replica groups; FSDP2 ``offload_policy`` copies the shard in for each gather and the
grads out. Megatron: 2 all-gathers + 2 reduce-scatters (sequence parallel) or 2 all-reduces per layer
per pass over TP, a dispatch + combine all-to-all per MoE layer over EP, a 1F1B pipeline bubble of
``pp - 1`` micro-batch stage times per mini-batch (Narayanan et al. 2021 §2.2: bubble fraction
(p-1)/(m+p-1)). Ring volumes per GPU as in ``calculator.flops``.
"""

from __future__ import annotations

import math

from calculator.batching import PassBatch
from calculator.flops import collective_bytes_per_s, pcie_bytes_per_s, peak_flops, ring_fraction
from calculator.memory import Context
from calculator.roles import RoleModel, lora_params
from calculator.scenario import FsdpSection, MegatronSection, Scenario
from calculator.training import shard_size
from calculator.units import ceil_div, dtype_bytes

# Tensors an optimizer step streams per parameter (torch AdamW foreach): read p, g, m, v and write
# p, m, v, plus the grad-norm read for clipping = 8 tensors; SGD (no momentum): read p, g, write p + norm.
OPTIMIZER_STEP_TENSORS = {"AdamW": 8, "adam": 8, "SGD": 4, "Adafactor": 4}
OPTIMIZER_STATES = {"AdamW": 2, "adam": 2, "SGD": 0, "Adafactor": 0}  # moments kept per param (training.py)


class TrainingEngine:
    """One model as an engine: which parallelism and offload settings apply to it."""

    def __init__(
        self, s: Scenario, ctx: Context, role: RoleModel, strategy: str, fsdp: FsdpSection, meg: MegatronSection
    ) -> None:
        self.s, self.gpu, self.role, self.strategy, self.fsdp, self.meg = s, ctx.gpu, role, strategy, fsdp, meg
        self.megatron = strategy == "megatron"
        g = s.hardware.num_gpus
        self.n = shard_size(fsdp, g)
        self.params = role.num_params
        self.trainable = (
            lora_params(role.arch, s.model.lora_rank, s.model.target_modules)
            if s.model.lora_rank and role.name == "actor"
            else self.params
        )
        self.mb = dtype_bytes(fsdp.model_dtype)
        self.cpu_policy = strategy == "fsdp2" and fsdp.offload_policy
        if self.megatron:
            m = meg
            expert = role.arch.num_moe_layers * role.arch.num_experts * role.arch.expert_params()
            etp = m.expert_tensor_parallel_size or m.tensor_model_parallel_size
            pp = m.pipeline_model_parallel_size
            self.local = (self.params - expert) / (m.tensor_model_parallel_size * pp) + expert / (
                m.expert_model_parallel_size * etp * pp
            )
            self.dp = max(1, g // (m.tensor_model_parallel_size * pp * m.context_parallel_size))
            self.p_off, self.o_off = m.param_offload, m.optimizer_offload
        else:
            self.local = self.params / self.n
            self.dp = g // max(1, s.actor.ulysses_sequence_parallel_size)
            self.p_off, self.o_off = fsdp.param_offload, fsdp.optimizer_offload

    def offload_seconds(self, *, optimizer: bool) -> float:
        """PCIe time to bring this role's offloaded state in for one phase and put it back."""
        rate = pcie_bytes_per_s(self.s, self.gpu)
        b = 0.0
        if self.p_off and not self.cpu_policy:
            b += 2 * self.local * (2 if self.megatron else self.mb)
        if optimizer and self.o_off and not self.cpu_policy:
            states = OPTIMIZER_STATES.get(self.s.actor.optim.optimizer, 2)
            if self.megatron:  # distributed optimizer: fp32 master + moments, sharded over DP
                b += 2 * self.local / self.dp * (4 + 4 * states)
            else:  # moments in the model dtype, sharded over the FSDP group
                b += 2 * self.trainable / self.n * states * self.mb
        return b / rate


def megatron_micro(s: Scenario, r: TrainingEngine, pb: PassBatch, seq_len: float) -> tuple[float, int]:
    """(tokens per micro-batch of one model replica, micro-batches per DP rank): the same micro-batch
    size (or token budget) as ``pb``, over Megatron's DP = GPUs / (TP x PP x CP)."""
    num_seqs = pb.sequences_per_gpu * (s.hardware.num_gpus // max(1, s.actor.ulysses_sequence_parallel_size))
    seqs = ceil_div(num_seqs, r.dp)
    tokens = max(pb.tokens_per_gpu, 1)
    return float(tokens), max(1, math.ceil(seqs * seq_len / tokens))


def ulysses_seconds(s: Scenario, ctx: Context, role: RoleModel, tokens: float, sp: int, passes: int) -> float:
    """Ulysses SP all-to-alls: q, k, v in and the output back, per layer per pass (not overlapped)."""
    if sp <= 1:
        return 0.0
    a = role.arch
    volume = tokens * (a.q_dim + 2 * a.kv_dim + a.attn_out_dim) * 2 * ring_fraction(sp)
    return passes * a.num_layers * volume / collective_bytes_per_s(s, ctx.gpu, sp)


def megatron_pass(
    s: Scenario,
    ctx: Context,
    r: TrainingEngine,
    pb: PassBatch,
    seq_len: float,
    flops_per_token: float,
    mfu: float,
    passes: int,
) -> dict[str, float]:
    """One pass (forward-only: passes=1; training: 2, or 3 with recompute) over one mini-batch."""
    m, a = r.meg, r.role.arch
    tp, pp, cp, ep = (
        m.tensor_model_parallel_size,
        m.pipeline_model_parallel_size,
        m.context_parallel_size,
        m.expert_model_parallel_size,
    )
    tokens, n_micro = megatron_micro(s, r, pb, seq_len)
    stage = tokens * flops_per_token / (tp * cp * pp) / (peak_flops(ctx.gpu) * mfu)
    comm = 0.0
    if tp > 1:  # 2 all-gathers + 2 reduce-scatters (SP) or 2 all-reduces per layer per pass
        vol = 4 * ring_fraction(tp) * tokens / cp * a.hidden_size * 2
        comm += passes * (a.num_layers / pp) * vol / collective_bytes_per_s(s, ctx.gpu, tp)
    if ep > 1 and a.is_moe:  # dispatch + combine all-to-all per MoE layer per pass
        vol = 2 * ring_fraction(ep) * tokens / (cp * tp) * a.num_experts_per_tok * a.hidden_size * 2
        comm += passes * (a.num_moe_layers / pp) * vol / collective_bytes_per_s(s, ctx.gpu, ep * tp)
    return {
        "compute": n_micro * stage,
        "tp_ep_comm": n_micro * comm,
        "pipeline_bubble": (pp - 1) * (stage + comm),
    }


def fsdp_io(s: Scenario, ctx: Context, r: TrainingEngine, *, gathers: int, grads: bool) -> tuple[float, float]:
    """(collective seconds, host-copy seconds) per micro-batch of an FSDP role."""
    coll = collective_bytes_per_s(s, ctx.gpu, r.n)
    comm = gathers * r.params * 2 * ring_fraction(r.n) / coll  # bf16 all-gathers
    host = 0.0
    if r.cpu_policy:
        host += gathers * r.params * r.mb / r.n / pcie_bytes_per_s(s, ctx.gpu)
    if grads:
        per_micro = 1.0 if not r.fsdp.use_no_sync_for_gradient_accumulation else 0.0
        comm += per_micro * r.trainable * 4 * ring_fraction(r.n) / coll
        replicas = s.hardware.num_gpus // r.n
        if replicas > 1:  # HSDP: all-reduce of the grad shard across replica groups
            comm += (
                per_micro
                * r.trainable
                * 4
                / r.n
                * 2
                * ring_fraction(replicas)
                / collective_bytes_per_s(s, ctx.gpu, s.hardware.num_gpus)
            )
        if r.cpu_policy:
            host += r.trainable * 4 / r.n / pcie_bytes_per_s(s, ctx.gpu)
    return comm, host
