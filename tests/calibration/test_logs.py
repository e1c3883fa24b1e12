"""verl log readers: console lines, FileLogger JSONL, wandb CSV; bounds on bytes, lines and line length."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculator.calibration.logs import _number, parse_log
from calculator.errors import InputError
from calculator.inputs import limits

# The format of verl 0.9.1's console logger (aggregate_logger.concat_dict_to_str): "step:N - key:value - ...",
# values through pprint.pformat (numpy scalars print as np.float64(...)); Ray prefixes the worker.
CONSOLE = (
    "(TaskRunner pid=4242) INFO vLLM engine started\n"
    "(TaskRunner pid=4242) step:1 - timing_s/gen:np.float64(40.5) - timing_s/update_actor:100.0 - "
    "response_length/mean:512.0 - actor/pg_loss:-0.01\n"
    "(TaskRunner pid=4242) step:2 - timing_s/gen:np.float64(30.25) - timing_s/update_actor:90.0 - "
    "response_length/mean:600.0 - perf/max_memory_allocated_gb:np.float64(31.5)\n"
)


def test_console_lines_with_ray_prefix_and_numpy_scalars() -> None:
    log = parse_log(CONSOLE)
    assert log.format == "console"
    assert log.step_numbers == [1, 2]
    assert log.steps[2]["timing_s/gen"] == 30.25  # not the 64 of "np.float64"
    assert log.steps[1]["actor/pg_loss"] == -0.01
    assert log.steps[2]["perf/max_memory_allocated_gb"] == 31.5


def test_jsonl_file_logger_format() -> None:
    # verl/utils/tracking.py FileLogger.log: {"step": step, "data": data} per line
    lines = [json.dumps({"step": s, "data": {"timing_s/gen": 10.0 * s, "note": "text"}}) for s in (1, 2, 3)]
    log = parse_log("\n".join(lines + ["not json {"]))
    assert log.format == "jsonl"
    assert log.steps[3] == {"timing_s/gen": 30.0}  # strings dropped


def test_wandb_csv_history_and_panel_exports() -> None:
    history = "_step,timing_s/gen,timing_s/update_actor\n1,10,20\n2,11,21\n"
    assert parse_log(history).steps[2] == {"timing_s/gen": 11.0, "timing_s/update_actor": 21.0}
    panel = 'Step,"run-a - timing_s/gen","run-a - timing_s/gen__MIN","run-a - timing_s/gen__MAX"\n5,12.5,12,13\n'
    log = parse_log(panel)
    assert log.format == "csv"
    assert log.steps[5] == {"timing_s/gen": 12.5}


def test_csv_without_step_column_is_refused() -> None:
    with pytest.raises(InputError, match="step column"):
        parse_log("a,b\n1,2\n", fmt="csv")


def test_a_resumed_step_keeps_its_last_values() -> None:
    text = "step:3 - timing_s/gen:1.0\nstep:3 - timing_s/gen:2.0\n"
    assert parse_log(text).steps[3]["timing_s/gen"] == 2.0


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", "np.float64(nan)", "abc", "1.0.0"])
def test_non_finite_or_non_numbers_are_dropped(raw: str) -> None:
    assert _number(raw) is None


def test_no_steps_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="no step metrics found"):
        parse_log("just some text\nwithout metrics\n")


def test_too_large_log_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("calculator.calibration.logs.MAX_LOG_BYTES", 100)
    with pytest.raises(InputError, match="larger than"):
        parse_log("step:1 - timing_s/gen:1.0\n" * 10)


def test_line_and_length_bounds_leave_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("calculator.calibration.logs.MAX_LOG_LINES", 3)
    monkeypatch.setattr("calculator.calibration.logs.MAX_LOG_LINE_CHARS", 60)
    text = "step:1 - timing_s/gen:1.0\n" + "step:2 - x:" + "9" * 100 + "\n" + "step:3 - timing_s/gen:3.0\n" * 5
    log = parse_log(text)
    assert log.step_numbers == [1, 3]
    assert any("longer than 60" in n for n in log.notes)
    assert any("first 3 lines" in n for n in log.notes)
    assert limits.MAX_LOG_LINES >= 100_000  # the real bound is far above a real log's size


@given(st.text(max_size=2000))
@settings(max_examples=200)
def test_any_text_parses_or_is_refused_with_a_message(text: str) -> None:
    try:
        log = parse_log(text)
    except InputError as err:
        assert err.problems
    else:
        assert all(isinstance(v, float) for m in log.steps.values() for v in m.values())


@given(
    st.dictionaries(
        st.sampled_from(["timing_s/gen", "timing_s/ref", "response_length/mean"]),
        st.floats(allow_nan=False, allow_infinity=False, width=32),
        min_size=1,
    )
)
def test_console_round_trip(metrics: dict[str, float]) -> None:
    # what concat_dict_to_str prints (pprint.pformat of a float is repr) reads back exactly
    line = " - ".join(["step:7"] + [f"{k}:{v!r}" for k, v in metrics.items()])
    assert parse_log(line).steps[7] == {k: float(v) for k, v in metrics.items()}


def test_real_console_lines_from_a_public_run() -> None:
    text = (Path(__file__).parent / "fixtures" / "verl_console_issue_2060.log").read_text()
    log = parse_log(text)
    assert log.step_numbers == [0, 1]
    assert log.steps[0]["val-core/openai/gsm8k/acc/mean@1"] == 0.508
    s1 = log.steps[1]
    assert (s1["perf/max_memory_allocated_gb"], s1["perf/max_memory_reserved_gb"]) == (62.447, 91.455)
    assert s1["response_length/mean"] == 288.698 and s1["actor/ppo_kl"] == -0.0
    assert not any(k.startswith("prompt_length") for k in s1)  # the cut token is dropped
