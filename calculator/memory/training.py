"""Training-side state per GPU: parameters, gradients and optimizer state of each trained role,
and what the offload flags keep on the GPU in each phase (DESIGN.md 4.2).

FSDP engine, verl 0.9.1 (``verl/workers/engine/fsdp/transformer_impl.py``):
- the model is loaded in ``fsdp_config.model_dtype`` (fp32 default) and that sharded copy is the only
  persistent one: ``4 B x P / N`` (N = shard group: all GPUs, or ``fsdp_size`` for HSDP);
- mixed precision computes in bf16 (param bf16, reduce fp32, buffers fp32): only the all-gathered bf16
  copy of the wrap units in flight exists (one decoder layer, two with prefetch) plus the root unit
  (embedding, final norm, lm_head), which FSDP1 never reshards between forward and backward;
  FSDP2 shards embedding and lm_head as their own units (verl ``apply_fsdp2``), so only the lm_head
  is gathered beside the layers when the logits are computed;
- AdamW keeps ``exp_avg`` and ``exp_avg_sq`` in the param dtype: ``8 B x P / N``, created lazily at the
  first ``optimizer.step()``;
- gradients: sharded, param dtype, ``4 B x P / N``, freed by ``zero_grad(set_to_none=True)`` after
  the update; ``use_no_sync_for_gradient_accumulation`` keeps UNSHARDED fp32 grads (4 B x P);
- ``param_offload`` / ``optimizer_offload`` move params (+grads) / optimizer state to CPU while the
  role is idle and load them back for compute: they do not lower a role's own compute peak;
  FSDP2 ``offload_policy`` (CPUOffloadPolicy) keeps them on CPU during compute too;
- forward-only engines (the reference policy) are forced to CPU offload: ~0 resident, one unit
  streamed in bf16 at a time.
Megatron (``verl/workers/engine/megatron``): bf16 params ``2/(TP x PP)``, fp32 grad buffer
``4/(TP x PP)``, distributed optimizer fp32 master + Adam ``12/(TP x PP x DP)``; experts are split by
EP x ETP instead of TP; the ref stays on GPU in bf16 unless offloaded.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.inputs.scenario import FsdpSection, MegatronSection, Scenario
from calculator.memory.megatron_ranks import RankParams
from calculator.model.activations import BF16
from calculator.model.roles import (
    RoleModel,
    dora_magnitude_params,
    dora_transient_bytes,
    lora_params,
    megatron_lora_params,
)
from calculator.units import dtype_bytes

ADAM_STATES = 2  # exp_avg, exp_avg_sq (torch.optim.AdamW)


@dataclass(frozen=True)
class StatePart:
    """One piece of resident training state: bytes on this GPU and the formula text."""

    bytes: int
    formula: str


@dataclass(frozen=True)
class TrainingState:
    """Per-GPU bytes of one trained role's persistent state while it is on the GPU."""

    params: StatePart
    grads: StatePart
    optimizer: StatePart
    # Transient bf16 copies gathered for compute (FSDP units / Megatron nothing extra).
    gathered: StatePart
    extra_transient: StatePart  # DoRA merged weight, etc.
    # Optimizer state built with the optimizer, before the rollout engine starts (Megatron's fp32 main shards);
    # torch AdamW creates its moments lazily at the first step (0 for FSDP).
    optimizer_at_init_bytes: int = 0
    # Host RAM this role's optimizer keeps whatever the offload flags (Megatron's CPU optimizer fraction).
    host_optimizer: StatePart = StatePart(0, "")
    # Temporary of the optimizer step beyond the resident state (torch AdamW foreach: sqrt(exp_avg_sq)).
    step_transient: StatePart = StatePart(0, "")
    # Gradient the backward holds from its first step to its last (FSDP1's root unit: the output head's weight grad).
    held_grad: StatePart = StatePart(0, "")
    # Megatron with PP > 1: the pipeline rank whose state this is (calculator.memory.megatron_ranks); None: the mean
    # share of the model (FSDP, PP 1, or a split Megatron-core refuses).
    pp_rank: RankParams | None = None


