"""Split placements against the public figures in verl's recipe docs (github volcengine/verl @ b178a3c).

1. docs/advance/one_step_off.md, "Experimental Results" (Qwen2.5-Math-7B, DAPO, 2 nodes x 8 H20, rollout 4 GPUs,
   training 12): per-step seconds of the colocated and the one-step-off runs. The overlap schedule
   (``calculator.timing.pools.overlap_step``) is fed the published phase times of the one-step-off run and must
   give its published step within 15%. The colocated run's step minus its gen, old_log_prob and update_actor is the
   per-step work outside those phases (reward, advantages, logging: 54 s FSDP2, 29 s Megatron); it stays on the
   trainer's side. Tolerance: verl's "gen" of the async run is ``generate_sequences`` alone, and the agent loop's
   post-processing between generation and the trainer's ``wait_prev_gen`` is not in any published column.
2. one_step_off.md "Parameter Synchronization": "at most of time, the latency is under 300ms" for the 7B model:
   the modelled NCCL sync of the published 4:12 script on H20 is below 300 ms + 25% (the quote is a bound, and
   bucket/launch latencies vary with the cluster).
3. verl's example scripts (``tests/reference/placement_scripts``) import and estimate: pools, fit verdicts, time.

Not reproduced (known gaps, left out on purpose rather than tuned): fully_async.md's end-to-end speedups
(1.7-2.7x at 32-128 H20) need rlplan's colocated phase times on H20 to match the published ones first: with
rlplan's defaults the modelled rollout of these DAPO runs is far shorter than the published 150-350 s long tail, so
the split shows no gain; and the checkpoint-engine ablation's MoE sync times (15.8 s for Qwen3-30B-A3B, 58.6 s for
Qwen3-235B-A22B without the engine) are dominated by Megatron's per-expert parameter generation, which the
bandwidth model leaves out (module docstring of ``calculator.timing.pools``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from calculator import estimate, load_scenario
from calculator.inputs.placement import PlacementSection
from calculator.memory.pools import rollout_pool, trainer_pool
from calculator.resolve.placement import resolve_placement
from calculator.timing.pools import overlap_step, sync_time

SCRIPTS = Path(__file__).parent / "placement_scripts"

# (engine, colocated step, gen, old_log_prob, update_actor; one-step-off step, generate_sequences, old, update)
ONE_STEP_OFF_TABLE = [
    ("VLLM+FSDP2", 749, 321, 88, 286, 520, 458, 108, 337),
    ("VLLM+Megatron", 699, 207, 119, 344, 566, 501, 120, 347),
]


@pytest.mark.parametrize("row", ONE_STEP_OFF_TABLE, ids=[r[0] for r in ONE_STEP_OFF_TABLE])
def test_one_step_off_schedule_reproduces_published_step(row):
    _, c_step, c_gen, c_old, c_upd, a_step, a_gen, a_old, a_upd = row
    other = c_step - c_gen - c_old - c_upd  # 54 s (FSDP2), 29 s (Megatron)
    step, _, _ = overlap_step(
        "one_step_off",
        PlacementSection(mode="one_step_off"),
        generation_s=a_gen,
        stream_s=a_gen,
        long_tail_s=0.0,
        train_s=a_old + a_upd + other,
        sync_s=0.3,
    )
    # FSDP2: max(458, 108 + 337 + 54 = 499) + 0.3 = 499.3 vs 520 (-4%); Megatron: max(501, 496) + 0.3 = 501.3 vs 566 (-11%)
    assert step == pytest.approx(a_step, rel=0.15)
    assert step < c_step  # the split beats the colocated run in both rows


def _script(name: str, **sets):
    return load_scenario(None, overrides=sets, verl_overrides=(SCRIPTS / name).read_text())


def test_one_step_off_sync_latency_under_300ms():
    s = _script(
        "one_step_off_policy__dapo_7b_math_fsdp2_4_12.sh", **{"model.path": "qwen2.5-7b", "hardware.gpu": "h20-96gb"}
    )
    plan = resolve_placement(s)
    assert plan is not None
    sync = sync_time(trainer_pool(plan).ctx, rollout_pool(plan).ctx, plan)
    assert sync.seconds < 0.3 * 1.25


@pytest.mark.parametrize(
    ("name", "model", "mode", "gpus"),
    [
        ("one_step_off_policy__dapo_7b_math_fsdp2_4_12.sh", "qwen2.5-7b", "one_step_off", (4, 12)),
        ("fully_async_policy__dapo_7b_math_fsdp2_16_16.sh", "qwen2.5-7b", "fully_async", (16, 16)),
        ("fully_async_policy__grpo_30b_a3b_base_math_megatron_96_32.sh", "qwen3-30b-a3b", "fully_async", (96, 32)),
    ],
)
def test_published_scripts_import_and_estimate(name, model, mode, gpus):
    s = _script(name, **{"model.path": model, "hardware.gpu": "h20-96gb", "data.mean_response_length": 2048})
    assert s.placement.mode == mode
    r = estimate(s)
    assert r.pools is not None and tuple(p.num_gpus for p in r.pools) == gpus
    assert r.time is not None and r.time.step_s > 0
    assert r.placement is not None and r.placement.generation_s > 0 and r.placement.training_s > 0
