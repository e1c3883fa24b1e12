"""A second multi-scale check of issue 16: a profile fitted at one trainer size predicts the update at the others.

Source: verl docs/advance/fully_async.md (volcengine/verl main, b178a3c, 2026-01-29), "Asynchronous Training on 7B
Model", the ``fully_async_policy`` rows: Qwen2.5-Math-7B, DAPO, H20, vLLM + FSDP2, 28K max response, rollout.n 16,
ppo_mini_batch_size 32, require_batches 4, trigger_parameter_sync_step 4 (512 prompts x 16 responses between two
parameter syncs). The trainer pool is half of the GPUs (16:16, 32:32, 64:64). Its ``update_actor`` column is, per
logged step, the SUM of the trainer's local updates between two syncs (verl 0.9.1
``experimental/fully_async_policy/detach_utils.py``: ``timing_s/*`` aggregate as ``time_sum``), i.e. the same
512 x 16 samples as a colocated step, trained on the trainer pool alone:

    trainer GPUs   update_actor (s)
    16             313.81
    32             156.98
    64             113.16

This is the same workload at three sizes, but a different table from tests/reference/test_calibration_scaling.py
(the colocated rows of the same document). No other public verl table giving one workload's phase times at several
GPU counts was found: one_step_off.md (one size: 2 x 16 H20), docs/perf/dpsk.md (recommended parallelism per GPU
count and an MFU column, no times), the fully_async 30B and multi-turn tables (one size each), the
use_trainer_do_validate table (16 GPUs only).

The model's counterpart is ``update_actor`` of the same launch settings (tests/calibration/fixtures/
dapo_7b_math_colocate.sh) on ``N`` GPUs: the trainer's update does not depend on where the rollout runs. Lengths
are not in the table: mean prompt 256 and mean response 2,048 tokens are ASSUMED, as in the colocated reference.

Measured before/after on 2026-11-24 (relative error of update_actor, this model):
    defaults:                         16 GPUs +433 %, 32 GPUs +512 %, 64 GPUs +407 %
    calibrated at 16 -> 32 / 64:      +139 % / +98 %   (the fit ends at train_mfu's 0.9 bound)
Calibration helps (the tests below), but does not reach the issue's +-20 %: at the assumed lengths the table's
16-GPU update needs more than 100 % of the H20's bf16 peak (``test_the_assumed_lengths_are_too_long``), so no
efficiency inside its bounds reproduces it; the true mean response was shorter than assumed, and the table does
not say by how much. That is recorded as a strict xfail, not tuned away. The measured scaling is also uneven
(16 -> 32 GPUs 2.0x faster, 32 -> 64 only 1.39x), which a per-GPU efficiency cannot carry either.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from calculator import estimate, load_scenario
from calculator.calibration.compare import calibrate
from calculator.calibration.measured import measured_from_table

SCRIPT = (Path(__file__).resolve().parents[1] / "calibration" / "fixtures" / "dapo_7b_math_colocate.sh").read_text()
UPDATE_S = {16: 313.81, 32: 156.98, 64: 113.16}  # trainer GPUs -> update_actor seconds per logged step
LENGTHS = {"data.mean_prompt_length": 256, "data.mean_response_length": 2048}
H20_BF16_FLOPS = 148e12  # NVIDIA H20 datasheet, dense BF16 (also verl docs/advance/mtp.md's table)


def scenario(num_gpus: int, extra: dict[str, float] | None = None):  # type: ignore[no-untyped-def]
    base = {"model.path": "qwen2.5-7b", "hardware.gpu": "h20-96gb", "hardware.num_gpus": num_gpus}
    return load_scenario(None, {**base, "hardware.gpus_per_node": 8, **LENGTHS, **(extra or {})}, SCRIPT)


def update_s(num_gpus: int, extra: dict[str, float] | None = None) -> float:
    t = estimate(scenario(num_gpus, extra)).time
    assert t is not None
    return t.phases_s["update_actor"]


def profile_from(num_gpus: int) -> dict[str, float]:
    m = measured_from_table({"update_actor": UPDATE_S[num_gpus]}, mean_prompt_length=256, mean_response_length=2048)
    return calibrate(scenario(num_gpus), m).fitted


def log_error(predicted: float, measured: float) -> float:
    return abs(math.log(predicted / measured))


@pytest.mark.parametrize(("fit_at", "predict_at"), [(16, 32), (16, 64), (32, 16), (32, 64), (64, 16), (64, 32)])
def test_calibrated_profile_beats_defaults_at_another_size(fit_at: int, predict_at: int) -> None:
    fitted = profile_from(fit_at)
    assert "efficiency.train_mfu" in fitted  # the one field an update_actor time identifies
    truth = UPDATE_S[predict_at]
    assert log_error(update_s(predict_at, fitted), truth) < log_error(update_s(predict_at), truth)


GAP = "at the assumed 2,048-token responses the measured update needs > 100 % of the H20's peak (module docstring)"


@pytest.mark.xfail(strict=True, reason=GAP)
@pytest.mark.parametrize(("fit_at", "predict_at"), [(16, 32), (16, 64)])
def test_calibrated_profile_within_20_percent_at_another_size(fit_at: int, predict_at: int) -> None:
    assert abs(update_s(predict_at, profile_from(fit_at)) / UPDATE_S[predict_at] - 1) < 0.20


def test_the_assumed_lengths_are_too_long() -> None:
    # The reason for the xfail, from the table alone: training FLOPs 6 x N_params x tokens (Kaplan et al. 2020; the
    # attention and lm-head terms only add to it) over the 16-GPU time. Qwen2.5-7B: 7.62e9 parameters (its
    # config.json). 512 x 16 samples x (256 + 2,048) tokens = 18,874,368 tokens;
    # 6 x 7.62e9 x 18,874,368 = 8.63e17 FLOP; 16 x 148e12 FLOP/s x 313.81 s = 7.43e17 FLOP -> 116 % of peak.
    flop = 6 * 7.62e9 * 512 * 16 * (256 + 2048)
    implied_mfu = flop / (16 * H20_BF16_FLOPS * UPDATE_S[16])
    assert implied_mfu > 1.0
