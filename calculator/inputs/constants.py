"""Named engine constants and efficiencies: every fudge factor lives here, with its source.

They are fields of the scenario (``overheads.*`` and ``efficiency.*``) so that a user who has
measured their own cluster can override them; the defaults are the cited values below. Nothing
else in the calculator may hide a constant of this kind.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from calculator.inputs.numbers import NoBoolNumbers


class OverheadConfig(NoBoolNumbers):
    """Memory that no tensor formula covers: contexts, communication buffers, engine reserves."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    cuda_context_gib: float = Field(
        default=0.5,
        ge=0,
        le=8,
        description="CUDA context per process per GPU. ~0.5 GiB with CUDA lazy module loading (CUDA >= 11.7, "
        "default since 12.2); 1343 MiB was measured on a V100 with eager loading (HF perf_train_gpu_one). "
        "Every GPU runs two processes in verl 0.9 (trainer worker + rollout server).",
    )
    trainer_nccl_gib: float = Field(
        default=0.5,
        ge=0,
        le=16,
        description="NCCL communicator buffers of the trainer's process groups (outside torch's allocator): "
        "NCCL_BUFFSIZE 4 MiB per channel and peer over the rings/trees of the FSDP group.",
    )
    fragmentation_fraction: float = Field(
        default=0.10,
        ge=0,
        le=1,
        description="Caching-allocator reserve on top of the trainer's transient tensors (reserved - allocated), "
        "as a fraction of them. PyTorch rounds large blocks to 2 MiB segments and splits cached blocks; "
        "reserved/allocated of 1.05-1.2 is typical in training logs (perf/max_memory_reserved_gb vs allocated). "
        "Applies where the allocator uses fixed segments: verl 0.5, the weight sync of every release, Ascend; verl "
        ">= 0.6 runs the trainer's passes with expandable segments, whose free pages are reused (no term there).",
    )
    vllm_non_torch_gib: float = Field(
        default=0.25,
        ge=0,
        le=32,
        description="vLLM non-torch growth during profiling (cuBLAS / attention workspaces), inside the budget. "
        "vLLM >= 0.7 takes its baseline after NCCL init, so 0.15-0.35 GiB is logged at TP1 "
        "(vLLM issues #17117, #14452, #10517); older logs showing 1.8 GiB (TP1) / 3.6 GiB (TP2) included NCCL.",
    )
    vllm_tp_comm_gib: float = Field(
        default=0.5,
        ge=0,
        le=32,
        description="Rollout-side NCCL communicator and custom all-reduce buffers when TP > 1, created before "
        "vLLM's profiler baseline and so OUTSIDE gpu_memory_utilization (vLLM issue #12059). Estimated from "
        "NCCL_BUFFSIZE (4 MiB) x channels x peers; older vLLM logs attributed ~1.8 GiB per TP doubling.",
    )
    vllm_cuda_graph_per_graph_mib: float = Field(
        default=4.0,
        ge=1,
        le=1024,
        description="Cost of each additional captured CUDA graph (vLLM profile_cudagraph_memory extrapolates "
        "per-graph memory, at least 1 MiB). With verl's FULL_AND_PIECEWISE and 51 sizes this gives "
        "~0.4 GiB plus the largest capture's buffers; logs show 0.3-1.4 GiB actual.",
    )
    host_process_gib: float = Field(
        default=4.0,
        ge=0,
        le=256,
        description="Host RAM (RSS) of each GPU process outside its offloaded tensors: torch, CUDA runtime, "
        "transformers / vLLM imported, Ray worker runtime. An ASSUMPTION (typical RSS of a CUDA PyTorch worker "
        "is a few GiB); measure with `ps -o rss` on a running worker and set it.",
    )
    host_node_baseline_gib: float = Field(
        default=32.0,
        ge=0,
        le=4096,
        description="Host RAM per node outside the GPU processes: OS, raylet / GCS, the driver, dataloader "
        "workers and the batch being assembled. An ASSUMPTION; set it from `free -g` on an idle node plus the "
        "driver's RSS.",
    )
    host_usable_fraction: float = Field(
        default=0.95,
        gt=0,
        le=1,
        description="Share of node RAM usable before Ray's memory monitor kills workers (Ray "
        "memory_usage_threshold, default 0.95: docs.ray.io 'Out-Of-Memory Prevention').",
    )
    sglang_reserved_gib: float = Field(
        default=1.0,
        ge=0,
        le=32,
        description="SGLang memory outside the static pool (activations, CUDA graphs) that must fit in "
        "(1 - mem_fraction_static) of the GPU; used only for a warning.",
    )