def shard_size(fsdp: FsdpSection, num_gpus: int) -> int:
    """FSDP shard group size: all GPUs unless ``fsdp_size`` picks a smaller HSDP group."""
    if fsdp.fsdp_size <= 0 or fsdp.fsdp_size >= num_gpus:
        return num_gpus
    return fsdp.fsdp_size


def optimizer_bytes_per_param(optimizer: str, state_dtype_bytes: int) -> float:
    """Optimizer state per trainable parameter. AdamW/adam: two moments in the param dtype. SGD (no
    momentum, verl's default for SGD): none. Adafactor: factored second moment, ~0 per param
    (rows + columns per matrix; left out)."""
    if optimizer in ("AdamW", "adam"):
        return ADAM_STATES * state_dtype_bytes
    return 0.0


def fsdp_state(s: Scenario, role: RoleModel, fsdp: FsdpSection, strategy: str, trained: bool) -> TrainingState:
    g = s.hardware.num_gpus
    n = shard_size(fsdp, g)
    mb = dtype_bytes(fsdp.model_dtype)
    p = role.num_params
    lora = {"actor": s.model.lora_rank, "ref": s.model.lora_rank, "critic": s.critic.lora_rank}.get(role.name, 0)
    if not trained:
        # Forward-only engine: FSDP CPU offload is forced (ref) -> nothing resident.
        params = StatePart(0, f"forward-only FSDP engine forced to CPU offload: 0 resident ({p:,} params on CPU)")
        grads = StatePart(0, "no gradients (forward only)")
        opt = StatePart(0, "no optimizer (forward only)")
    elif lora:
        adapters = lora_params(role.arch, lora, s.model.target_modules)
        if s.model.use_dora and role.name == "actor":
            adapters += dora_magnitude_params(role.arch, s.model.target_modules)
        params = StatePart(
            (p + adapters) * mb // n,
            f"frozen base {p:,} + adapters {adapters:,} params x {mb} B ({fsdp.model_dtype}) / {n} GPUs",
        )
        grads = StatePart(adapters * mb // n, f"adapter grads {adapters:,} x {mb} B / {n}")
        ob = optimizer_bytes_per_param(s.actor.optim.optimizer, mb)
        opt = StatePart(int(adapters * ob) // n, f"{s.actor.optim.optimizer} states {adapters:,} x {ob:g} B / {n}")
    else:
        params = StatePart(p * mb // n, f"{p:,} params x {mb} B ({fsdp.model_dtype} master) / {n} GPUs")
        if fsdp.use_no_sync_for_gradient_accumulation:
            grads = StatePart(p * mb, f"{p:,} params x {mb} B unsharded (use_no_sync_for_gradient_accumulation)")
        else:
            grads = StatePart(p * mb // n, f"{p:,} params x {mb} B / {n} GPUs (sharded grads)")
        ob = optimizer_bytes_per_param(s.actor.optim.optimizer, mb)
        opt = StatePart(int(p * ob) // n, f"{s.actor.optim.optimizer}: {p:,} params x {ob:g} B / {n} GPUs")
    # Gathered bf16 units in flight during compute.
    layer = role.largest_layer_params
    if strategy == "fsdp2":
        root = role.arch.vocab_size * role.arch.hidden_size if role.lm_head_vocab else role.arch.hidden_size + 1
        root_txt = "lm_head unit"
    else:
        root = role.root_params
        root_txt = "root unit (embedding + final norm + head), not resharded by FSDP1"
    gathered = StatePart(
        2 * (2 * layer + root),
        f"bf16 all-gather: 2 decoder layers x {layer:,} (prefetch) + {root_txt} {root:,} params, x 2 B",
    )
    if not fsdp.reshard_after_forward and trained:
        # verl get_sharding_strategy(zero3_enable=reshard_after_forward=False): FSDP1 SHARD_GRAD_OP / FSDP2
        # without reshard keep every unit gathered from its forward to its backward (and FSDP1 never frees them
        # in forward-only passes: SHARD_GRAD_OP is not in RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES).
        gathered = StatePart(2 * p, f"reshard_after_forward=false: every unit stays gathered, {p:,} params x 2 B")
    step = _adamw_step_transient(s.actor.optim.optimizer, trainable_params=adapters if lora else p, mb=mb, n=n)
    if not trained:
        step = StatePart(0, "")
    extra = StatePart(0, "")
    if lora and s.model.use_dora:
        t = dora_transient_bytes(role.arch, s.model.target_modules)
        extra = StatePart(
            t, "DoRA: merged weight W + B·A of the largest adapted matrix and its square for the norm, bf16"
        )
    held = _fsdp1_head_grad(role, strategy, trained and not lora)
    return TrainingState(params, grads, opt, gathered, extra, step_transient=step, held_grad=held)


def _fsdp1_head_grad(role: RoleModel, strategy: str, trains_head: bool) -> StatePart:
    """FSDP1 flattens the root unit (embedding, final norm, output head) into one FlatParameter; with verl's
    ``use_orig_params: false`` (0.9.1 ``workers/config/engine.py`` 290) the module reads its weights as views of
    one ``torch.split`` of it (torch ``distributed/fsdp/_flat_param.py`` ``_get_unflat_views``), so autograd runs
    the split's backward (a concat of every view's separately allocated gradient: pytorch/pytorch#117323, FSDP's
    author) and FSDP's reduce-scatter of that unit only once every view's gradient is in. The head's
    weight gradient comes first in backward and the embedding's last: the head gradient (vocab x hidden, in the
    unsharded parameters' dtype, bf16: 0.9.1 ``workers/engine/fsdp/transformer_impl.py`` 393 ``param_dtype``) is
    held through the whole backward, beside its peak (verl_source_audit item 13). FSDP2 shards the head as its own
    unit and reduces its gradient at once; a LoRA base head has no gradient. Left out: a critic's value head
    (hidden + 1 values) and the split backward's full-unit concatenation at the very end, when the activations are
    already freed."""
    if strategy != "fsdp" or not trains_head or not role.lm_head_vocab:
        return StatePart(0, "")
    h = role.arch.hidden_size
    return StatePart(
        BF16 * role.lm_head_vocab * h,
        f"FSDP1 root unit: the output head's weight gradient, vocab {role.lm_head_vocab:,} x hidden {h:,} x {BF16} B "
        "(bf16), held until the embedding's at the end of backward",
    )


def _adamw_step_transient(optimizer: str, trainable_params: int, mb: int, n: int) -> StatePart:
    """torch.optim.AdamW with default arguments runs the foreach implementation on CUDA (verl 0.9.1
    ``workers/config/optimizer.py`` builds it without ``foreach``/``fused``); ``_multi_tensor_adam`` allocates
    ``exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sq)`` for the whole parameter group: one more
    state-sized tensor during ``optimizer.step()`` (torch/optim/adam.py). Left out: the foreach lists' small
    per-tensor scalars."""
    if optimizer not in ("AdamW", "adam"):
        return StatePart(0, "")
    b = trainable_params * mb // n
    return StatePart(b, f"AdamW foreach step: sqrt(exp_avg_sq) temporary {trainable_params:,} x {mb} B / {n} GPUs")


@dataclass(frozen=True)
class MegatronShards:
    """Parameters of one GPU under Megatron, by the data-parallel group that reduces their grads and shards their
    optimizer state (megatron-core 0.16.1 ``distributed/distributed_data_parallel.py``: dense params in buffers over
    the DP x CP group, routed-expert params in separate buffers over the expert data-parallel group
    ``intra_expt_dp_group``; the distributed optimizer shards each buffer over its own group). Group sizes and rank
    strides follow ``parallel_state.initialize_model_parallel`` (order ``tp-cp-ep-dp-pp``): the dense DP group has
    GPUs / (TP x CP x PP) ranks, TP x CP apart; the expert DP group GPUs / (ETP x EP x PP) ranks, ETP x EP apart.
    The memory model reads ``local`` / ``sharded``, the time model the groups (``calculator.timing.backend``)."""

    dense_local: float  # dense parameters on this GPU: / (TP x PP)
    expert_local: float  # routed-expert parameters on this GPU: / (EP x ETP x PP)
    dp: int
    dp_stride: int
    expert_dp: int
    expert_dp_stride: int
    text: str

    @property
    def local(self) -> float:
        return self.dense_local + self.expert_local

    @property
    def sharded(self) -> float:
        """Parameters whose optimizer state this GPU holds and steps (distributed optimizer)."""
        return self.dense_local / self.dp + self.expert_local / self.expert_dp


def megatron_shards(
    g: int, m: MegatronSection, dense: float, expert: float, pp_rank: RankParams | None = None
) -> MegatronShards:
    """:class:`MegatronShards` of ``dense`` + ``expert`` parameters of the whole model on ``g`` GPUs under ``m``'s
    layout (1 / PP of them per pipeline rank), or, with ``pp_rank``, of that rank's own parameters."""
    tp, pp, cp = m.tensor_model_parallel_size, m.pipeline_model_parallel_size, m.context_parallel_size
    ep = m.expert_model_parallel_size
    etp = m.expert_tensor_parallel_size or tp
    if pp_rank is not None:
        split = 1
        text = f"{pp_rank.text}: dense {dense:,} / TP {tp}" + (
            f" + experts {expert:,} / (EP {ep} x ETP {etp})" if expert else ""
        )
    else:
        split = pp
        text = f"dense {dense:,} / (TP {tp} x PP {pp})" + (
            f" + experts {expert:,} / (EP {ep} x ETP {etp} x PP {pp})" if expert else ""
        )
    return MegatronShards(
        dense_local=dense / (tp * split),
        expert_local=expert / (ep * etp * split),
        dp=max(1, g // (tp * pp * cp)),
        dp_stride=tp * cp,
        expert_dp=max(1, g // (ep * etp * pp)),
        expert_dp_stride=ep * etp,
        text=text,
    )


def megatron_role_shards(
    s: Scenario, role: RoleModel, m: MegatronSection, pp_rank: RankParams | None = None
) -> MegatronShards:
    """One Megatron role's parameters on ``s.hardware.num_gpus`` GPUs: its routed experts apart from the rest.
    ``pp_rank``: those of one pipeline rank (``calculator.memory.megatron_ranks``); without it, the mean share
    (1 / PP of the model)."""
    if pp_rank is not None:
        return megatron_shards(s.hardware.num_gpus, m, pp_rank.dense, pp_rank.expert, pp_rank)
    arch = role.arch
    expert = arch.num_experts * arch.expert_params() * arch.num_moe_layers
    return megatron_shards(s.hardware.num_gpus, m, role.num_params - expert, expert)


def megatron_state(
    s: Scenario, role: RoleModel, m: MegatronSection, trained: bool, pp_rank: RankParams | None = None
) -> TrainingState:
    """One role's Megatron state (module docstring). With LoRA (verl >= 0.7 ``model.lora.rank``, Megatron-Bridge
    PEFT) the base stays frozen in bf16 and the adapters (``megatron_lora_params``, split like the layers they
    adapt) are the only trainable parameters: Megatron's DDP builds grad buffers only for parameters that require
    grad and the distributed optimizer holds only their shards. Left out: LoRA dropout buffers (dropout 0 by
    default). ``pp_rank``: the pipeline rank described (``calculator.memory.megatron_ranks``; None: the mean share);
    LoRA adapters follow their layers (the rank's share of the decoder layers)."""
    g = s.hardware.num_gpus
    arch = role.arch
    base = megatron_role_shards(s, role, m, pp_rank)
    params = StatePart(int(base.local * 2), f"bf16 params: {base.text}, x 2 B")
    if not trained:
        return TrainingState(
            params,
            StatePart(0, "no gradients"),
            StatePart(0, "no optimizer"),
            StatePart(0, ""),
            StatePart(0, ""),
            pp_rank=pp_rank,
        )
    rank = {"actor": s.model.lora_rank, "critic": s.critic.lora_rank}.get(role.name, 0)
    train, label = base, ""
    if rank:
        dense, expert = megatron_lora_params(arch, rank, s.model.target_modules)
        if pp_rank is not None:  # the adapters of the rank's layers (the mean share times its layers / the mean)
            dense, expert = (x * pp_rank.num_layers * pp_rank.num_ranks // arch.num_layers for x in (dense, expert))
        train, label = megatron_shards(g, m, dense, expert), "adapters: "
        params = StatePart(
            int(base.local * 2 + train.local * 2),
            f"frozen base, bf16 params: {base.text} + LoRA rank {rank} adapters: {train.text}, x 2 B",
        )
    gb = dtype_bytes(m.main_grads_dtype) if m.use_precision_aware_optimizer else 4
    grads = StatePart(
        int(train.local * gb),
        f"grad buffer ({'main_grads_dtype' if gb == 2 else 'fp32'}): {label}{train.text}, x {gb} B",
    )
    q = train.sharded if m.use_distributed_optimizer else train.local
    where = (
        f"/ DP {train.dp}: {label}{train.text}"
        if m.use_distributed_optimizer
        else f"not sharded over DP: {label}{train.text}"
    )
    gpu_b, init_b, host_b, text, host_text = megatron_optimizer_bytes(s.actor.optim.optimizer, m)
    opt = StatePart(int(q * gpu_b), f"{text} {where}")
    host = StatePart(int(q * host_b), f"{host_text} {where}") if host_b else StatePart(0, "")
    return TrainingState(
        params,
        grads,
        opt,
        StatePart(0, "Megatron keeps params unsharded within TP/PP: no gather"),
        StatePart(0, ""),
        optimizer_at_init_bytes=int(q * init_b),
        host_optimizer=host,
        pp_rank=pp_rank,
    )


def megatron_optimizer_bytes(optimizer: str, m: MegatronSection) -> tuple[float, float, float, str, str]:
    """Per DP-sharded parameter: (GPU optimizer bytes, of which built at init, host bytes, formulas) of
    Megatron-core's distributed optimizer (megatron-core 0.16 ``optimizer/distrib_optimizer.py``,
    ``optimizer/cpu_offloading/hybrid_optimizer.py``; verl 0.9.1 ``utils/megatron/optimizer.py``).

    - default: fp32 main-param shard (4 B, created when the optimizer is built) + Adam moments (8 B, lazily);
    - ``use_precision_aware_optimizer`` without CPU offload: TE FusedAdam keeps the master as int16 remainders
      beside the bf16 param (``store_param_remainders``, 2 B) and the moments in ``exp_avg*_dtype``, both
      created at its first step (*probable*: TE ``FusedAdam.initialize_state`` on an empty state);
    - ``optimizer_cpu_offload`` (HybridDeviceOptimizer, ``param_update_in_fp32=True``): the first
      ``optimizer_offload_fraction`` of the parameters (by count) get a pinned fp32 CPU copy, a pinned CPU grad
      copy and CPU Adam moments (16 B on the host); the rest are cloned to fp32 on the GPU with GPU moments
      (12 B). Without the precision-aware optimizer the distributed optimizer's own fp32 shards (4 B) stay on
      the GPU for every parameter (``model_param.main_param``), the offloaded part included.
    Left out: the grad-norm and clip temporaries, TE FusedAdam's fp8 paths."""
    moments = optimizer_bytes_per_param(optimizer, 4)
    if m.use_precision_aware_optimizer and not m.optimizer_cpu_offload and moments:
        moments = float(dtype_bytes(m.exp_avg_dtype) + dtype_bytes(m.exp_avg_sq_dtype))
    if not m.optimizer_cpu_offload:
        master = 2 if m.use_precision_aware_optimizer else 4
        kind = "int16 master remainders (precision-aware)" if master == 2 else "fp32 master"
        # TE FusedAdam creates its master remainders with the moments at the first step; the distributed
        # optimizer's fp32 shards exist from construction.
        init = 0 if m.use_precision_aware_optimizer else master
        return master + moments, init, 0.0, f"distributed optimizer {kind} + Adam ({master + moments:g} B)", ""
    f = m.optimizer_offload_fraction
    keep = 1 - f
    dist_master = 0 if m.use_precision_aware_optimizer else 4
    gpu = dist_master + keep * (4 * (dist_master == 0) + moments)
    init = dist_master + keep * 4 * (dist_master == 0)
    host = f * (4 + moments + 4)
    text = (
        f"CPU optimizer (offload fraction {f:g}): GPU keeps "
        + ("fp32 main shards 4 B + " if dist_master else "")
        + f"{keep:g} x ({'fp32 clone 4 B + ' if not dist_master else ''}Adam {moments:g} B) = {gpu:g} B"
    )
    host_text = f"CPU optimizer: {f:g} x (pinned fp32 master 4 B + Adam {moments:g} B + pinned grad 4 B)"
    return gpu, init, host, text, host_text
