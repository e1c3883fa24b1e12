"""How a training backend spends time around its compute: FSDP collectives and host copies per
micro-batch, Megatron TP/EP collectives and pipeline bubble, Ulysses all-to-alls, offload copies
(used by ``calculator.timing.step``; its docstring states the assumptions).

FSDP (verl ``workers/engine/fsdp``): bf16 all-gather of the weights per forward (and again per backward
with ``reshard_after_forward``), fp32 reduce-scatter of the gradients (``reduce_dtype`` fp32), HSDP
all-reduce across replica groups; FSDP2 ``offload_policy`` copies the shard in for each gather and the
grads out. Megatron: 2 all-gathers + 2 reduce-scatters (sequence parallel) or 2 all-reduces per layer
per pass over TP, a dispatch + combine all-to-all per MoE layer over EP, a 1F1B pipeline bubble of
``pp - 1`` micro-batch stage times per mini-batch (Narayanan et al. 2021 §2.2: bubble fraction
(p-1)/(m+p-1)). Ring volumes per GPU as in ``calculator.timing.flops``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from calculator.inputs.hardware import GpuSpec
from calculator.inputs.scenario import MegatronSection, Scenario
from calculator.memory.context import Context
from calculator.memory.megatron_ranks import pacing_rank
from calculator.memory.training import megatron_role_shards, shard_size
from calculator.model.architecture import Architecture
from calculator.model.megatron_activations import stage_layers
from calculator.model.roles import RoleModel, trainable_adapter_params
from calculator.resolve.batching import PassBatch
from calculator.resolve.roles import TrainerPlan
from calculator.timing.flops import (
    FULL_RECOMPUTE,
    GB,
    NO_RECOMPUTE,
    Recompute,
    attention_flops_per_token,
    collective_bytes_per_s,
    gemm_efficiency,
    pcie_bytes_per_s,
    peak_flops,
    ring_fraction,
    strided_group_bytes_per_s,
)
from calculator.units import ceil_div, dtype_bytes

# Tensors an optimizer step streams per parameter (torch AdamW foreach): read p, g, m, v and write
# p, m, v, plus the grad-norm read for clipping = 8 tensors; SGD (no momentum): read p, g, write p + norm.
OPTIMIZER_STEP_TENSORS = {"AdamW": 8, "adam": 8, "SGD": 4, "Adafactor": 4}
OPTIMIZER_STATES = {"AdamW": 2, "adam": 2, "SGD": 0, "Adafactor": 0}  # moments kept per param (training.py)


class TrainingEngine:
    """One model as an engine: which parallelism and offload settings apply to it."""

    def __init__(self, ctx: Context, role: RoleModel, plan: TrainerPlan) -> None:
        s = ctx.s
        self.s, self.gpu, self.role, self.plan = s, ctx.gpu, role, plan
        self.strategy, self.fsdp, self.meg = plan.strategy, plan.fsdp, plan.megatron
        self.megatron = plan.is_megatron
        g = s.hardware.num_gpus
        self.n = shard_size(plan.fsdp, g)
        self.params = role.num_params
        self.trainable = (
            trainable_adapter_params(role.arch, s.model.lora_rank, s.model.target_modules, plan.is_megatron)
            if s.model.lora_rank and role.name == "actor"
            else self.params
        )
        self.mb = dtype_bytes(plan.fsdp.model_dtype)
        # Share of the parameters in the root unit plus one decoder layer (FSDP pipeline fill, ``fsdp_io``).
        self.edge = min(1.0, (role.root_params + role.largest_layer_params) / max(role.num_params, 1))
        self.cpu_policy = plan.cpu_offload_policy
        self.dp = plan.dp
        self.p_off, self.o_off = plan.param_offload, plan.optimizer_offload
        # Megatron: the dense / expert parameters a GPU holds, and the data-parallel groups their grads are reduced
        # over and their optimizer state is sharded over (``memory.training.MegatronShards``); FSDP: all over the
        # FSDP group.
        # With PP > 1 those of the rank with the most of them: every rank steps its optimizer, reduces its grads and
        # copies its offloaded state at the same point of the step, so the largest paces it
        # (``calculator.memory.megatron_ranks.pacing_rank``).
        self.dp_split = (
            megatron_role_shards(s, role, plan.megatron, pacing_rank(role, plan.megatron)) if self.megatron else None
        )
        self.local = self.dp_split.local if self.dp_split else self.params / self.n

    def offload_seconds(self, *, optimizer: bool) -> float:
        """PCIe time to bring this role's offloaded state in for one phase and put it back."""
        rate = pcie_bytes_per_s(self.s, self.gpu)
        b = 0.0
        if self.p_off and not self.cpu_policy:
            b += 2 * self.local * (2 if self.megatron else self.mb)
        if optimizer and self.o_off and not self.cpu_policy:
            states = OPTIMIZER_STATES.get(self.s.actor.optim.optimizer, 2)
            if self.dp_split:  # distributed optimizer: fp32 master + moments, sharded over each param's DP group
                shard = self.dp_split.sharded if self.meg.use_distributed_optimizer else self.local
                b += 2 * shard * (4 + 4 * states)
            else:  # moments in the model dtype, sharded over the FSDP group
                b += 2 * self.trainable / self.n * states * self.mb
        return b / rate


