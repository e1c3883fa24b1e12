"""FLOP counts, link bandwidths and the per-phase time record shared by the throughput modules.

FLOPs (Kaplan et al. 2020 "Scaling Laws" §2.1; Narayanan et al. 2021 "Efficient large-scale
training" appendix): a matmul with N weights costs 2·N FLOPs per token forward; backward costs 2·N
for the input gradients plus 2·N for the weight gradients (so 6·N per trained token). Attention
adds the score (QKᵀ) and value (PV) products, which are not parameter matmuls:

    forward, causal, one sequence of L tokens, one layer:  L²·(q_dim + o_dim)
        (QKᵀ: 2·L²·q_dim, PV: 2·L²·o_dim, halved because flash-attention skips the masked half)
    per token, averaged over the sequence:                 L·(q_dim + o_dim) per layer
    decode, one new token at context c:                    2·c·(q_dim + o_dim) per layer

This is verl 0.9.1's own counter for dense GQA models (``verl/utils/flops_counter.py``:
``6 · Σ seqlen² · head_dim · heads · layers`` for forward + backward), so an MFU computed here reads
like that release's ``perf/mfu/actor``; verl 0.5.0 - 0.7.x count the full L x L products, 12 instead of 6
(:func:`verl_counted_flops_per_token`). One more difference: verl counts the input embedding as a matmul
(``2·V·h`` per token); rlplan does not (a lookup costs no FLOPs), which makes verl's MFU ~7% higher
for a 7B model with a 152k vocabulary.

Left out: element-wise work (norms, RoPE, SwiGLU, softmax of the logits, entropy), which is
memory-bound and a few percent of a step; MLA's absorbed-weight decode (counted as plain attention).
Rates: FLOPs are turned into seconds at an MFU (``EfficiencyConfig``) times ``gemm_efficiency``, the share
of the large-M GEMM rate reached with M tokens per call.

Bandwidths are per GPU and per direction, in bytes/s. Ring collectives move ``(n-1)/n`` of the
tensor per GPU for all-gather and reduce-scatter and twice that for all-reduce (Patarasuk & Yuan
2009; NCCL's "bus bandwidth" convention, nccl-tests doc/PERFORMANCE.md).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from calculator.inputs.hardware import GpuSpec
from calculator.inputs.scenario import Scenario
from calculator.model.architecture import Architecture
from calculator.model.roles import RoleModel, trainable_adapter_params

GB = 1e9  # GPU datasheets quote decimal GB/s
# H100-SXM5 datasheet: 989 dense bf16 TFLOPS / 3,350 GB/s HBM3 = 295 FLOP/B, the balance at which train_mfu,
# forward_mfu and gemm_half_saturation_tokens are stated (their sources are H100 measurements).
REFERENCE_RIDGE_FLOP_PER_BYTE = 989e12 / 3350e9
T = TypeVar("T")
TFLOPS = 1e12


@dataclass(frozen=True)
class PhaseTime:
    """Seconds of one phase, split into named terms that add up to ``seconds``."""

    terms: dict[str, float]
    formula: str
    model_flops: float = 0.0  # useful model FLOPs of the phase over the whole pool (no recompute)
    extra: dict[str, float] = field(default_factory=dict)  # diagnostics (not part of the sum)
    notes: dict[str, str] = field(default_factory=dict)  # per term: its formula with the inputs used

    @property
    def seconds(self) -> float:
        return sum(self.terms.values())


# ---- FLOPs ---------------------------------------------------------------------------------------


def per_architecture(fn: Callable[[Architecture], T]) -> Callable[[Architecture], T]:
    """Memoise a pure function of an Architecture by object identity. Hashing a frozen pydantic model
    hashes all its fields (microseconds per call, and these run many times per estimate); the cache
    keeps a strong reference to each architecture, so an id is never reused while it is cached."""
    cache: dict[int, tuple[Architecture, T]] = {}

    @functools.wraps(fn)
    def wrapper(arch: Architecture) -> T:
        hit = cache.get(id(arch))
        if hit is not None and hit[0] is arch:
            return hit[1]
        if len(cache) >= 256:
            cache.clear()
        value = fn(arch)
        cache[id(arch)] = (arch, value)
        return value

    return wrapper


@per_architecture
def _active_matmul(arch: Architecture) -> int:
    return arch.active_matmul_params()


@per_architecture
def _total_params(arch: Architecture) -> int:
    return arch.total_params()


def matmul_params(role: RoleModel) -> int:
    """Weights that do matmul work per token for this role: a policy (actor, ref, rollout) uses
    ``active_matmul_params`` (LM head included, embedding lookup excluded, MoE: top-k experts);
    a value model (critic, reward) replaces the V x h LM head by a 1-output score head (h)."""
    a = role.arch
    n = _active_matmul(a)
    if role.lm_head_vocab:
        return n
    return n - a.vocab_size * a.hidden_size + a.hidden_size


def total_params(arch: Architecture) -> int:
    """Cached ``Architecture.total_params`` (it sums every layer on each call)."""
    return _total_params(arch)


def attention_flops_per_token(arch: Architecture, context_tokens: float, *, causal: bool) -> float:
    """Forward FLOPs of the attention products for one token (see the module docstring).

    ``causal=True``: a prefill / training token, averaged over a sequence of ``context_tokens``
    (the sequence length). ``causal=False``: a decode token attending to ``context_tokens`` cached ones.
    """
    f = 2.0 * arch.num_layers * (arch.q_dim + arch.attn_out_dim) * context_tokens
    return f / 2 if causal else f


def verl_counted_flops_per_token(
    arch: Architecture, mean_len: float, mean_square_len: float, *, attention_coefficient: int
) -> float:
    """FLOPs per trained token as verl's ``perf/mfu/actor`` counts them (``verl/utils/flops_counter.py``
    ``FlopsCounter``), for comparing a published verl MFU with ``TimeOut.update_mfu`` (which counts
    ``train_flops_per_token``'s model FLOPs):

        6 x (active matmul weights + the input embedding V x h) + coefficient x Σ L² / Σ L x layers x q_dim

    verl counts the embedding lookup as a matmul (``emd_and_lm_head_N = vocab_size * hidden_size * 2``) and the
    attention over every sequence's L² (Σ L² / Σ L = E[L²] / E[L] per token, ``mean_square_len / mean_len``).
    ``attention_coefficient``: 12 in verl 0.5.0 - 0.7.x (the full L x L score and value products, forward +
    backward: ``attn_qkv_flops = 12 * seqlen_square_sum * head_dim * num_attention_heads * num_hidden_layers``, the
    Qwen2 / Qwen2-MoE / DeepSeek-V3 counters), 6 in 0.9.1 (causal: half of it); rlplan counts the causal half
    at the mean length (``attention_flops_per_token``). Left out: the MoE router (h x experts per layer, counted by
    verl for MoE models; < 1% of the FLOPs), MLA's value head dim (verl uses q_head_dim for both products)."""
    matmul = 6.0 * (_active_matmul(arch) + arch.vocab_size * arch.hidden_size)
    per_len = mean_square_len / max(mean_len, 1.0)
    return matmul + attention_coefficient * per_len * arch.num_layers * arch.q_dim


def trainable_matmul_params(s: Scenario, role: RoleModel) -> int:
    """Weights that receive gradients: all matmul weights, or only the LoRA adapters (policy roles)."""
    if s.model.lora_rank and role.name == "actor":
        return trainable_adapter_params(
            role.arch, s.model.lora_rank, s.model.target_modules, s.actor.strategy == "megatron"
        )
    return matmul_params(role)


@dataclass(frozen=True)
class Recompute:
    """What backward recomputes, as shares of one forward: ``matmul`` of the 2·N weight FLOPs, ``attention`` of
    the attention products. FSDP gradient checkpointing recomputes every decoder layer (1, 1); Megatron's
    ``recompute_granularity: full`` recomputes the layers it checkpoints (``megatron_recompute``), ``selective``
    only the core attention (0, 1)."""

    matmul: float = 0.0
    attention: float = 0.0

    @property
    def any(self) -> bool:
        return self.matmul > 0 or self.attention > 0


NO_RECOMPUTE = Recompute()
FULL_RECOMPUTE = Recompute(1.0, 1.0)


def train_flops_per_token(s: Scenario, role: RoleModel, seq_len: float, *, recompute: Recompute) -> tuple[float, float]:
    """(executed FLOPs, model FLOPs) per trained token of one forward + backward.

    executed = forward 2·N + input grads 2·N + weight grads 2·N_trainable + attention x (1 fwd + 2 bwd)
    + what backward recomputes (``recompute.matmul`` x 2·N + ``recompute.attention`` x attention; gradient
    checkpointing: one whole forward again); LoRA adds its adapters' own 6·N_lora. model FLOPs leave the
    recompute out (MFU convention, Chowdhery et al. 2022 PaLM appendix B).
    """
    n = matmul_params(role)
    trainable = trainable_matmul_params(s, role)
    attn = attention_flops_per_token(role.arch, seq_len, causal=True)
    lora_extra = 6.0 * trainable if trainable != n else 0.0
    weight_grads = 2.0 * trainable if trainable == n else 0.0
    model = 4.0 * n + weight_grads + lora_extra + 3.0 * attn
    executed = model + 2.0 * n * recompute.matmul + attn * recompute.attention
    return executed, model


def gemm_efficiency(s: Scenario, tokens: float, gpu: GpuSpec | None = None) -> float:
    """Share of the large-M rate that the weight GEMMs reach with ``tokens`` rows per call:
    M / (M + M_half) with M_half = ``efficiency.gemm_half_saturation_tokens`` (fitted on H100, the constant's
    description) x the GPU's ridge point / H100's: a GEMM with M rows does ~M FLOPs per weight byte, so it stops
    being bandwidth-bound at an M proportional to the ridge (H20: M_half 16, A100: 66). Without ``gpu``: H100's."""
    m = max(float(tokens), 1.0)
    half = s.efficiency.gemm_half_saturation_tokens
    if gpu is not None:
        half *= ridge_ratio(gpu)
    return m / (m + half)


def ridge_flop_per_byte(gpu: GpuSpec) -> float:
    """The GPU's roofline ridge point: dense bf16 peak / HBM bandwidth (FLOPs per byte, datasheet figures)."""
    return gpu.training_tflops * TFLOPS / (gpu.hbm_bandwidth_gb_per_s * GB)


def ridge_ratio(gpu: GpuSpec) -> float:
    """The GPU's ridge point over the reference (H100-SXM5) one at which the MFU constants are stated."""
    return ridge_flop_per_byte(gpu) / REFERENCE_RIDGE_FLOP_PER_BYTE


def achieved_fraction(s: Scenario, gpu: GpuSpec, mfu: float) -> float:
    """Large-work share of ``gpu``'s peak for a pass whose large-work MFU on an H100-balanced GPU is ``mfu``
    (``train_mfu`` / ``forward_mfu``): a roofline split of the time per FLOP,

        1 / fraction = 1 / tc  +  (1 / mfu - 1 / tc) x ridge_gpu / ridge_H100,     tc = ``tensor_core_fraction``

    the tensor-core work runs at tc of any GPU's peak; the rest of the step's time (element-wise kernels, norms,
    softmax, optimizer: memory-bound) costs bytes, i.e. seconds per FLOP that scale with peak / HBM bandwidth.
    H20 (148 TFLOPS / 4.0 TB/s, ridge 37): 0.35 -> 1 / (1.30 + 1.56 x 0.125) = 0.67; A100-80GB (ridge 153):
    0.47; H100 / H800 / H200 (ridge 295 / 295 / 206): 0.35 / 0.35 / 0.42. An ``mfu`` at or above tc is its own
    ceiling. Left out: clocks under the power cap (differ per SKU), L2 size, FP8 paths."""
    tc = s.efficiency.tensor_core_fraction
    if mfu >= tc:
        return mfu
    inverse = 1.0 / tc + (1.0 / mfu - 1.0 / tc) * ridge_ratio(gpu)
    return 1.0 / inverse


def forward_flops_per_token(role: RoleModel, seq_len: float) -> float:
    """Forward-only FLOPs per token: 2·N + causal attention."""
    return 2.0 * matmul_params(role) + attention_flops_per_token(role.arch, seq_len, causal=True)


# ---- bandwidths and peaks ------------------------------------------------------------------------


def peak_flops(gpu: GpuSpec) -> float:
    """Dense bf16 (fp16 where there is no bf16) tensor FLOP/s of one GPU (datasheet)."""
    return gpu.training_tflops * TFLOPS


def hbm_bytes_per_s(s: Scenario, gpu: GpuSpec) -> float:
    """Achieved HBM bandwidth of memory-bound kernels: datasheet x ``efficiency.decode_hbm_efficiency``
    (used for decode and for other streaming kernels: optimizer step, weight-sync copies)."""
    return gpu.hbm_bandwidth_gb_per_s * GB * s.efficiency.decode_hbm_efficiency


def pcie_bytes_per_s(s: Scenario, gpu: GpuSpec) -> float:
    """Host<->device copy rate of one GPU: its x16 link (``GpuSpec.pcie_gb_per_s``) x ``pcie_efficiency``.
    Modelled per GPU link; all GPUs of a node copy at once, and two GPUs often share one PCIe switch
    uplink and all share the host's memory bandwidth, so a whole-node offload can run slower (up to
    ~2x on HGX boards with 2 GPUs per switch): not modelled."""
    return gpu.pcie_gb_per_s * GB * s.efficiency.pcie_efficiency


def collective_bytes_per_s(s: Scenario, gpu: GpuSpec, group_size: int) -> float:
    """Bus bandwidth per GPU of a ring collective over ``group_size`` GPUs (contiguous ranks).

    Inside a node: NVLink (``intra_node_gb_per_s``, half the bidirectional figure) x nvlink_efficiency.
    Across nodes: NCCL runs one ring per NIC (rail-optimised clusters, one NIC per GPU), each ring
    crossing every node boundary once, so a node's inter-node traffic equals one ring link's and is
    spread over all its NICs: bus bandwidth = min(NVLink, inter_node_gb_per_s x GPUs per node) x
    network_efficiency. (Measured NCCL all-reduce bus bandwidth of 2+ DGX-H100 nodes with 8 x 400G
    NICs is ~370-400 GB/s, close to this; a single-NIC-per-node cluster would be 8x slower.)
    """
    eff = s.efficiency
    intra = gpu.intra_node_gb_per_s * GB * eff.nvlink_efficiency
    gpn = s.hardware.gpus_per_node
    if group_size <= gpn:
        return intra
    fabric = gpu.inter_node_gb_per_s * GB * min(gpn, group_size) * eff.network_efficiency
    return min(intra, fabric)


def strided_group_bytes_per_s(s: Scenario, gpu: GpuSpec, group_size: int, stride: int) -> float:
    """Bus bandwidth per GPU of a ring collective over a group of ``group_size`` ranks ``stride`` ranks apart (a
    Megatron data-parallel group: TP x CP apart; expert data-parallel: ETP x EP apart). Inside one node: NVLink as
    ``collective_bytes_per_s``. Across nodes, a node holds k = GPUs per node / stride members of the group (at least
    1): the ring crosses each node boundary once and NCCL spreads that crossing over the k members' own NICs (one per
    GPU), so the bus bandwidth is min(NVLink, inter_node_gb_per_s x k) x network_efficiency. With stride 1 this is
    ``collective_bytes_per_s``; with a stride of a whole node (one member per node) it is one NIC, as every group of
    the node runs its ring at once through its own GPU's NIC."""
    gpn = s.hardware.gpus_per_node
    stride = max(1, stride)
    if group_size * stride <= gpn:
        return collective_bytes_per_s(s, gpu, min(group_size, gpn))
    k = max(1, min(group_size, gpn // stride))
    eff = s.efficiency
    intra = gpu.intra_node_gb_per_s * GB * eff.nvlink_efficiency
    return min(intra, gpu.inter_node_gb_per_s * GB * k * eff.network_efficiency)


def ring_fraction(group_size: int) -> float:
    """(n-1)/n: the share of a tensor each GPU sends in a ring all-gather or reduce-scatter."""
    return (group_size - 1) / group_size if group_size > 1 else 0.0


def fmt_s(seconds: float) -> str:
    return f"{seconds:.3g} s" if seconds >= 0.01 else f"{seconds * 1e3:.3g} ms"
