"""Step time and decode speed against published figures (issue #5 validation).

Every case lists its settings, its source, the published figure, the model's figure at the time of
writing and a stated tolerance. Constants are the EfficiencyConfig defaults; none was tuned to a case.

Summary (model / published, measured 2026-11-24 after the issue-15 mechanisms; the NeMo RL cases offload the
Megatron policy around generation, as NeMo RL does):
- NeMo RL v0.4 GRPO Llama-3.1-8B, 16 x H100, colocated vLLM: 87.2 s / 97.7 s (0.89; with NeMo RL's full
  activation recompute, modelled through megatron.recompute_granularity)
- NeMo RL v0.4 GRPO Qwen3-30B-A3B (MoE), 32 x H100:           148.5 s / 225 s (0.66): the remaining MoE gap,
  guarded between 0.55x and 0.8x (it was 0.33x before grouped-GEMM rows per expert, all-to-all and load imbalance).
- NeMo RL v0.4 GRPO Qwen3-32B, 32 x H100:                     337 s / 393 s  (0.86)
- vLLM decode, batch 1, Llama-3.1-8B, H100: 7.17 ms / 6.48 ms per token (1.11)
- vLLM decode, batch 1, Llama-3.1-8B, A100-40GB: 15.2 ms / 13.3 ms per token (1.14)
- NeMo RL v0.4 GRPO Qwen3-235B-A22B, 128 x H100, vLLM TP 16:  262 s / 506 s (0.52) } strict xfails: the large-MoE
- NeMo RL v0.4 GRPO DeepSeek-V3, 256 x H100, vLLM TP 32:       86.3 s / 154 s (0.56) } gap (LARGE_MOE_GAP)
- verl docs/perf/dpsk.md, GRPO DeepSeek-V3, 96 x H20, vLLM TP 32 eager (verl's own run, mean response 1,960):
  rollout 763 s / 1,050 s (0.73), step 1,233 s / 1,700 s (0.73). The mean prompt is not published: 256 tokens is
  ASSUMED for DAPO-Math-17k, as in test_timing_dapo_reference (with the 2,048-token maximum as the mean the model
  gives 1,025 s / 1,557 s: the eager engine's per-step host launch, ~0.06 s x every decode step, dominates and the
  step count falls with the KV room the prompts leave). Within the band; low like the NeMo RL large-MoE rows.
- verl docs/perf/dpsk.md, Qwen3-30B-A3B table: the update's MFU (verl's perf/mfu/actor) on 8 / 16 / 32 H20 with
  Megatron TP 1 EP 8 and the CPU optimizer: 0.40 / 0.37 / 0.31 published. The model's MFU is converted to verl's
  0.5-era FLOP counter (``verl_counting``: the embedding counted as a matmul, attention as 12 x Σ L², non-causal;
  x 1.33 here) before comparing. Modelled 0.565 / 0.547 / 0.519 (1.41x / 1.48x / 1.67x), all three strict xfails
  (MOE_TRAIN_GAP); before the expert-data-parallel optimizer shard (branch moetime) 0.655 / 0.632 / 0.598.
- the same doc's DeepSeek-V3 96 x H20 row: update MFU 0.19 published, 0.111 modelled in verl's counting (0.58x,
  strict xfail DSV3_UPDATE_GAP): the model's update is SLOWER than verl's there (its CPU optimizer step, 210 s of
  350 s on the pipeline rank with the most parameters, dominates), so the MoE training gap is not one global rate.

NeMo RL is not verl: it trains with Megatron-core and generates with vLLM colocated on the same
GPUs, one synchronous step after another, which is the mechanism rlplan models. Its batch
(``num_prompts_per_step`` x ``num_generations_per_prompt`` sequences generated, trained in
``train_global_batch_size`` chunks) maps onto verl's ``train_batch_size`` x ``rollout.n`` and
``ppo_mini_batch_size``; sequence packing with ``train_mb_tokens = 4096`` maps onto a dynamic batch
with a 4096-token budget. Prompt lengths are not published: a mean of 160 tokens (OpenMathInstruct-2
problems in the CoT template) is assumed; the published "G-Average Seq len" fixes prompt + response.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from calculator import estimate, load_scenario
from calculator.report.estimate import build_context
from calculator.timing.flops import NO_RECOMPUTE, train_flops_per_token, verl_counted_flops_per_token
from calculator.timing.rollout import decode_step_seconds, length_distribution
from tests.reference.test_memory_fidelity_reference import _dsv3_96_h20

NEMO_RL_TABLE = "https://github.com/NVIDIA-NeMo/RL/blob/main/docs/about/performance-summary.md (Nemo RL v0.4)"
NEMO_RL_RECIPES = "https://github.com/NVIDIA-NeMo/RL/tree/main/examples/configs/recipes/llm/performance"
STEP_TOLERANCE = 0.40  # +-40% on step time: different framework, prompt lengths assumed
DECODE_TOLERANCE = 0.25  # +-25% on one decode step

MEAN_PROMPT = 160
NEMO_GRPO = {
    # grpo_math_1B.yaml defaults + the performance recipes: 64 prompts x 32 generations, train GBS 512
    # sequences (= 16 prompts per optimizer step), KL to the reference policy (penalty 0.01), vLLM util 0.6,
    # max_total_sequence_length 4096 (prompt + response), sequence packing.
    "algorithm.adv_estimator": "grpo",
    "actor.use_kl_loss": True,
    "rollout.n": 32,
    "data.train_batch_size": 64,
    "actor.ppo_mini_batch_size": 16,
    "rollout.gpu_memory_utilization": 0.6,
    "data.max_prompt_length": 256,
    "data.max_response_length": 3840,
    "data.mean_prompt_length": MEAN_PROMPT,
    "actor.use_dynamic_bsz": True,
    "actor.ppo_max_token_len_per_gpu": 4096,
    "actor.strategy": "megatron",
    # Colocated NeMo RL moves the Megatron policy's weights and optimizer to the host around generation
    # (nemo_rl/algorithms/grpo.py refit_policy_generation: policy.offload_before_refit / offload_after_refit),
    # which verl spells param_offload + optimizer_offload: without it the fp32 optimizer shards and grad buffer
    # stay resident when vLLM starts (calculator/memory/training.py) and the engine could not start.
    "actor.megatron.param_offload": True,
    "actor.megatron.optimizer_offload": True,
    "hardware.gpu": "h100-80gb",
}


LLAMA8B = (
    "llama3.1-8b",
    16,
    1060,
    {
        "rollout.tensor_model_parallel_size": 1,
        "actor.megatron.pipeline_model_parallel_size": 2,
        "actor.megatron.recompute_granularity": "full",
        "actor.megatron.recompute_method": "uniform",
        "actor.megatron.recompute_num_layers": 1,
        "rollout.log_prob_max_token_len_per_gpu": 8192,
        "ref.log_prob_max_token_len_per_gpu": 8192,
    },
)
QWEN32B = (
    "qwen3-32b",
    32,
    3206,
    {
        "rollout.tensor_model_parallel_size": 4,
        "actor.megatron.tensor_model_parallel_size": 4,
        "actor.megatron.pipeline_model_parallel_size": 4,
        "model.enable_gradient_checkpointing": False,
        "rollout.log_prob_max_token_len_per_gpu": 16384,
        "ref.log_prob_max_token_len_per_gpu": 16384,
    },
)
QWEN30B_A3B = (
    "qwen3-30b-a3b",
    32,
    3154,
    {
        "rollout.tensor_model_parallel_size": 4,
        "actor.megatron.tensor_model_parallel_size": 2,
        "actor.megatron.expert_model_parallel_size": 8,
        "model.enable_gradient_checkpointing": False,
        "rollout.log_prob_max_token_len_per_gpu": 16384,
        "ref.log_prob_max_token_len_per_gpu": 16384,
    },
)


# The two large-MoE rows of the same table (on-policy, DGX-H100). NeMo RL's ``max_total_sequence_length`` bounds
# prompt + response; it is also the packing budget (train_micro_batch_size 1) and vLLM's max_model_len.
# ``activation_checkpointing: true`` is recompute full / uniform / 1 layer, as for LLAMA8B. Megatron-Bridge's
# Qwen3-MoE and DeepSeek-V3 recipes set expert_tensor_parallel_size 1 (the expert group is EP x PP x DP, not
# ETP = TP x EP x PP, which would exceed 128 GPUs for the 235B row).
def _large_moe(max_total: int, prompts: int, generations: int) -> dict:
    return {
        "rollout.n": generations,
        "data.train_batch_size": prompts,
        "data.max_response_length": max_total - 256,
        "rollout.max_model_len": max_total,
        "actor.ppo_max_token_len_per_gpu": max_total,
        "rollout.log_prob_max_token_len_per_gpu": max_total,
        "ref.log_prob_max_token_len_per_gpu": max_total,
        "actor.megatron.expert_tensor_parallel_size": 1,
        "actor.megatron.recompute_granularity": "full",
        "actor.megatron.recompute_method": "uniform",
        "actor.megatron.recompute_num_layers": 1,
    }


QWEN235B = (  # recipe grpo-qwen3-235b-16n8g.yaml: 16 prompts x 32 generations
    "qwen3-235b-a22b",
    128,
    5671,
    {
        **_large_moe(8192, 16, 32),
        "rollout.tensor_model_parallel_size": 16,
        "actor.megatron.tensor_model_parallel_size": 2,
        "actor.megatron.sequence_parallel": True,
        "actor.megatron.context_parallel_size": 2,
        "actor.megatron.expert_model_parallel_size": 16,
        "actor.megatron.pipeline_model_parallel_size": 8,
        "actor.megatron.num_layers_in_first_pipeline_stage": 11,  # the recipe's: 94 layers as 11 + 6 x 12 + 11
        "actor.megatron.num_layers_in_last_pipeline_stage": 11,
    },
)
DEEPSEEK_V3 = (  # recipe grpo-deepseek-v3-32n8g.yaml: 32 prompts x 16 generations
    "deepseek-v3",
    256,
    745,
    {
        **_large_moe(1536, 32, 16),
        "rollout.tensor_model_parallel_size": 32,
        "actor.megatron.expert_model_parallel_size": 16,
        "actor.megatron.pipeline_model_parallel_size": 16,
        "actor.megatron.num_layers_in_first_pipeline_stage": 3,  # the recipe's: 61 layers as 3 + 14 x 4 + 2
        "actor.megatron.num_layers_in_last_pipeline_stage": 2,
    },
)
LARGE_MOE_GAP = (
    "Large MoE runs are predicted at about half their published step (Qwen3-235B 262 s / 506 s = 0.52x, DeepSeek-V3 86.3 s / 154 s = 0.56x, "
    "2026-11-24), below the +-40% band; the published table gives only the step, so which phase misses is not "
    "known (candidates: MoE decode kernels below the HBM roofline, NCCL all-reduce latency of a TP group spanning "
    "2-4 nodes, the refit; not a too-fast training phase: on NVIDIA's large-MoE pretraining rows the model trains "
    "SLOWER than published, test_moe_training_reference). Recorded, not tuned away."
)


def _nemo_report(case):
    model, num_gpus, avg_seq_len, extra = case
    ov = {
        **NEMO_GRPO,
        "model.path": model,
        "hardware.num_gpus": num_gpus,
        "data.mean_response_length": avg_seq_len - MEAN_PROMPT,
        **extra,
    }
    r = estimate(load_scenario(None, overrides=ov))
    assert r.time is not None
    return r.time.step_s, r.time.terms_s


VERL_DPSK = "verl docs/perf/dpsk.md 'Training DeepSeek 671b' benchmark table (last updated 08/20/2025)"
DAPO_MEAN_PROMPT = 256  # ASSUMED for DAPO-Math-17k (not published), as in test_timing_dapo_reference


def _verl_dsv3_96_h20(phase: str | None) -> Callable[[], tuple[float, dict]]:
    """verl's DeepSeek-V3 run on 96 H20 with the settings of the doc's 96-GPU row (the scenario of
    test_memory_fidelity_reference, which checks its 66 GB peak) and the published mean response of 1,960 tokens:
    the step (``phase`` None) or one phase."""

    def run() -> tuple[float, dict]:
        s = _dsv3_96_h20()
        s = s.model_copy(update={"data": s.data.model_copy(update={"mean_prompt_length": DAPO_MEAN_PROMPT})})
        t = estimate(s).time
        assert t is not None and t.step_s is not None
        value = t.step_s if phase is None else t.phases_s[phase]
        assert value is not None
        return value, t.terms_s

    return run


def _verl_dsv3_96_h20_mfu() -> tuple[float, dict]:
    """The update's MFU of verl's DeepSeek-V3 96 x H20 run (the doc's MFU column, 0.19), in verl 0.5's counting."""
    s = _dsv3_96_h20()
    s = s.model_copy(update={"data": s.data.model_copy(update={"mean_prompt_length": DAPO_MEAN_PROMPT})})
    t = estimate(s).time
    assert t is not None
    return t.update_mfu * verl_counting(s), t.terms_s


MOE_TRAIN_GAP = (
    "verl's Qwen3-30B-A3B update on H20 (docs/perf/dpsk.md: MFU 0.40 / 0.37 / 0.31 on 8 / 16 / 32 GPUs, verl 0.5's "
    "FLOP counter) is modelled at 0.565 / 0.547 / 0.519 in the same counting (2026-11-24, after the expert-DP "
    "optimizer shard): 1.41x / 1.48x / 1.67x. The rest of the measured update time fits ~80 s that do not shrink "
    "with the GPUs + ~30% of the per-GPU compute; no public breakdown separates them (candidates: grouped-GEMM and "
    "permutation kernels, DeepEP all-to-all not hidden, expert load imbalance above 1.2, CPU Adam below 1e9 "
    "params/s per node). Recorded, not tuned away."
)
DSV3_UPDATE_GAP = (
    "verl's DeepSeek-V3 update on 96 H20 (docs/perf/dpsk.md MFU 0.19, verl 0.5's counter) is modelled at 0.111 in "
    "the same counting (0.58x, 2026-11-25): here the model's update is too SLOW, its CPU optimizer step "
    "(cpu_adam_params_per_s, an ESTIMATE) being 210 s of 350 s. That step is of the pipeline rank with the most "
    "parameters (the last, 1.25x the mean share; 168 s and 0.127 with the mean share), which paces every rank's "
    "optimizer step. Recorded, not tuned away."
)


def _verl_qwen3_30b_h20(num_gpus: int) -> Callable[[], tuple[float, dict]]:
    """verl's examples/grpo_trainer/run_qwen3moe-30b_megatron_96gb.sh (volcengine/verl b178a3cd5) with the doc's
    settings for 8 / 16 / 32 H20 (TP 1, EP 8, OFFLOAD_FRACTION 1, OFFLOAD_OPTIM True): the update's MFU as verl
    0.5 prints it (``verl_counting``: verl's counted FLOPs over the update's seconds x 148 TFLOPS x GPUs). Mean
    prompt 256 and response 2,000 tokens are ASSUMED; they set the attention share of verl's count (x 1.33 over
    rlplan's model FLOPs at these lengths)."""

    def run() -> tuple[float, dict]:
        ov = {
            "model.path": "qwen3-30b-a3b",
            "hardware.gpu": "h20-96gb",
            "hardware.num_gpus": num_gpus,
            "algorithm.adv_estimator": "grpo",
            "data.train_batch_size": 512,
            "rollout.n": 16,
            "data.max_prompt_length": 2048,
            "data.max_response_length": 8192,
            "data.mean_prompt_length": DAPO_MEAN_PROMPT,
            "data.mean_response_length": 2000,
            "actor.strategy": "megatron",
            "actor.ppo_mini_batch_size": 128,
            "actor.use_dynamic_bsz": True,
            "actor.ppo_max_token_len_per_gpu": 10240,
            "actor.use_kl_loss": False,
            "actor.megatron.expert_model_parallel_size": 8,
            "actor.megatron.param_offload": True,
            "actor.megatron.optimizer_offload": True,
            "actor.megatron.optimizer_cpu_offload": True,
            "actor.megatron.optimizer_offload_fraction": 1.0,
            "actor.megatron.use_precision_aware_optimizer": True,
            "actor.megatron.overlap_cpu_optimizer_d2h_h2d": True,
            "rollout.tensor_model_parallel_size": 4,
            "rollout.gpu_memory_utilization": 0.7,
            "rollout.enforce_eager": True,
            "rollout.log_prob_max_token_len_per_gpu": 10240,
        }
        s = load_scenario(None, overrides=ov)
        t = estimate(s).time
        assert t is not None
        return t.update_mfu * verl_counting(s), t.terms_s

    return run


VERL_05_ATTENTION_COEFFICIENT = 12  # verl 0.5.0 - 0.7.x flops_counter: 12 x Σ L² (0.9.1: 6)


def verl_counting(s) -> float:
    """verl's counted FLOPs per trained token (0.5-era ``FlopsCounter``, ``verl_counted_flops_per_token``) over
    rlplan's model FLOPs: turns ``update_mfu`` into the MFU verl's ``perf/mfu/actor`` would print for the same
    seconds. Σ L² / Σ L from the mean prompt (taken as fixed) and the response-length distribution rlplan assumes
    (clipped log-normal at the mean response): E[L²] = p² + 2 p m + m² (1 + cv²)."""
    ctx = build_context(s)
    dist = length_distribution(s, float(ctx.r.lengths.response))
    p, m = float(ctx.r.lengths.prompt), dist.mean
    mean_sq = p * p + 2 * p * m + m * m * (1 + dist.cv() ** 2)
    _, model = train_flops_per_token(s, ctx.actor, float(ctx.r.trained_seq_len), recompute=NO_RECOMPUTE)
    verl = verl_counted_flops_per_token(
        ctx.actor.arch, p + m, mean_sq, attention_coefficient=VERL_05_ATTENTION_COEFFICIENT
    )
    return verl / model


MFU_TOLERANCE = 0.25  # +-25% on the update's MFU (as test_timing_dapo_reference's balance check)


def _decode_case(gpu: str, context: int):
    def run():
        s, ctx = _llama8b_single_gpu(gpu)
        return decode_step_seconds(ctx, 1, context), {}

    return run


@dataclass(frozen=True)
class PublicCase:
    """One published figure: ``predict()`` returns (model figure, its terms by phase)."""

    id: str
    measured: float
    tolerance: float  # relative, both ways
    predict: Callable[[], tuple[float, dict]]
    source: str
    known_gap: bool = False  # outside its tolerance, recorded as a strict xfail (``_gap_reason``)


PUBLIC_CASES = [
    PublicCase("nemo-llama3.1-8b-16xh100", 97.7, STEP_TOLERANCE, lambda: _nemo_report(LLAMA8B), NEMO_RL_TABLE),
    PublicCase("nemo-qwen3-32b-32xh100", 393.0, STEP_TOLERANCE, lambda: _nemo_report(QWEN32B), NEMO_RL_TABLE),
    PublicCase("nemo-qwen3-30b-a3b-32xh100", 225.0, STEP_TOLERANCE, lambda: _nemo_report(QWEN30B_A3B), NEMO_RL_TABLE),
    PublicCase(
        "nemo-qwen3-235b-a22b-128xh100", 506.0, STEP_TOLERANCE, lambda: _nemo_report(QWEN235B), NEMO_RL_TABLE, True
    ),
    PublicCase(
        "nemo-deepseek-v3-256xh100", 154.0, STEP_TOLERANCE, lambda: _nemo_report(DEEPSEEK_V3), NEMO_RL_TABLE, True
    ),
    PublicCase("verl-dsv3-96xh20-rollout", 1050.0, STEP_TOLERANCE, _verl_dsv3_96_h20("rollout"), VERL_DPSK),
    PublicCase("verl-dsv3-96xh20-step", 1700.0, STEP_TOLERANCE, _verl_dsv3_96_h20(None), VERL_DPSK),
    *(
        PublicCase(f"verl-qwen3-30b-a3b-{n}xh20-mfu", mfu, MFU_TOLERANCE, _verl_qwen3_30b_h20(n), VERL_DPSK, True)
        for n, mfu in ((8, 0.40), (16, 0.37), (32, 0.31))
    ),
    PublicCase("verl-dsv3-96xh20-mfu", 0.19, MFU_TOLERANCE, _verl_dsv3_96_h20_mfu, VERL_DPSK, True),
    PublicCase(
        "vllm-decode-llama3.1-8b-h100-b1",
        6.48e-3,
        DECODE_TOLERANCE,
        _decode_case("h100-80gb", 256),
        "https://yobitelcomm.github.io/bench/recipes/concurrency-sweep/",
    ),
    PublicCase(
        "vllm-decode-llama3.1-8b-a100-b1",
        1 / 75,
        DECODE_TOLERANCE,
        _decode_case("a100-40gb", 1024 + 64),
        "https://johnmusgrave.com/p/vllm-throughput-latency-sweep-on",
    ),
]


def nemo_case(model: str, num_gpus: int, avg_seq_len: int, extra: dict) -> float:
    return _nemo_report((model, num_gpus, avg_seq_len, extra))[0]


def test_nemo_rl_llama31_8b_16xh100():
    """NeMo RL v0.4, GRPO on OpenMathInstruct-2, DGX-H100, on-policy: LLAMA3.1_8B, 16 GPUs, T-max 4096,
    G-average sequence 1,060 tokens, G-GBS 2,048, T-GBS 512, generation TP 1, Megatron training PP 2 with
    activation checkpointing (recipe grpo-llama3.1-8b-instruct-2n8g.yaml), logprob micro-batch 2 x 4096.
    NeMo RL turns ``activation_checkpointing`` into Megatron-core recompute_granularity full, method uniform,
    1 layer per group (nemo_rl/models/policy/workers/megatron_policy_worker.py, _apply_performance_config),
    which verl spells actor.megatron.override_transformer_config.recompute_*.
    Published: 97.7 s per step (1,562 tokens/s/GPU). Model: 86.0 s."""
    step = nemo_case(*LLAMA8B)
    assert step == pytest.approx(97.7, rel=STEP_TOLERANCE), f"{NEMO_RL_TABLE}: model {step:.1f} s"


def test_nemo_rl_qwen3_32b_32xh100():
    """NeMo RL v0.4, same GRPO setup: Qwen3-32B, 32 GPUs (4 nodes), G-average sequence 3,206 tokens, generation
    TP 4, Megatron TP 4 PP 4 with sequence parallel, no activation checkpointing (recipe grpo-qwen3-32b-4n8g.yaml),
    logprob micro-batch 4 x 4096. Published: 393 s per step (540 tokens/s/GPU). Model: 336 s."""
    step = nemo_case(*QWEN32B)
    assert step == pytest.approx(393, rel=STEP_TOLERANCE), f"{NEMO_RL_TABLE}: model {step:.1f} s"


def test_nemo_rl_qwen3_30b_a3b_32xh100():
    """NeMo RL v0.4, same GRPO setup: Qwen3-30B-A3B, 32 GPUs, G-average sequence 3,154 tokens, generation TP 4,
    Megatron TP 2 EP 8, token-dropless MoE. Published: 225 s per step (925 tokens/s/GPU). Model: 148.5 s."""
    step = nemo_case(*QWEN30B_A3B)
    assert step == pytest.approx(225, rel=STEP_TOLERANCE), f"{NEMO_RL_TABLE}: model {step:.1f} s"


@pytest.mark.parametrize(("case", "published"), [(QWEN235B, 506.0), (DEEPSEEK_V3, 154.0)], ids=["qwen3-235b", "dsv3"])
def test_large_moe_runs_fit_and_gap_stays_documented(case, published):
    """The two large-MoE rows (LARGE_MOE_GAP): the published configuration fits and its engine starts in the
    model (NeMo RL ran it), and the predicted step stays between 0.4x and 0.7x of published, so a change in the
    model shows up here instead of silently."""
    model, num_gpus, avg_seq_len, extra = case
    ov = {**NEMO_GRPO, "model.path": model, "hardware.num_gpus": num_gpus, **extra}
    ov["data.mean_response_length"] = avg_seq_len - MEAN_PROMPT
    r = estimate(load_scenario(None, overrides=ov))
    assert r.peak.fits and r.rollout.starts, r.peak.reasons
    assert r.time is not None and r.time.step_s is not None
    assert published * 0.4 < r.time.step_s < published * 0.7


def test_nemo_rl_moe_gap_stays_documented():
    """Guard for the remaining gap: the MoE case stays between 0.55x and 0.8x of published (it was 0.33x before
    issue 15's all-to-all over the NIC, load imbalance, per-tensor refit and engine CPU time), so a change in the
    model shows up here instead of silently."""
    step = nemo_case(*QWEN30B_A3B)
    assert 225 * 0.55 < step < 225 * 0.8


def _llama8b_single_gpu(gpu: str):
    s = load_scenario(
        None,
        overrides={
            "model.path": "llama3.1-8b",
            "hardware.gpu": gpu,
            "hardware.num_gpus": 1,
            "rollout.tensor_model_parallel_size": 1,
            "actor.ppo_micro_batch_size_per_gpu": 1,
        },
    )
    return s, build_context(s)


def test_vllm_decode_llama31_8b_h100_batch1():
    """Llama-3.1-8B-Instruct, vLLM 0.21, fp16, one H100-80GB, TP 1, concurrency 1 ("chatbot-short" prompts,
    context taken as 256 tokens): TPOT p50 6.48 ms.
    Source: https://yobitelcomm.github.io/bench/recipes/concurrency-sweep/ . Model: 7.17 ms."""
    s, ctx = _llama8b_single_gpu("h100-80gb")
    assert decode_step_seconds(ctx, 1, 256) == pytest.approx(6.48e-3, rel=DECODE_TOLERANCE)


def test_vllm_decode_llama31_8b_a100_40gb_batch1():
    """Llama-3.1-8B-Instruct BF16, vLLM 0.23, one A100 40GB, concurrency 1, 1024 input / 128 output tokens:
    "decode at one request per time runs at about 75 tokens/sec, roughly 77% of the GPU's memory-bandwidth
    ceiling" = 13.3 ms per token. Source: https://johnmusgrave.com/p/vllm-throughput-latency-sweep-on .
    Model: 15.2 ms (decode_hbm_efficiency 0.7 vs the 0.77 measured there)."""
    s, ctx = _llama8b_single_gpu("a100-40gb")
    assert decode_step_seconds(ctx, 1, 1024 + 64) == pytest.approx(1 / 75, rel=DECODE_TOLERANCE)


def _gap_reason(case: PublicCase) -> str:
    if case.id == "verl-dsv3-96xh20-mfu":
        return DSV3_UPDATE_GAP
    return MOE_TRAIN_GAP if case.id.endswith("-mfu") else LARGE_MOE_GAP


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=_gap_reason(c))) if c.known_gap else c
        for c in PUBLIC_CASES
    ],
    ids=lambda c: c.id,
)
def test_public_case_within_tolerance_table(case, capsys):
    """Every public case of the table (also printed by ``python -m benchmarks.bench_time_fidelity``) within its
    stated tolerance, except the MoE step documented as a known gap above."""
    value, _ = case.predict()
    ratio = value / case.measured
    print(f"{case.id}: predicted {value:.4g} / measured {case.measured:.4g} = {ratio:.2f}")
    assert ratio == pytest.approx(1.0, rel=case.tolerance), case.source