class EfficiencyConfig(NoBoolNumbers):
    """Fractions of datasheet peaks that real kernels reach (throughput model)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    train_mfu: float = Field(
        default=0.35,
        gt=0,
        le=1,
        description="Large-work share of peak that forward+backward reaches in update_actor/update_critic (executed "
        "FLOPs, recompute included) ON A GPU WITH H100-SXM'S BALANCE (989 TFLOPS / 3.35 TB/s, ridge 295 FLOP/B). "
        "verl's perf/mfu/actor for 7B-32B dense models on H100 with FSDP is typically 0.3-0.45 (verl perf tuning "
        "docs); Megatron-LM reports 0.4-0.55 for large GPTs (Narayanan et al. 2021). Other GPUs: the part of the "
        "time beyond tensor_core_fraction is memory-bound and scales with the GPU's ridge point "
        "(calculator.timing.flops.achieved_fraction): ~0.67 on H20 (ridge 37), ~0.47 on A100 (ridge 153).",
    )
    forward_mfu: float = Field(
        default=0.35,
        gt=0,
        le=1,
        description="Large-work share of peak of forward-only passes (old/ref log-prob, critic values, reward "
        "model) on an H100-balanced GPU; other GPUs as for train_mfu.",
    )
    tensor_core_fraction: float = Field(
        default=0.77,
        gt=0,
        le=1,
        description="Share of the datasheet bf16 peak that the tensor-core work of a large training step (GEMMs, "
        "flash attention) reaches on its own: the roofline ceiling of train_mfu / forward_mfu on any GPU. "
        "KempnerForge (Kempner Institute, benchmarks/mfu_scaling, 2025): Llama-3 7B on one H200, seq 4096, full "
        "activation checkpointing, 57.8% MFU = 0.77 of peak in executed FLOPs (x 8/6), with no communication. "
        "The rest of a step's time at train_mfu (1/train_mfu - 1/this per FLOP at H100's balance) is taken as "
        "memory-bound (element-wise ops, norms, log-softmax, optimizer): it scales with peak / HBM bandwidth.",
    )
    prefill_mfu: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="MFU of the rollout engine's prefill (large batched GEMMs; vLLM reaches ~50-60%).",
    )
    decode_hbm_efficiency: float = Field(
        default=0.7,
        gt=0,
        le=1,
        description="Share of peak HBM bandwidth that decode steps reach (weights + KV reads); "
        "vLLM/TensorRT-LLM decode benchmarks reach 60-80% of peak.",
    )
    pcie_efficiency: float = Field(
        default=0.8, gt=0, le=1, description="Achieved share of PCIe bandwidth for pinned host<->device copies."
    )
    nvlink_efficiency: float = Field(
        default=0.75, gt=0, le=1, description="Achieved bus bandwidth of NCCL all-gather/reduce-scatter over NVLink."
    )
    network_efficiency: float = Field(
        default=0.7, gt=0, le=1, description="Achieved bus bandwidth of NCCL collectives across nodes (IB/RoCE)."
    )
    tp_allreduce_latency_us: float = Field(
        default=8.0,
        gt=0,
        le=1000,
        description="Fixed cost of one small tensor-parallel all-reduce in a vLLM decode step (custom all-reduce, "
        "one-shot kernel inside a CUDA graph). H100 benchmarks: ~7 us for 0.5 MiB at TP 2 (vLLM PR #24111, "
        "ca_1stage), 8.5-11.8 us for <= 32 KiB at TP 2-8 (SGLang PR #2904, vLLM kernel); decode runs two per layer.",
    )
    gemm_half_saturation_tokens: float = Field(
        default=128.0,
        gt=0,
        le=1e6,
        description="Tokens M per micro-batch per GPU (rows of every weight GEMM: packed tokens after Ulysses SP; "
        "Megatron: the micro-batch over CP) at which the GEMMs reach half their large-M rate. Compute rates are "
        "train_mfu / forward_mfu / prefill_mfu x M / (M + this), so those MFUs stay the large-M asymptote. A GEMM "
        "with M rows reads its K x N weights once for 2·M·K·N FLOPs: below the roofline ridge (peak/HBM, ~300 "
        "FLOP/B on H100) it is bandwidth-bound, and tile/wave quantisation wastes SMs at small M. Fitted to H100 "
        "bf16 torch.matmul at LLM shapes (vLLM PR #49363, N=43008 K=5376: 365 / 593 TFLOPS at M = 128 / 256) "
        "against the large-M ceiling (792 TFLOPS MAMF, stas00/ml-engineering compute/accelerator): M/(M+M_half) = "
        "0.46 / 0.75 gives M_half = 150 / 86; 128 sits between. GPUs with a lower ridge point (A100: ~150) "
        "saturate earlier, so it is conservative there.",
    )
    train_host_us_per_layer_pass: float = Field(
        default=500.0,
        ge=0,
        le=1e6,
        description="ESTIMATE: CPU time (us) the trainer spends issuing one decoder layer's kernels in one pass "
        "(forward, backward and checkpoint recompute count one pass each) of one micro-batch. A HF decoder "
        "layer runs ~40 eager aten ops forward (RMSNorm in Python, rotary, q/k/v/o, flash-attn varlen, MLP, "
        "residuals) at 5-25 us of Python + dispatcher + cudaLaunchKernel each, plus the FSDP unit's pre/post "
        "hooks (pytorch/pytorch #173680 reports ~1 ms per FSDP2 pre_forward in a CPU-bound model). The GPU "
        "runs asynchronously, so a micro-batch costs max(GPU time, this x layers x passes): it shows only when "
        "micro-batches are small. Treat as +-2x; Megatron's fused TE layers issue fewer ops.",
    )
    eager_decode_host_us_per_layer: float = Field(
        default=400.0,
        ge=0,
        le=1e6,
        description="ESTIMATE: CPU time (us) vLLM needs to issue one decoder layer of one decode step without "
        "CUDA graphs (enforce_eager, or batches above the largest captured size). A step then lasts "
        "max(GPU time, this x layers): vLLM syncs on the sampled tokens every step, so the host cannot run "
        "ahead. Derived from published eager-vs-graph decode latencies at batch 1, subtracting the graph-mode "
        "step (GPU + scheduler) from the eager one: Llama-2-7B (32 layers), vLLM V0: 12.0 vs 10.5 ms per token "
        "(vLLM PR #1440) -> ~310 us/layer; Qwen2.5-7B thinker of Qwen2.5-Omni (28 layers), vLLM V1 on A800: "
        "~22 vs ~13 ms (vllm-project/vllm-omni #7960) -> ~650 us/layer. Both report no visible gain at large "
        "batch, where the GPU work covers the launches.",
    )
    decode_step_host_us: float = Field(
        default=300.0,
        ge=0,
        le=1e6,
        description="ESTIMATE: CPU time (us) of one vLLM V1 engine step outside the model forward, at any batch "
        "(scheduler, input preparation, launching the CUDA graph, sampler and output bookkeeping), serial with the "
        "GPU work (verl runs vLLM without async scheduling). Bounded by the batch-1 decode anchors "
        "(tests/reference/test_throughput_reference.py: Llama-3.1-8B, H100 6.48 ms and A100 13.3 ms per token, "
        "which leave well under 1 ms beyond the weight reads). Treat as +-2x.",
    )
    decode_step_host_us_per_seq: float = Field(
        default=10.0,
        ge=0,
        le=1e5,
        description="ESTIMATE: extra CPU time (us) per running sequence in one vLLM V1 engine step (block-table and "
        "position updates, per-request sampling parameters, stop checks and output processing are Python loops over "
        "the batch): ~2.5 ms at batch 256. This is the per-step overhead vLLM's async scheduling exists to hide; "
        "it dominates when a step's GPU work is small (small or MoE models at large batch). Treat as +-2x.",
    )
    tp_allreduce_internode_latency_us: float = Field(
        default=25.0,
        gt=0,
        le=10000,
        description="ESTIMATE: fixed cost of one small all-reduce when the rollout TP group spans nodes (NCCL "
        "over IB/RoCE instead of vLLM's in-node custom all-reduce). NCCL's small-message all-reduce latency across "
        "2 nodes is ~15-30 us on 400G InfiniBand (nccl-tests all_reduce_perf, 8 B - 64 KiB rows), vs ~8 us in a "
        "node. Decode runs two per layer per step.",
    )
    phase_fixed_overhead_s: float = Field(
        default=1.0,
        ge=0,
        le=3600,
        description="ESTIMATE: seconds every phase costs beyond its GPU work and that do not shrink with more GPUs: "
        "the driver's Ray dispatch of the padded DataProto to every worker and the gather of results, worker-side "
        "(un)padding and the switch of the engine's mode (verl single_controller: one blocking remote call per "
        "phase). verl's timing_s/* for tiny models show ~0.5-2 s per phase. Data movement that grows with the "
        "batch is charged separately at driver_bytes_per_s.",
    )
    driver_gb_per_s: float = Field(
        default=1.0,
        gt=0,
        le=1000,
        description="ESTIMATE: rate (GB/s) at which the single driver process serialises, ships and collects a "
        "phase's batch (token ids, masks, positions, log-probs, advantages: ~8 tensors of 4-8 B per token) through "
        "Ray's object store; one process, pickling numpy/torch buffers, ~1 GB/s.",
    )
    weight_sync_us_per_tensor: float = Field(
        default=1000.0,
        ge=0,
        le=1e6,
        description="ESTIMATE: fixed cost (us) per parameter tensor of a weight sync: one full_tensor() gather "
        "(a collective launch), a copy into the IPC bucket, the Python handshake and vLLM's per-tensor weight_loader "
        "(name mapping, expert id lookup, narrow + copy). MoE checkpoints carry one tensor per expert and projection "
        "(Qwen3-30B-A3B 18,867 tensors, DeepSeek-V3 ~45,000; ``timing.step.num_weight_tensors``), so refits of large MoE models take tens of seconds "
        "(NeMo-RL blog 'Journey of Optimizing Weight Transfer in Large MoE Models by 10x', 2025-08-12: refit of "
        "large MoE models was tens of seconds before packing tensors per bucket).",
    )
    engine_wake_sleep_s: float = Field(
        default=2.0,
        ge=0,
        le=3600,
        description="ESTIMATE: seconds per step for the rollout engine to wake up (re-map the weights and "
        "re-allocate the KV cache with cuMemMap, vLLM CuMemAllocator) and go back to sleep after generation "
        "(verl free_cache_engine), beyond copying weights: a few seconds for a full GPU of KV blocks.",
    )
    moe_load_imbalance: float = Field(
        default=1.2,
        ge=1,
        le=10,
        description="ESTIMATE: tokens of the busiest expert-parallel rank over the mean in a dropless MoE layer "
        "(each micro-batch waits for the busiest rank's grouped GEMM and all-to-all). Auxiliary-loss balanced "
        "models run at 1.1-1.5 (Megatron-core MoE docs moe_router_load_balancing_type; DeepSeek-V3 tech report "
        "§2.1.2 aims at balanced experts without dropping tokens).",
    )
    grouped_gemm_half_saturation_rows: float = Field(
        default=256.0,
        gt=0,
        le=1e6,
        description="Rows per expert at which an MoE grouped GEMM reaches half its large-M rate (the dense "
        "gemm_half_saturation_tokens applies the same rule to a full micro-batch): each expert's GEMM sees only "
        "tokens x top-k / experts rows and a narrow intermediate size, and grouped kernels pad every expert to "
        "their tile (64-128 rows). ESTIMATE: twice the dense value, as the expert matrices are 4-8x narrower "
        "(Qwen3-30B-A3B 2048 x 768) and reach the roofline ridge later.",
    )
    cpu_adam_params_per_s: float = Field(
        default=1.0e9,
        gt=0,
        le=1e13,
        description="ESTIMATE: parameters per second that torch's AdamW updates on the host CPUs of one node "
        "(FSDP2 offload_policy runs the optimizer step on CPU tensors). ZeRO-Offload (Ren et al. 2021, "
        "arXiv:2101.06840) measured PyTorch's CPU Adam at roughly a second per billion parameters on a "
        "2-socket Xeon host and its own vectorised CPU-Adam ~6x faster; treat as +-2x and measure your host.",
    )
