"""AppTest over the dashboard: every preset and language runs, widgets change the headline exactly as the
calculator says, the URL round-trips a scenario, bad input gives messages (never a traceback), every page runs."""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from calculator import estimate, load_scenario, role_settings
from calculator.errors import InputError
from calculator.inputs.presets import get_model, scenario_presets
from calculator.model.sizes import approximate_model, parse_size
from tests.support.app_fields import field_value
from tests.support.paths import ROOT
from ui import keys
from ui.fields import all_fields, field, widget_fields
from ui.i18n import STRINGS, english_help, tr
from ui.i18n_fields import FIELD_HELP_ZH
from ui.inputs import SECTIONS
from ui.state import DEFAULT_PRESET

APP = str(ROOT / "app.py")
PAGES = [
    "ui/pages/estimate.py",
    "ui/pages/compare.py",
    "ui/pages/tradeoffs.py",
    "ui/pages/planner.py",
    "ui/pages/verl_io.py",
]


def run_app(params: dict[str, str] | None = None, open_sections: bool = True) -> AppTest:
    """Run the app; by default every sidebar section is open (closed ones do not build their widgets)."""
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    if open_sections:
        for name in keys.LAZY_SECTIONS:
            at.session_state[keys.section_key(name)] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def qp(at: AppTest, key: str) -> str | None:
    """A query parameter of the app's URL (AppTest may hold a string or a list of strings)."""
    value = at.query_params.get(key)
    return value[-1] if isinstance(value, list) else value


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def expected_headline(overrides: dict | None = None, preset: str = DEFAULT_PRESET, lang: str = "en") -> dict[str, str]:
    """The headline metrics as the app must print them, from the calculator directly."""
    r = estimate(load_scenario(preset, overrides=overrides or {}))
    out = {
        tr(lang, "metric.peak"): f"{r.peak.gib_per_gpu:.2f} GiB",
        tr(lang, "metric.usable"): f"{r.hardware.usable_memory_gib:.2f} GiB",
        tr(lang, "metric.peak_phase"): r.peak.phase,
        tr(lang, "metric.worst"): f"{r.peak.worst_case_gib_per_gpu:.2f} GiB",
        tr(lang, "metric.concurrency"): (
            f"{r.rollout.max_concurrent_sequences_per_replica:,} / {r.rollout.sequences_per_replica:,}"
        ),
    }
    if r.time is not None:
        out[tr(lang, "metric.step_time")] = "—" if r.time.step_s is None else f"{r.time.step_s:,.1f} s"
    return out


def _preset_loads(pid: str) -> bool:
    try:
        load_scenario(pid)
    except InputError:
        return False
    return True


# ----------------------------------------------------------------------------- presets and languages


@pytest.mark.parametrize("preset", sorted(scenario_presets()))
def test_every_preset_runs_and_matches_the_calculator(preset: str) -> None:
    at = run_app({"preset": preset})
    assert at.selectbox(key=keys.PRESET).value == preset
    if not _preset_loads(preset):  # a preset under construction: a message, not a crash
        assert at.error
        return
    assert metrics(at) == expected_headline(preset=preset)
    assert at.get("plotly_chart"), "the memory chart is missing"


@pytest.mark.parametrize("worst", [False, True])
def test_breakdown_table_and_formulas_are_those_of_the_peak_phase(worst: bool) -> None:
    """The breakdown table lists the peak phase's components with their GiB, and one expander shows every one of
    their formulas, literally (code spans), with the component's explanation (issue #18 made them one element)."""
    at = run_app(open_sections=False)
    if worst:
        at.segmented_control(key=keys.VIEW_CASE).set_value("worst").run()
    r = estimate(load_scenario(DEFAULT_PRESET))
    phases = r.worst_case_phases if worst else r.phases
    peak = next(p for p in phases if p.name == (r.peak.worst_case_phase if worst else r.peak.phase))
    table = at.dataframe[0].value
    assert dict(zip(table[tr("en", "table.component")], table[tr("en", "table.gib")], strict=True)) == {
        name: round(gib, 3) for name, gib in peak.components.items()
    }
    title = tr("en", "est.how_components", n=len(peak.components), phase=peak.name)
    (box,) = [e for e in at.expander if e.label == title]
    (text,) = [m.value for m in box.markdown]
    for name, gib in peak.components.items():
        formula = " + ".join(c.formula for c in peak.details if c.name == name)
        assert f"**{name} — {gib:.2f} GiB**" in text
        assert f"`{' '.join(formula.split())}`" in text
    assert tr("en", "comp.actor_optimizer").replace("*", "\\*") in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_both_languages(lang: str) -> None:
    at = run_app({"lang": lang})
    assert at.radio(key=keys.LANG).value == lang
    assert metrics(at) == expected_headline(lang=lang)
    assert any(tr(lang, "est.title") in m.value for m in at.markdown)


