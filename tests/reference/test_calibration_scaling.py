"""A profile calibrated at one GPU count predicts the same workload at another count better than the defaults.

Source: verl docs/advance/fully_async.md, "Asynchronous Training on 7B Model" (Qwen2.5-Math-7B, DAPO, H20, vLLM +
FSDP2, 28K max response, rollout.n 16, ppo_mini_batch_size 32, train_batch_size 512), the "colocate sync" rows at
32, 64 and 128 GPUs (seconds per step, averaged by the authors over 400 steps):

    GPUs  step    gen     old_log_prob  update_actor
    32    790.10  357.41  107.71        313.81
    64    365.28  150.72   70.26        133.41
    128   356.30  177.85   53.92        113.81

Launch settings: the recipe script's (tests/calibration/fixtures/dapo_7b_math_colocate.sh). Lengths are not in the
table: mean prompt 256 and mean response 2,048 tokens are ASSUMED (the same in every run, so they move the three
predictions alike; a calibration absorbs them into the fitted efficiencies). The compared figure is the sum of the
three logged phases (the step adds ``adv``/reward/sync, which the table does not give).

Measured before/after (relative error of gen + old_log_prob + update_actor, this model, 2026-11-24, after the
step-time mechanisms of issue 15):
    defaults:                 32 GPUs +72 %, 64 GPUs +123 %, 128 GPUs +43 %
    calibrated at 32 -> 64:   +35 %   (defaults +123 %)
    calibrated at 64 -> 32:   -2 %    (defaults +72 %)
    calibrated at 32 / 64 -> 128: -17 % / -20 %
Known gap (the xfail tests below): at the ASSUMED 2,048-token mean response, update_actor needs more than the
0.9 bound of ``train_mfu`` (the model adds each mini-batch's data-parallel straggler, ~40 % of the compute at
these lengths), so a profile cannot reproduce its own run and 32 -> 64 stays outside +-20 %. The table gives no
lengths; the remedy is a log with its logged lengths, not a wider bound.
The 128-GPU row is outside what per-phase efficiencies can carry: doubling 64 -> 128 GPUs made the step 2 %
faster and ``gen`` 18 % SLOWER (long-tail generation and per-mini-batch collectives across 16 nodes); it is
checked below as the documented limit, not as an improvement.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from calculator import estimate, load_scenario
from calculator.calibration.compare import calibrate
from calculator.calibration.measured import measured_from_table

SCRIPT = (Path(__file__).resolve().parents[1] / "calibration" / "fixtures" / "dapo_7b_math_colocate.sh").read_text()
TABLE = {  # GPUs -> (step, gen, old_log_prob, update_actor), seconds
    32: (790.10, 357.41, 107.71, 313.81),
    64: (365.28, 150.72, 70.26, 133.41),
    128: (356.30, 177.85, 53.92, 113.81),
}
LENGTHS = {"data.mean_prompt_length": 256, "data.mean_response_length": 2048}
PHASES = ("rollout", "old_log_prob", "update_actor")


def scenario(num_gpus: int, extra: dict[str, float] | None = None):  # type: ignore[no-untyped-def]
    base = {"model.path": "qwen2.5-7b", "hardware.gpu": "h20-96gb", "hardware.num_gpus": num_gpus}
    return load_scenario(None, {**base, "hardware.gpus_per_node": 8, **LENGTHS, **(extra or {})}, SCRIPT)


def measured_sum(num_gpus: int) -> float:
    return sum(TABLE[num_gpus][1:])


def predicted_sum(num_gpus: int, extra: dict[str, float] | None = None) -> float:
    t = estimate(scenario(num_gpus, extra)).time
    assert t is not None
    return sum(t.phases_s[p] for p in PHASES)


def profile_from(num_gpus: int) -> dict[str, float]:
    _, gen, olp, ua = TABLE[num_gpus]
    m = measured_from_table({"rollout": gen, "old_log_prob": olp, "update_actor": ua}, step_s=TABLE[num_gpus][0],
                            mean_prompt_length=256, mean_response_length=2048)  # fmt: skip
    return calibrate(scenario(num_gpus), m).fitted


@pytest.mark.parametrize(("fit_at", "predict_at"), [(32, 64), (64, 32)])
def test_calibrated_profile_beats_defaults_at_another_scale(fit_at: int, predict_at: int) -> None:
    fitted = profile_from(fit_at)
    truth = measured_sum(predict_at)
    err_default = abs(math.log(predicted_sum(predict_at) / truth))
    calibrated = predicted_sum(predict_at, fitted)
    assert abs(math.log(calibrated / truth)) < err_default


GAP = "update_actor at the assumed lengths needs train_mfu above its 0.9 bound (module docstring)"


@pytest.mark.parametrize(
    ("fit_at", "predict_at"),
    [pytest.param(32, 64, marks=pytest.mark.xfail(strict=True, reason=GAP)), (64, 32)],
)
def test_calibrated_profile_within_20_percent_at_another_scale(fit_at: int, predict_at: int) -> None:
    calibrated = predicted_sum(predict_at, profile_from(fit_at))
    assert abs(calibrated / measured_sum(predict_at) - 1) < 0.20  # the target for another scale


@pytest.mark.xfail(strict=True, reason=GAP)
def test_calibration_reproduces_its_own_run() -> None:
    fitted = profile_from(32)
    assert predicted_sum(32, fitted) == pytest.approx(measured_sum(32), rel=0.03)


def test_the_128_gpu_row_scales_outside_the_model() -> None:
    # The documented limit: measured step 64 -> 128 GPUs improves by < 5 % and gen gets slower, while the model's
    # calibrated prediction roughly halves; the gap is a mechanism the model lacks, not a constant to fit.
    assert TABLE[128][0] > 0.95 * TABLE[64][0] and TABLE[128][1] > TABLE[64][1]
    fitted = profile_from(64)
    assert predicted_sum(128, fitted) < 0.7 * predicted_sum(64, fitted)