def megatron_micro(s: Scenario, r: TrainingEngine, pb: PassBatch, seq_len: float) -> tuple[float, int]:
    """(mean tokens per micro-batch of one model replica, micro-batches per DP rank): the same micro-batch
    size (or token budget) as ``pb``, over Megatron's DP = GPUs / (TP x PP x CP); the rank's tokens are
    spread over that many micro-batches (the last one is not padded to full size)."""
    num_seqs = pb.sequences_per_gpu * (s.hardware.num_gpus // r.plan.sp)
    seqs = ceil_div(num_seqs, r.dp)
    tokens = max(pb.tokens_per_gpu, 1)
    n = max(1, math.ceil(seqs * seq_len / tokens))
    return seqs * seq_len / n, n


def ulysses_seconds(ctx: Context, role: RoleModel, tokens: float, sp: int, passes: float) -> float:
    """Ulysses SP all-to-alls: q, k, v in and the output back, per layer per pass (not overlapped)."""
    s = ctx.s
    if sp <= 1:
        return 0.0
    a = role.arch
    volume = tokens * (a.q_dim + 2 * a.kv_dim + a.attn_out_dim) * 2 * ring_fraction(sp)
    return passes * a.num_layers * volume / collective_bytes_per_s(s, ctx.gpu, sp)


def megatron_recompute(meg: MegatronSection, arch: Architecture) -> Recompute:
    """What Megatron-core recomputes in backward (``override_transformer_config.recompute_*``):
    selective = the core attention only (``recompute_modules`` ['core_attn'], verl's default; the other
    modules it can list are not modelled); full + uniform = every layer (checkpointed in groups of
    ``recompute_num_layers``); full + block = the first ``recompute_num_layers`` layers of each pipeline stage."""
    g = meg.recompute_granularity
    if g is None:
        return NO_RECOMPUTE
    if g == "selective":
        return Recompute(0.0, 1.0)
    if meg.recompute_method == "block" and meg.recompute_num_layers is not None:
        per_stage = max(1.0, arch.num_layers / meg.pipeline_model_parallel_size)
        share = min(1.0, meg.recompute_num_layers / per_stage)
        return Recompute(share, share)
    return FULL_RECOMPUTE


def host_seconds(s: Scenario, role: RoleModel, passes: float, layers: float | None = None) -> float:
    """CPU time to issue one micro-batch's kernels: layers x passes x ``train_host_us_per_layer_pass``."""
    n = role.arch.num_layers if layers is None else layers
    return passes * n * s.efficiency.train_host_us_per_layer_pass * 1e-6


def all_to_all_seconds(s: Scenario, gpu: GpuSpec, bytes_per_gpu: float, group_size: int) -> float:
    """Seconds for each GPU of a ``group_size`` group to send ``bytes_per_gpu`` in an all-to-all (EP dispatch or
    combine). Unlike a ring, every peer gets its own slice: the slices for peers on other nodes leave through the
    GPU's own NIC (``inter_node_gb_per_s`` x network_efficiency, one NIC per GPU), the rest go over NVLink; both
    run at once, so the slower share sets the time. Inside one node this is ``bytes / NVLink``."""
    gpn = s.hardware.gpus_per_node
    intra = collective_bytes_per_s(s, gpu, min(group_size, gpn))
    if group_size <= gpn:
        return bytes_per_gpu / intra
    off_node = (group_size - gpn) / (group_size - 1)
    nic = gpu.inter_node_gb_per_s * GB * s.efficiency.network_efficiency
    return max(bytes_per_gpu * off_node / nic, bytes_per_gpu * (1 - off_node) / intra)


def megatron_pass(
    ctx: Context,
    r: TrainingEngine,
    pb: PassBatch,
    seq_len: float,
    flops_per_token: float,
    mfu: float,
    passes: float,
) -> dict[str, float]:
    """One pass over one mini-batch: forward-only (passes=1) or training (2 = forward + backward, plus the
    recomputed share of a forward). Per micro-batch and pipeline stage: compute at ``mfu`` x the GEMM
    efficiency of its tokens / CP, TP/EP collectives (exposed), and the host time of issuing the stage's
    layers where it exceeds the two (the GPU runs behind the CPU)."""
    s = ctx.s
    m, a = r.meg, r.role.arch
    tp, pp, cp, ep = (
        m.tensor_model_parallel_size,
        m.pipeline_model_parallel_size,
        m.context_parallel_size,
        m.expert_model_parallel_size,
    )
    tokens, n_micro = megatron_micro(s, r, pb, seq_len)
    # 1F1B runs at the pace of its slowest stage: with an uneven split (Megatron-core's layers per stage,
    # model.megatron_activations.stage_layers) the fullest stage's layers over the mean (1 for an even split).
    layers = stage_layers(a.num_layers, m)
    slowest = 1.0 if isinstance(layers, str) else max(layers) * pp / a.num_layers
    stage = tokens * flops_per_token / (tp * cp * pp) / (peak_flops(ctx.gpu) * mfu) * slowest
    slow = stage / gemm_efficiency(s, tokens / cp, ctx.gpu) - stage
    comm = 0.0
    if tp > 1:  # 2 all-gathers + 2 reduce-scatters (SP) or 2 all-reduces per layer per pass
        vol = 4 * ring_fraction(tp) * tokens / cp * a.hidden_size * 2
        comm += passes * (a.num_layers / pp * slowest) * vol / collective_bytes_per_s(s, ctx.gpu, tp)
    if ep > 1 and a.is_moe:  # dispatch + combine all-to-all per MoE layer per pass
        vol = 2 * ring_fraction(ep) * tokens / (cp * tp) * a.num_experts_per_tok * a.hidden_size * 2
        comm += passes * (a.num_moe_layers / pp * slowest) * all_to_all_seconds(s, ctx.gpu, vol, ep * tp)
    ring = cp_ring_seconds(ctx, r, tokens, seq_len, mfu, passes) if cp > 1 else 0.0
    host = host_seconds(s, r.role, passes, a.num_layers / pp * slowest)
    launch = max(0.0, host - (stage + slow + comm + ring))
    return {
        "compute": n_micro * stage,
        "gemm_small_batch": n_micro * slow,
        "tp_ep_comm": n_micro * comm,
        "cp_ring_attention": n_micro * ring,
        "host_overhead": n_micro * launch,
        "pipeline_bubble": (pp - 1) * (stage + slow + comm + ring + launch),
    }


def megatron_dp_seconds(ctx: Context, r: TrainingEngine) -> float:
    """One mini-batch's gradient reduce-scatter (fp32, 4 B) + updated-parameter all-gather (bf16, 2 B) of the
    distributed optimizer (without it: an fp32 all-reduce, 2 x 4 B), each buffer over its own group (``memory.training.MegatronShards``): the dense params over the DP group,
    the expert params over the expert DP group, at that group's bandwidth (``strided_group_bytes_per_s``). Not
    overlapped with compute: verl builds Megatron's DDP with overlap_grad_reduce False and grad_reduce_in_fp32 True
    (verl 0.5.0 / 0.9.1 ``utils/megatron_utils.py``, the DDP config dict)."""
    d = r.dp_split
    assert d is not None
    s, gpu = ctx.s, ctx.gpu
    per = 4 + 2 if r.meg.use_distributed_optimizer else 2 * 4
    dense = d.dense_local * per * ring_fraction(d.dp) / strided_group_bytes_per_s(s, gpu, d.dp, d.dp_stride)
    rate = strided_group_bytes_per_s(s, gpu, d.expert_dp, d.expert_dp_stride)
    return dense + d.expert_local * per * ring_fraction(d.expert_dp) / rate


def cp_ring_seconds(ctx: Context, r: TrainingEngine, tokens: float, seq_len: float, mfu: float, passes: float) -> float:
    """Exposed context-parallel traffic of one micro-batch on one pipeline stage (Megatron / TransformerEngine
    p2p ring attention, ``cp_comm_type: p2p``, Megatron-core's default): every layer's forward sends the local K
    and V chunk (tokens / CP x 2 x kv_dim / TP x 2 B) around the CP ring in CP - 1 hops, each hidden behind the
    attention of one block (1 / CP of the local causal attention FLOPs, load-balanced chunks); backward sends
    K, V and their gradients (2 x, behind 2 x the block). Forward-only: 1 hop-set per layer; training: forward +
    recomputed forward + backward (passes + 1). Only hop time beyond its block is exposed. Left out: CP's
    all-gather variant (``a2a``/``all_gather``), the softmax-correction kernels between hops."""
    s, a, m = ctx.s, r.role.arch, r.meg
    tp, cp, pp = m.tensor_model_parallel_size, m.context_parallel_size, m.pipeline_model_parallel_size
    hop = tokens / cp * 2 * a.kv_dim / tp * 2 / collective_bytes_per_s(s, ctx.gpu, cp * tp)
    attn = attention_flops_per_token(a, seq_len, causal=True) / a.num_layers * tokens / (cp * tp)
    block = attn / cp / (peak_flops(ctx.gpu) * mfu)
    hop_sets = 1.0 if passes <= 1 else passes + 1.0
    return hop_sets * (a.num_layers / pp) * (cp - 1) * max(0.0, hop - block)


class FsdpIo(NamedTuple):
    """Per micro-batch of an FSDP role: collective seconds, host-copy seconds, and ``fill``: the part of
    them nothing can hide (the first unit's gather before any compute, the last reduce-scatters after it)."""

    comm: float
    host: float
    fill: float


def fsdp_io(ctx: Context, r: TrainingEngine, *, gathers: int, grads: bool) -> FsdpIo:
    """Collectives and host copies per micro-batch of an FSDP role.

    Pipeline fill: forward starts with the root unit's all-gather (embedding, final norm, LM head; verl wraps
    each decoder layer as its own unit) and layer 0's, before any compute; backward ends with layer 0's and
    the root's reduce-scatters, after the last compute. So (root + one layer) / params of one gather and of
    the gradient traffic are exposed per micro-batch, however long the compute (``TrainingEngine.edge``)."""
    s = ctx.s
    coll = collective_bytes_per_s(s, ctx.gpu, r.n)
    one_gather = r.params * 2 * ring_fraction(r.n) / coll  # bf16 all-gather
    comm = gathers * one_gather
    host = 0.0
    host_gather = r.params * r.mb / r.n / pcie_bytes_per_s(s, ctx.gpu) if r.cpu_policy else 0.0
    host += gathers * host_gather
    grad_comm = grad_host = 0.0
    if grads:
        per_micro = 1.0 if not r.fsdp.use_no_sync_for_gradient_accumulation else 0.0
        grad_comm += per_micro * r.trainable * 4 * ring_fraction(r.n) / coll
        replicas = s.hardware.num_gpus // r.n
        if replicas > 1:  # HSDP: all-reduce of the grad shard across replica groups
            grad_comm += (
                per_micro
                * r.trainable
                * 4
                / r.n
                * 2
                * ring_fraction(replicas)
                / collective_bytes_per_s(s, ctx.gpu, s.hardware.num_gpus)
            )
        if r.cpu_policy:
            grad_host += r.trainable * 4 / r.n / pcie_bytes_per_s(s, ctx.gpu)
    fill = r.edge * (one_gather + host_gather + grad_comm + grad_host)
    return FsdpIo(comm + grad_comm, host + grad_host, fill)