def test_language_switch_translates_labels_and_help() -> None:
    at = run_app()
    assert at.number_input(key=keys.NUM_GPUS).label == "GPU count"
    at.radio(key=keys.LANG).set_value("zh").run()
    assert not at.exception
    assert at.number_input(key=keys.NUM_GPUS).label == "GPU 数量"
    assert "共置资源池" in at.number_input(key=keys.NUM_GPUS).help
    assert tr("zh", "metric.peak") in metrics(at)
    assert qp(at, "lang") == "zh"


# ----------------------------------------------------------------------------- widgets -> headline


@pytest.mark.parametrize(
    ("key", "value", "override"),
    [
        (keys.NUM_GPUS, 16, {"hardware.num_gpus": 16}),
        (keys.GROUP_SIZE, 16, {"rollout.n": 16}),
        (keys.PARAM_OFFLOAD, True, {"actor.fsdp_config.param_offload": True}),
        (keys.GPU, "a100-40gb", {"hardware.gpu": "a100-40gb"}),
    ],
)
def test_widget_change_updates_headline_exactly(key: str, value: object, override: dict) -> None:
    at = run_app()
    before = metrics(at)
    if isinstance(value, bool):
        at.toggle(key=key).set_value(value).run()
    elif isinstance(value, str):
        at.selectbox(key=key).set_value(value).run()
    else:
        at.number_input(key=key).set_value(value).run()
    assert not at.exception
    after = metrics(at)
    assert after == expected_headline(override)
    assert after != before


def test_offload_toggle_changes_peak_in_the_right_direction() -> None:
    at = run_app()
    base = estimate(load_scenario(DEFAULT_PRESET))
    at.toggle(key=keys.PARAM_OFFLOAD).set_value(True).run()
    at.toggle(key=keys.OPTIMIZER_OFFLOAD).set_value(True).run()
    off = estimate(
        load_scenario(
            DEFAULT_PRESET,
            overrides={"actor.fsdp_config.param_offload": True, "actor.fsdp_config.optimizer_offload": True},
        )
    )
    assert metrics(at)[tr("en", "metric.peak")] == f"{off.peak.gib_per_gpu:.2f} GiB"
    assert off.peak.gib_per_gpu <= base.peak.gib_per_gpu


def test_algorithm_picker_applies_the_dapo_recipe() -> None:
    at = run_app()
    train = at.number_input(key=keys.TRAIN_BATCH).value
    at.selectbox(key=keys.ALGO).set_value("DAPO").run()
    assert not at.exception
    assert at.number_input(key=keys.field_key("data.gen_batch_size")).value == 3 * train
    assert at.number_input(key=keys.field_key("actor.clip_ratio_high")).value == pytest.approx(0.28)
    assert qp(at, "algo") == "DAPO"
    at.selectbox(key=keys.ALGO).set_value("PPO").run()
    assert at.number_input(key=keys.field_key("data.gen_batch_size")).value is None
    ppo = load_scenario(DEFAULT_PRESET, overrides={"algorithm.adv_estimator": "gae"})
    r = estimate(load_scenario(ppo, overrides=role_settings(ppo)))  # the switch fills the critic micro-batch
    assert metrics(at)[tr("en", "metric.peak")] == f"{r.peak.gib_per_gpu:.2f} GiB"


