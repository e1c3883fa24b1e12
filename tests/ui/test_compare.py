"""The Compare page (issue 13 item 13): step time and tokens/s per column, and the comparison in the link."""

from __future__ import annotations

from calculator import estimate, load_scenario
from tests.ui.test_app import qp, run_app
from ui import keys, linkcodec
from ui.i18n import tr
from ui.state import DEFAULT_PRESET

STEP = tr("en", "metric.step_time")


def _compare(params: dict[str, str] | None = None):
    at = run_app(params)
    at.switch_page("ui/pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_each_column_shows_step_time_and_tokens_per_s() -> None:
    at = _compare()
    at.pills(key=keys.CMP_QUICK).set_value("n").run()
    assert not at.exception
    times = [m for m in at.metric if m.label == STEP]
    assert len(times) == 3
    for m, n in zip(times, (4, 8, 16), strict=True):
        t = estimate(load_scenario(DEFAULT_PRESET, overrides={"rollout.n": n})).time
        assert m.value == f"{t.step_s:,.1f} s"
        assert m.delta == f"{t.tokens_per_s:,.0f} tok/s"
    assert len({m.value for m in times}) == 3  # n = 4 / 8 / 16 no longer look identical


def test_comparison_round_trips_through_the_link() -> None:
    at = _compare()
    at.pills(key=keys.CMP_QUICK).set_value("n").run()
    at.text_input(key=keys.cmp_label(2)).input("sixteen").run()
    code = qp(at, "cmp")
    assert code is not None and code.startswith("v1.")
    assert qp(at, "preset") == DEFAULT_PRESET
    cols = linkcodec.unpack(code)["c"]
    assert cols[2] == ["__current__", "sixteen", "rollout.n=16"]

    again = _compare({"preset": DEFAULT_PRESET, "cmp": code})  # a new session opens the link
    assert again.number_input(key=keys.CMP_COUNT).value == 3
    assert [again.text_area(key=keys.cmp_overrides(i)).value for i in range(3)] == [c[2] for c in cols]
    assert again.text_input(key=keys.cmp_label(2)).value == "sixteen"
    assert qp(again, "cmp") == code


def test_a_damaged_link_says_so_and_shows_the_default() -> None:
    at = _compare({"preset": DEFAULT_PRESET, "cmp": "v1.not-a-real-code"})
    assert any(tr("en", "url.bad_cmp") in w.value for w in at.warning)
    peaks = [m for m in at.metric if m.label == tr("en", "metric.peak")]
    assert len(peaks) == 2  # the default PPO / GRPO comparison


def test_a_link_cannot_name_a_path_as_base() -> None:
    code = linkcodec.pack({"c": [["/etc/passwd", "a", ""], ["__current__", "b", "rollout.n=4"]]})
    at = _compare({"preset": DEFAULT_PRESET, "cmp": code})
    assert at.selectbox(key=keys.cmp_base(0)).value == "__current__"


def test_pasted_launch_script_round_trips_through_the_link() -> None:
    script = "python3 -m verl.trainer.main_ppo \\\n  actor_rollout_ref.rollout.n=16 \\\n  data.max_response_length=4096"
    at = run_app()
    at.switch_page("ui/pages/verl_io.py").run()
    at.text_area(key=keys.VERL_IMPORT_TEXT).input(script).run()
    assert not at.exception
    code = qp(at, "script")
    assert linkcodec.unpack_text(code) == script

    again = run_app({"preset": DEFAULT_PRESET, "script": code})
    again.switch_page("ui/pages/verl_io.py").run()
    assert not again.exception
    assert again.text_area(key=keys.VERL_IMPORT_TEXT).value == script

    bad = run_app({"preset": DEFAULT_PRESET, "script": "v1.%%%"})
    bad.switch_page("ui/pages/verl_io.py").run()
    assert any(tr("en", "url.bad_script") in w.value for w in bad.warning)
