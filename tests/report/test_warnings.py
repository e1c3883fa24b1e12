"""Warnings a verl user needs before launch (calculator/report/warnings.py): each one raised by the scenario that
causes it (with its numbers), absent from a scenario that fits comfortably."""

from __future__ import annotations

import pytest

from calculator import estimate, load_scenario
from calculator.units import GIB_BYTES

BASE = "qwen2.5-7b-grpo-8xh100"  # 8 x H100, Qwen2.5-7B, vLLM TP 2 at util 0.6: fits with room


def warnings(overrides: dict | None = None, preset: str = BASE) -> list[str]:
    return estimate(load_scenario(preset, overrides=overrides or {})).warnings


def test_a_comfortable_scenario_has_none():
    assert warnings() == []


def test_vllm_refuses_to_start():
    r = estimate(load_scenario(BASE, overrides={"rollout.gpu_memory_utilization": 0.95}))
    expected = (
        f"vLLM will refuse to start: free memory at startup {r.rollout.startup_free_gib:.1f} GiB < "
        f"gpu_memory_utilization 0.95 x 79.22 GiB = {0.95 * 79.22:.1f} GiB"
    )
    assert r.warnings[0].startswith(expected)


def test_no_memory_left_for_the_kv_cache():
    """TP 1 at util 0.1: 7.9 GiB of budget against 14.2 GiB of bf16 weights."""
    (w,) = warnings({"rollout.gpu_memory_utilization": 0.1, "rollout.tensor_model_parallel_size": 1})
    assert w.startswith("rollout engine has no memory for the KV cache: budget 7.9 GiB - weights 14.2 GiB")


def test_kv_cache_below_one_max_model_len_sequence():
    r = estimate(
        load_scenario(BASE, overrides={"rollout.gpu_memory_utilization": 0.22, "rollout.tensor_model_parallel_size": 1})
    )
    tokens = r.rollout.kv_cache_tokens_per_replica
    assert 0 < tokens < 131072
    assert r.warnings[0].startswith(
        f"KV cache holds {tokens} tokens per replica, less than one sequence of max_model_len 131072"
    )
    assert "Set rollout.max_model_len=1536" in r.warnings[0]
    capped = warnings({"rollout.gpu_memory_utilization": 0.22, "rollout.tensor_model_parallel_size": 1,
                       "rollout.max_model_len": 1536})  # fmt: skip
    assert not any("less than one sequence" in w for w in capped)


def test_kv_limited_concurrency():
    r = estimate(
        load_scenario(BASE, overrides={"rollout.gpu_memory_utilization": 0.29, "rollout.tensor_model_parallel_size": 1})
    )
    conc = r.rollout.max_concurrent_sequences_per_replica
    assert 0 < conc * 2 < 256  # below half of max_num_seqs (256)
    assert r.warnings == [
        f"KV cache limits rollout concurrency to {conc} sequences per replica, far below the 256 the engine would "
        f"run at once ({r.rollout.sequences_per_replica} to generate per replica): rollout will be slow. "
        "More KV (higher gpu_memory_utilization, rollout TP) or shorter responses."
    ]


def test_logits_dominating_a_tight_phase_and_the_worst_case():
    """A100-40GB: old_log_prob is above 80% of the GPU and its logits are a quarter of it; the mean lengths fit,
    the max lengths do not."""
    ws = warnings({"hardware.gpu": "a100-40gb"})
    # The rollout (38.3 of 39.38 GiB) and update_actor (37.6 GiB: no fragmentation term under verl 0.9.1's expandable
    # segments, the FSDP1 head gradient held through backward) are within 5% of the limit as well.
    assert len(ws) == 4
    assert ws[0].startswith("logits and entropy take 10.1 GiB (31%) of phase old_log_prob: set model.use_fused_kernels")
    assert ws[1].startswith("phase rollout is within 5% of the usable memory")
    assert ws[2].startswith("phase update_actor is within 5% of the usable memory")
    assert ws[-1].startswith("fits at the mean lengths but not when every sequence is at max length (43.3 GiB in")
    fused = warnings({"hardware.gpu": "a100-40gb", "model.use_fused_kernels": True})
    assert not any(w.startswith("logits and entropy") for w in fused)


def test_over_the_limit_and_near_the_limit():
    r = estimate(
        load_scenario(
            BASE,
            overrides={
                "rollout.name": "sglang",
                "rollout.free_cache_engine": False,
                "actor.fsdp_config.param_offload": True,
            },
        )
    )
    usable = 79.22 * GIB_BYTES
    for p in r.phases:
        over = [w for w in r.warnings if w.startswith(f"phase {p.name} ")]
        if p.total_bytes > usable:
            assert over == [
                f"phase {p.name} needs {p.total_gib:.1f} GiB per GPU, over the usable 79.22 GiB by "
                f"{(p.total_bytes - usable) / GIB_BYTES:.1f} GiB: OOM."
            ]
        elif p.total_bytes > 0.95 * usable:
            assert over and "within 5% of the usable memory" in over[0]
        else:
            assert over == []
    assert any(w.startswith("SGLang sizes its KV pool from the memory free at start") for w in r.warnings)


@pytest.mark.parametrize(
    ("overrides", "warning"),
    [
        ({"model.lora_rank": 16, "model.use_dora": True}, "DoRA: verl's LoRA path does not expose DoRA"),
        ({"actor.optim.optimizer": "Adafactor"}, "Adafactor: factored second moments are counted as ~0 B/param"),
        ({"reward_model.enable": True, "reward_model.enable_resource_pool": True},
         "reward model on its own resource pool: its GPUs are not modelled here."),
    ],
)  # fmt: skip
def test_approximations_are_said(overrides: dict, warning: str):
    assert [w for w in warnings(overrides) if w.startswith(warning)]


def test_a_missing_mean_response_says_the_step_is_an_upper_bound():
    """Without a mean the expected case is every sequence at its max (DESIGN.md 6.3): the warning names the lengths
    used, and the step is longer than with any mean below the max (decode steps, KV concurrency, no long tail)."""
    base = {"data.max_response_length": 4096, "data.mean_prompt_length": 200}
    unset = estimate(load_scenario(BASE, overrides={**base, "data.mean_response_length": None}))
    text = [w for w in unset.warnings if w.startswith("no data.mean_response_length")]
    assert len(text) == 1 and "max_response_length (4096 tokens)" in text[0] and "prompt" not in text[0].split(",")[0]
    none = {"data.mean_prompt_length": None, "data.mean_response_length": None}
    both = estimate(load_scenario(BASE, overrides={**base, **none}))
    assert any("and every prompt at max_prompt_length (512 tokens)" in w for w in both.warnings if "mean_response" in w)
    given = estimate(load_scenario(BASE, overrides={**base, "data.mean_response_length": 1000}))
    assert not [w for w in given.warnings if w.startswith("no data.mean_response_length")]
    assert unset.time is not None and given.time is not None
    assert unset.time.step_s > given.time.step_s
