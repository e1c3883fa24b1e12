"""Robust statistics over a parsed log: warm-up dropped, median / MAD, phase mapping, step minus testing."""

from __future__ import annotations

import pytest

from calculator.calibration.logs import parse_log
from calculator.calibration.measured import robust, summarize
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
