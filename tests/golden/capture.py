"""Capture what the CLI and the Python API print for every scenario preset (the golden contract).

    python -m tests.golden.capture --write   # only after an intended, reviewed change of output

The golden test (tests/test_golden.py) compares today's output with tests/golden/outputs.json byte for byte:
a refactor must not change a single character of the JSON report, the CLI text, the export or the plan.
``elapsed_s`` (wall time) is the only field dropped.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

from calculator import estimate, load_scenario
from calculator.cli.main import main
from calculator.inputs.presets import scenario_presets

GOLDEN = Path(__file__).with_name("outputs.json")
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("estimate",),
    ("estimate", "--json"),
    ("export", "--format", "command"),
    ("export", "--format", "overrides"),
    ("export", "--format", "yaml"),
    ("advise", "--json"),
    ("plan", "--json", "--gpus", "h100-80gb,a100-40gb", "--max-gpus", "32"),
)


def _drop_elapsed(text: str) -> str:
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if isinstance(data, dict):
        data.pop("elapsed_s", None)
    return json.dumps(data, indent=2)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, _drop_elapsed(out.getvalue()), err.getvalue()


def capture_preset(preset: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for cmd in COMMANDS:
        code, out, err = run_cli([cmd[0], preset, *cmd[1:]])
        result[" ".join(cmd)] = {"code": code, "stdout": out, "stderr": err}
    report = estimate(load_scenario(preset))
    result["api.estimate"] = json.dumps(report.model_dump(mode="json"), indent=2)
    return result


# Variants of the reference presets that walk the other resolution paths (backends, offload, engines, versions).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "megatron-tp2-pp2": (
        "qwen2.5-7b-ppo-8xh100",
        {
            "actor.strategy": "megatron",
            "actor.megatron.tensor_model_parallel_size": 2,
            "actor.megatron.pipeline_model_parallel_size": 2,
            "actor.megatron.recompute_granularity": "full",
            "actor.megatron.recompute_method": "uniform",
            "actor.megatron.recompute_num_layers": 2,
        },
    ),
    "megatron-moe-ep": (
        "qwen3-30b-a3b-grpo-16xh100",
        {
            "actor.strategy": "megatron",
            "actor.megatron.expert_model_parallel_size": 8,
            "actor.megatron.param_offload": True,
            "actor.use_kl_loss": True,
        },
    ),
    "fsdp2-offload-policy-dynbsz": (
        "qwen2.5-7b-grpo-8xh100",
        {
            "actor.strategy": "fsdp2",
            "actor.fsdp_config.offload_policy": True,
            "actor.use_dynamic_bsz": True,
            "actor.ppo_max_token_len_per_gpu": 12000,
            "actor.use_kl_loss": True,
            "actor.entropy_coeff": 0.01,
        },
    ),
    "fsdp-offload-sglang": (
        "qwen2.5-7b-grpo-8xh100",
        {
            "rollout.name": "sglang",
            "actor.fsdp_config.param_offload": True,
            "actor.fsdp_config.optimizer_offload": True,
            "rollout.temperature": 0.7,
        },
    ),
    "lora-fused-eager": (
        "qwen2.5-7b-grpo-8xh100",
        {
            "model.lora_rank": 64,
            "model.use_fused_kernels": True,
            "rollout.enforce_eager": True,
            "actor.use_kl_loss": True,
            "rollout.free_cache_engine": False,
        },
    ),
    "verl06-no-chunked-prefill": (
        "qwen2.5-7b-ppo-8xh100",
        {
            "verl_version": "0.6",
            "rollout.enable_chunked_prefill": False,
            "actor.use_torch_compile": False,
            "critic.strategy": "fsdp2",
            "critic.use_dynamic_bsz": True,
            "rollout.kv_cache_dtype": "fp8",
        },
    ),
    "reward-model-chunked-entropy": (
        "qwen2.5-7b-grpo-8xh100",
        {
            "reward_model.enable": True,
            "actor.use_torch_compile": False,
            "actor.entropy_from_logits_with_chunking": True,
            "model.enable_gradient_checkpointing": False,
            "rollout.quantization": "fp8",
            "hardware.num_gpus": 16,
        },
    ),
}


def capture_variant(base: str, overrides: dict[str, Any]) -> str:
    report = estimate(load_scenario(base, overrides=overrides))
    return json.dumps(report.model_dump(mode="json"), indent=2)


def capture_all() -> dict[str, Any]:
    out: dict[str, Any] = {p: capture_preset(p) for p in sorted(scenario_presets())}
    out["variants"] = {k: capture_variant(b, o) for k, (b, o) in VARIANTS.items()}
    return out


if __name__ == "__main__":
    if "--write" not in sys.argv:
        sys.exit("pass --write to overwrite tests/golden/outputs.json")
    GOLDEN.write_text(json.dumps(capture_all(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")