def test_model_by_size_is_approximate_and_labelled() -> None:
    at = run_app()
    at.radio(key=keys.MODEL_SOURCE).set_value("size").run()
    at.text_input(key=keys.MODEL_SIZE).set_value("13B dense").run()
    assert not at.exception
    approx = approximate_model(parse_size("13B dense"), "qwen2.5")
    assert any("approximate" in c.value for c in at.caption)
    r = estimate(load_scenario(DEFAULT_PRESET, overrides={"model.config": approx.config}))
    assert metrics(at)[tr("en", "metric.peak")] == f"{r.peak.gib_per_gpu:.2f} GiB"
    assert qp(at, "size") == "13B dense"
    at.text_input(key=keys.MODEL_SIZE).set_value("thirteen").run()
    assert not at.exception and at.error  # a message, and no numbers from a model we could not build


def test_preset_picker_loads_every_field() -> None:
    others = [p for p in sorted(scenario_presets()) if p != DEFAULT_PRESET and _preset_loads(p)]
    assert others, "the presets directory ships more than one scenario preset"
    at = run_app()
    at.number_input(key=keys.NUM_GPUS).set_value(16).run()
    at.selectbox(key=keys.PRESET).set_value(others[0]).run()
    assert not at.exception
    s = load_scenario(others[0])
    assert at.number_input(key=keys.NUM_GPUS).value == s.hardware.num_gpus
    assert at.number_input(key=keys.GROUP_SIZE).value == s.rollout.n
    assert metrics(at) == expected_headline(preset=others[0])
    assert qp(at, "preset") == others[0] and qp(at, "hardware.num_gpus") is None


def test_inputs_survive_page_switches() -> None:
    at = run_app()
    at.number_input(key=keys.NUM_GPUS).set_value(16).run()
    at.toggle(key=keys.PARAM_OFFLOAD).set_value(True).run()
    at.switch_page("ui/pages/compare.py").run()
    at.switch_page("ui/pages/estimate.py").run()
    assert not at.exception
    assert at.number_input(key=keys.NUM_GPUS).value == 16
    assert at.toggle(key=keys.PARAM_OFFLOAD).value is True
    expected = expected_headline({"hardware.num_gpus": 16, "actor.fsdp_config.param_offload": True})
    assert metrics(at) == expected


# ----------------------------------------------------------------------------- URL


def test_url_round_trips_a_scenario() -> None:
    at = run_app()
    at.number_input(key=keys.NUM_GPUS).set_value(16).run()
    at.number_input(key=keys.GROUP_SIZE).set_value(8).run()
    at.toggle(key=keys.PARAM_OFFLOAD).set_value(True).run()
    at.selectbox(key=keys.GPU).set_value("h200-141gb").run()
    at.number_input(key=keys.field_key("data.mean_response_length")).set_value(300).run()
    at.number_input(key=keys.field_key("overheads.fragmentation_fraction")).set_value(0.2).run()
    assert not at.exception
    params = {k: qp(at, k) for k in at.query_params}
    assert params["hardware.num_gpus"] == "16" and params["rollout.n"] == "8"
    assert "data.train_batch_size" not in params  # only what differs from the preset

    again = run_app(params)
    for path in widget_fields():
        assert field_value(again, path) == field_value(at, path), path
    assert metrics(again) == metrics(at)


def test_url_params_set_widgets() -> None:
    at = run_app({"preset": DEFAULT_PRESET, "hardware.num_gpus": "16", "rollout.n": "8", "model.path": "qwen3-8b"})
    assert at.number_input(key=keys.NUM_GPUS).value == 16
    assert at.number_input(key=keys.GROUP_SIZE).value == 8
    assert at.selectbox(key=keys.MODEL_PATH).value == "qwen3-8b"
    assert metrics(at) == expected_headline({"hardware.num_gpus": 16, "rollout.n": 8, "model.path": "qwen3-8b"})


