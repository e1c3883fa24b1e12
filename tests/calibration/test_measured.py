"""Robust statistics over a parsed log: warm-up dropped, median / MAD, phase mapping, step minus testing."""

from __future__ import annotations

from pathlib import Path

import pytest

from calculator.calibration.logs import parse_log
from calculator.calibration.measured import NOT_A_PHASE, PHASE_OF_TIMER, robust, summarize
from calculator.errors import InputError

LOG = "\n".join(
    [
        "step:1 - timing_s/gen:100 - timing_s/ref:9 - timing_s/update_weights:5 - timing_s/step:200",
        "step:2 - timing_s/gen:10 - timing_s/ref:3 - timing_s/update_weights:1 - timing_s/step:20 - timing_s/adv:1",
        "step:3 - timing_s/gen:12 - timing_s/ref:3 - timing_s/update_weights:1 - timing_s/step:30 - "
        "timing_s/testing:8 - response_length/mean:500 - prompt_length/mean:200",
        "step:4 - timing_s/gen:50 - timing_s/ref:3 - timing_s/update_weights:1 - timing_s/step:22 - "
        "response_length/mean:700 - prompt_length/mean:200",
    ]
)


def test_robust_median_and_mad() -> None:
    # values 10, 12, 50: median 12, deviations 2, 0, 38 -> MAD 2
    st = robust([10.0, 12.0, 50.0])
    assert st is not None and (st.median, st.mad, st.num_steps) == (12.0, 2.0, 3)
    # rel. standard error of the median: 1.4826 x 2 / 12 / sqrt(3) = 0.1427
    assert st.rel_sem == pytest.approx(1.4826 * 2 / 12 / 3**0.5)


def test_summary_drops_the_warmup_step_and_maps_verl_timers_to_phases() -> None:
    m = summarize(parse_log(LOG))
    assert m.warmup_steps == (1,) and m.steps_used == (2, 3, 4)
    assert set(m.phases_s) == {"rollout", "ref_log_prob", "weight_sync"}
    assert m.phases_s["rollout"].median == 12.0  # the 50 s straggler does not move the median
    # step minus testing: 20, 30 - 8 = 22, 22 -> median 22
    assert m.step_s is not None and m.step_s.median == 22.0
    assert m.other_s["adv"].median == 1.0 and "testing" in m.other_s
    assert m.mean_response_length is not None and m.mean_response_length.median == 600.0


def test_explicit_warmup_and_its_bounds() -> None:
    assert summarize(parse_log(LOG), warmup=0).phases_s["ref_log_prob"].median == 3.0  # 9, 3, 3, 3
    with pytest.raises(InputError, match="nothing would be left"):
        summarize(parse_log(LOG), warmup=4)
    with pytest.raises(InputError, match=">= 0"):
        summarize(parse_log(LOG), warmup=-1)


def test_two_steps_keep_the_warmup_and_say_so() -> None:
    m = summarize(parse_log("step:1 - timing_s/gen:5\nstep:2 - timing_s/gen:4\n"))
    assert m.steps_used == (1, 2) and any("warm-up step was kept" in n for n in m.notes)


def test_a_log_without_timers_is_refused() -> None:
    with pytest.raises(InputError, match="timing_s"):
        summarize(parse_log("step:1 - actor/pg_loss:0.1\n"))


FIXTURES = Path(__file__).parent / "fixtures"


def test_wandb_history_export_fixture() -> None:
    # wandb's "Download CSV" of a run's history: quoted cells, _step/_runtime/_timestamp, empty cells where a metric
    # was not logged (step 0: validation only). Step 1 is the warm-up; steps 2-6 are kept.
    log = parse_log((FIXTURES / "wandb_export_history.csv").read_text())
    assert log.format == "csv"
    m = summarize(log)
    assert m.warmup_steps == (1,) and m.steps_used == (2, 3, 4, 5, 6)
    # gen 71.20, 69.88, 72.55, 70.61, 71.03 -> median 71.03; update_weights -> 4.21
    assert m.phases_s["rollout"].median == 71.03 and m.phases_s["weight_sync"].median == 4.21
    # step minus testing: 117.49, 116.07, 118.98, 116.85, 214.61 - 97.1 = 117.51 -> median 117.49
    assert m.step_s is not None and m.step_s.median == pytest.approx(117.49)
    assert m.mean_response_length.median == 301.2 and m.mean_prompt_length.median == 104.7
    assert m.allocated_gib.median == 62.451 and m.host_used_gib.median == 102.55
    assert set(m.other_s) == {"adv", "testing"}


def test_every_verl_091_timer_is_classified() -> None:
    # every marked_timer name in verl 0.9.1 (grep of the wheel: trainer/ppo/ray_trainer.py, trainer/ppo/v1/*.py,
    # experimental/one_step_off_policy, experimental/fully_async_policy) is a phase or has a stated reason not to be
    timers = {
        "gen", "generate_async", "reward", "old_log_prob", "ref", "values", "adv", "update_critic", "update_actor",
        "update_weights", "sync_rollout_weights", "step", "testing", "save_checkpoint", "start_profile",
        "stop_profile", "dump_rollout_generations", "switch_to_rollout", "switch_to_trainer", "switch_wait",
        "wait_for_enough_samples",
    }  # fmt: skip
    assert timers <= set(PHASE_OF_TIMER) | set(NOT_A_PHASE)
    assert not set(PHASE_OF_TIMER) & set(NOT_A_PHASE)


def test_one_step_off_timers_map_to_phases() -> None:
    text = "\n".join(
        f"step:{i} - timing_s/generate_async:{40 + i} - timing_s/sync_rollout_weights:2.5 - timing_s/step:{60 + i}"
        for i in range(1, 5)
    )
    m = summarize(parse_log(text))
    assert m.phases_s["rollout"].median == 43.0  # steps 2, 3, 4 -> 42, 43, 44
    assert m.phases_s["weight_sync"].median == 2.5


def test_fully_async_gen_is_the_trainer_wait_and_param_sync_is_the_weight_sync() -> None:
    # verl 0.9.1 experimental/fully_async_policy: detach_utils.py idle_ratio = timing_s/gen / timing_s/step (the
    # trainer's wait), fully_async_trainer.py marked_timer("timing_s/param_sync")
    text = "\n".join(
        f"step:{i} - timing_s/gen:21.0 - timing_s/update_actor:300 - timing_s/timing_s/param_sync:0.5 - "
        f"timing_s/step:{320 + i} - fully_async/trainer/idle_ratio:0.07"
        for i in range(1, 5)
    )
    m = summarize(parse_log(text))
    assert "rollout" not in m.phases_s and m.other_s["gen (trainer wait)"].median == 21.0
    assert m.phases_s["weight_sync"].median == 0.5 and m.phases_s["update_actor"].median == 300
    assert any("trainer's wait" in n for n in m.notes)
