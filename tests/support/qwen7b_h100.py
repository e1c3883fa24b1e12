"""The reference scenario's facts for the hand-checked timing tests: Qwen2.5-7B (presets/models/qwen2.5-7b.yaml)
on H100s (presets/gpus/h100-80gb.yaml) with the EfficiencyConfig defaults (calculator/inputs/constants.py)."""

from __future__ import annotations

from calculator import load_scenario
from calculator.report.estimate import build_context
from calculator.timing.step import phase_times

P7 = 7_615_616_512  # Qwen2.5-7B total params
V, H, LAYERS, HEADS, KV_HEADS, HEAD_DIM = 152_064, 3584, 28, 28, 4, 128
N_MM = P7 - V * H  # matmul weights per token: all but the input embedding (lm_head is untied)
H100_TFLOPS, H100_HBM, H100_NVLINK_UNI, H100_PCIE5 = 989e12, 3350e9, 450e9, 63e9
EFF_DECODE, EFF_PREFILL, EFF_FWD, EFF_TRAIN, EFF_NVLINK, EFF_PCIE, EFF_NET = 0.7, 0.5, 0.35, 0.35, 0.75, 0.8, 0.7
M_HALF = 128  # efficiency.gemm_half_saturation_tokens
HOST_TRAIN_S, HOST_EAGER_S = 500e-6, 400e-6  # train_host_us_per_layer_pass, eager_decode_host_us_per_layer
ROOT_UNIT = 2 * V * H + H  # Qwen2.5-7B outside the layers: embedding + untied lm_head + final norm
EDGE = (ROOT_UNIT + (P7 - ROOT_UNIT) / LAYERS) / P7  # FSDP pipeline fill: root unit + one decoder layer


def gemm_eff(tokens):
    return tokens / (tokens + M_HALF)


BASE = "qwen2.5-7b-grpo-8xh100"


def times(overrides=None):
    s = load_scenario(BASE, overrides=overrides or {})
    return s, phase_times(build_context(s))