def test_tampered_url_gives_a_message_not_a_crash() -> None:
    at = run_app(
        {
            "preset": "no-such-preset",
            "lang": "xx",
            "hardware.num_gpus": "abc",
            "nonsense.key": "1",
            "model.config": "{not json",
            "algo": "PPO",
            "rollout.gpu_memory_utilization": "0.7",
            "hardware.gpu": "tpu-v9",
            "actor.strategy": "deepspeed",
            "rollout.n": "2000",
            "model.use_fused_kernels": "1",
        }
    )
    text = " ".join(w.value for w in at.warning)
    for needle in (
        "no-such-preset",
        "hardware.num_gpus",
        "rollout.n",
        "nonsense.key",
        "model.config",
        "xx",
        "tpu-v9",
        "actor.strategy",
    ):
        assert needle in text, needle
    # the good parameter is used, the page works
    assert at.number_input(key=keys.GPU_UTIL).value == pytest.approx(0.7)
    assert at.toggle(key=keys.field_key("model.use_fused_kernels")).value is True
    assert metrics(at) == expected_headline({"rollout.gpu_memory_utilization": 0.7, "model.use_fused_kernels": True})


def test_closed_sections_keep_their_values_and_open_on_a_problem() -> None:
    at = run_app(open_sections=False)
    assert at.number_input(key=keys.NUM_GPUS).value is not None
    assert keys.GROUP_SIZE not in [w.key for w in at.number_input]  # the Batch section is closed: not built
    assert field_value(at, "rollout.n") == 5  # but its value is there
    at.session_state[keys.section_key("batch")] = True
    at.run()
    at.number_input(key=keys.GROUP_SIZE).set_value(8).run()
    at.session_state[keys.section_key("batch")] = False
    at.run()
    assert field_value(at, "rollout.n") == 8
    assert metrics(at) == expected_headline({"rollout.n": 8})
    # a problem in a closed section opens it and shows the message under the widget
    at.session_state[keys.field_key("data.mean_response_length")] = 5000
    at.run()
    assert at.session_state[keys.section_key("lengths")] is True
    assert any("mean_response_length" in m.value for m in at.sidebar.markdown)


def test_invalid_combination_shows_inline_message() -> None:
    at = run_app()
    at.number_input(key=keys.NUM_GPUS).set_value(12).run()
    assert not at.exception
    assert not at.metric
    errors = " ".join(e.value for e in at.error)
    assert "hardware.num_gpus (12)" in errors
    # and under the widget itself
    assert any("multiple of hardware.gpus_per_node" in m.value for m in at.sidebar.markdown)
    at.number_input(key=keys.NUM_GPUS).set_value(16).run()
    assert metrics(at) == expected_headline({"hardware.num_gpus": 16})


# ----------------------------------------------------------------------------- config.json upload


def test_bad_upload_keeps_the_previous_model() -> None:
    at = run_app()
    at.radio(key=keys.MODEL_SOURCE).set_value("config").run()
    preset_headline = expected_headline()
    assert metrics(at) == preset_headline  # nothing uploaded yet: the preset's model

    at.file_uploader(key=keys.CONFIG_UPLOAD).upload("config.json", b"{ this is not json", "application/json").run()
    assert not at.exception
    assert any("config.json" in e.value and "JSON" in e.value for e in at.error)
    assert metrics(at) == preset_headline

    good = dict(get_model("qwen2.5-0.5b").config)
    at.file_uploader(key=keys.CONFIG_UPLOAD).set_value(
        ("small.json", json.dumps(good).encode(), "application/json")
    ).run()
    assert not at.exception and not at.error
    cfg = {**good, "_name_or_path": "small.json"}
    small = expected_headline({"model.config": cfg})
    assert metrics(at) == small

    bad_arch = {**good, "model_type": "bert"}
    at.file_uploader(key=keys.CONFIG_UPLOAD).set_value(
        ("bert.json", json.dumps(bad_arch).encode(), "application/json")
    ).run()
    assert not at.exception
    assert any("bert" in e.value for e in at.error)
    assert metrics(at) == small  # the previous (good) model is kept
    at.number_input(key=keys.NUM_GPUS).set_value(16).run()  # and the page stays usable
    assert metrics(at) == expected_headline({"model.config": cfg, "hardware.num_gpus": 16})


def test_pasted_config_is_used() -> None:
    at = run_app()
    at.radio(key=keys.MODEL_SOURCE).set_value("config").run()
    cfg = dict(get_model("llama3.2-1b").config)
    at.text_area(key=keys.CONFIG_PASTE).input(json.dumps(cfg)).run()
    assert not at.exception
    expected = expected_headline({"model.config": {**cfg, "_name_or_path": "pasted config.json"}})
    assert metrics(at) == expected
    assert "model.config" in at.query_params  # a custom model travels in the link


# ----------------------------------------------------------------------------- pages


@pytest.mark.parametrize("page", PAGES)
def test_each_page_runs(page: str) -> None:
    for lang in ("en", "zh"):
        at = run_app({"lang": lang})
        at.switch_page(page).run()
        assert not at.exception, (page, lang, [e.value for e in at.exception])


def test_compare_page_aligns_scenarios() -> None:
    at = run_app()
    at.switch_page("ui/pages/compare.py").run()
    assert not at.exception
    peaks = [m.value for m in at.metric if m.label == tr("en", "metric.peak")]
    gae = estimate(load_scenario(DEFAULT_PRESET, overrides={"algorithm.adv_estimator": "gae"}))
    grpo = estimate(load_scenario(DEFAULT_PRESET))
    assert peaks == [f"{gae.peak.gib_per_gpu:.2f} GiB", f"{grpo.peak.gib_per_gpu:.2f} GiB"]
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    ranges = {tuple(v["range"]) for k, v in spec["layout"].items() if k.startswith("yaxis")}
    assert len(ranges) == 1  # one shared y range
    diff = at.dataframe[-1].value
    assert "algorithm.adv_estimator" in diff.index
    # a bad change line gives a message in its column, not a crash
    at.text_area(key=keys.cmp_overrides(1)).input("rollout.n=abc").run()
    assert not at.exception and at.error


@pytest.mark.parametrize("quick", ["ppo_grpo", "offload", "seed001", "n"])
def test_quick_comparisons_run(quick: str) -> None:
    at = run_app()
    at.switch_page("ui/pages/compare.py").run()
    options = at.pills(key=keys.CMP_QUICK).options
    assert tr("en", f"cmp.quick.{quick}") in options, f"quick comparison {quick!r} is not offered: {options}"
    at.pills(key=keys.CMP_QUICK).set_value(quick).run()
    assert not at.exception
    peaks = [m for m in at.metric if m.label == tr("en", "metric.peak")]
    assert len(peaks) == at.number_input(key=keys.CMP_COUNT).value


def test_advice_is_offered_and_applies_when_it_does_not_fit() -> None:
    at = run_app({"hardware.gpu": "a100-40gb", "rollout.gpu_memory_utilization": "0.9"})
    r = estimate(
        load_scenario(DEFAULT_PRESET, overrides={"hardware.gpu": "a100-40gb", "rollout.gpu_memory_utilization": 0.9})
    )
    assert not (r.peak.fits and r.peak.worst_case_fits)
    buttons = [b for b in at.button if b.key and b.key.startswith("adv_apply_")]
    assert buttons, "a scenario that does not fit shows the advisor's apply buttons"
    buttons[0].click().run()
    assert not at.exception
    assert metrics(at)[tr("en", "metric.peak")] != f"{r.peak.gib_per_gpu:.2f} GiB"


def test_verl_import_applies_to_inputs() -> None:
    at = run_app()
    at.switch_page("ui/pages/verl_io.py").run()
    at.text_area(key=keys.VERL_IMPORT_TEXT).input(
        "python3 -m verl.trainer.main_ppo \\\n actor_rollout_ref.rollout.n=8 \\\n trainer.n_gpus_per_node=8 \\\n"
        " actor_rollout_ref.actor.fsdp_config.param_offload=True"
    ).run()
    assert not at.exception
    at.button(key=keys.VERL_IMPORT_APPLY).click().run()
    assert not at.exception
    assert field_value(at, "rollout.n") == 8
    assert field_value(at, "actor.fsdp_config.param_offload") is True


# ----------------------------------------------------------------------------- i18n completeness


def test_every_text_exists_in_both_languages() -> None:
    assert set(STRINGS["en"]) == set(STRINGS["zh"])
    used: set[str] = set()
    for path in list((ROOT / "ui").rglob("*.py")) + [ROOT / "app.py"]:
        used |= set(re.findall(r"""\btr\(\s*\w+,\s*["']([\w.]+)["']""", path.read_text()))
    missing = sorted(k for k in used if k not in STRINGS["en"])
    assert not missing, missing


def test_field_help_is_translated() -> None:
    placed = {p for paths in SECTIONS.values() for p in paths}
    for path in placed:
        if field(path) is None:
            continue
        text = english_help(path)
        assert text, f"{path} has no help text"
        assert path in FIELD_HELP_ZH, f"no Chinese help for {path}: {text!r}"
    # Help lives on the pydantic field and its translation is keyed by the field's path: every described
    # widget field has one, and no translation is left for a field that no longer exists.
    described = {p for p in widget_fields() if english_help(p)}
    assert described <= set(FIELD_HELP_ZH), sorted(described - set(FIELD_HELP_ZH))
    every = {p for p in all_fields() if english_help(p)}
    assert set(FIELD_HELP_ZH) <= every, sorted(set(FIELD_HELP_ZH) - every)


def test_verl_checks_are_shown_once_with_their_severity() -> None:
    """estimate() also lists verl's config checks in report.warnings ("verl: ..."); the page shows them once,
    from check_config, as errors or warnings by severity."""
    from calculator.verl.checks import check_config
    from ui.i18n_messages import check_text
    from ui.text import md

    overrides = {"actor.ppo_micro_batch_size_per_gpu": 7}
    checks = check_config(load_scenario(DEFAULT_PRESET, overrides=overrides))
    assert any(c.severity == "error" for c in checks)
    at = run_app({k: str(v) for k, v in overrides.items()})
    errors, warnings = [e.value for e in at.error], [w.value for w in at.warning]
    for c in checks:
        shown_in = errors if c.severity == "error" else warnings
        text = check_text(c.rule, md(c.message, limit=2000), "en")  # the rule's headline, then verl's message
        assert sum(text == v for v in errors + warnings) == 1, c.message
        assert text in shown_in
    assert not any(v.startswith("verl: ") for v in errors + warnings)


def test_verl_import_resets_inherited_mean_and_matches_the_cli(tmp_path) -> None:
    """Issue 13 item 9: a pasted script with max_response_length=4096 does not keep the preset's mean 600; the
    dashboard's import and the CLI's --verl give the same step time for the same script."""
    import json

    from calculator.cli.main import main

    script = "python3 -m verl.trainer.main_ppo \\\n data.max_response_length=4096 \\\n actor_rollout_ref.rollout.n=8\n"
    at = run_app()
    at.switch_page("ui/pages/verl_io.py").run()
    at.text_area(key=keys.VERL_IMPORT_TEXT).input(script).run()
    assert not at.exception
    assert any("data.mean_response_length reset from 600" in c.value for c in at.caption)
    at.button(key=keys.VERL_IMPORT_APPLY).click().run()
    at.switch_page("ui/pages/estimate.py").run()
    assert not at.exception
    path = tmp_path / "run.sh"
    path.write_text(script)
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["estimate", DEFAULT_PRESET, "--verl", str(path), "--json"]) == 0
    cli = json.loads(out.getvalue())
    assert metrics(at)[tr("en", "metric.step_time")] == f"{cli['time']['step_s']:,.1f} s"
    mean_kept = estimate(load_scenario(DEFAULT_PRESET, overrides={"data.max_response_length": 4096, "rollout.n": 8}))
    assert cli["time"]["step_s"] != mean_kept.time.step_s  # the mean 600 would give another step time
