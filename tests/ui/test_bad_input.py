"""Bad input in the app (issue #8): uploaded and pasted config.json, verl launch scripts, tampered links,
absurd numbers, a broken team presets directory.

Every case must give a clear message and leave the app usable: no exception, nothing executed (canary
files that a shell would create stay absent), nothing written, no user text rendered as markup, and the
headline renders again afterwards. AppTest drives the pages. The bounded parsers the app relies on are tested
where they live, with CPU-time bounds: tests/inputs/test_presets.py (YAML, JSON, preset files),
tests/inputs/test_overrides.py, tests/model/test_architecture.py (config.json), tests/verl/test_shell.py and
tests/verl/test_imports.py (launch scripts). The real-browser check that an injected link or image never reaches
the DOM is in tests/system/test_browser.py. How long the hostile cases take through the app is printed by
``benchmarks/bench_bad_input.py`` (no wall-clock assertion here).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from calculator import estimate, load_scenario
from calculator.inputs.presets import MAX_INPUT_BYTES, MAX_NESTING, model_presets, preset_problems
from tests.support.app_fields import field_value
from tests.support.hostile import DEEP_JSON, HOSTILE_VERL_TEXTS, PAYLOAD, TAMPERED, UNESCAPED_MARKUP, injection_script
from tests.support.paths import APP
from tests.support.presets_env import BROKEN_FILES, presets_dir, write_team_dir
from ui import keys
from ui.i18n import tr
from ui.state import DEFAULT_PRESET
from ui.text import html, md

PEAK = tr("en", "metric.peak")


def small_config() -> dict:
    return dict(model_presets()["qwen2.5-0.5b"].config)


# ----------------------------------------------------------------------------- AppTest helpers


def run_app(params: dict[str, str] | None = None, page: str | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    for name in keys.LAZY_SECTIONS:
        at.session_state[keys.section_key(name)] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    if page:
        at.switch_page(page).run()
        assert not at.exception, [e.value for e in at.exception]
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def default_peak(overrides: dict | None = None) -> str:
    return f"{estimate(load_scenario(DEFAULT_PRESET, overrides=overrides or {})).peak.gib_per_gpu:.2f} GiB"


def messages(at: AppTest) -> list[str]:
    """Every error, warning and info text on the page (main area and sidebar)."""
    return [e.value for e in [*at.error, *at.warning, *at.info]]


def texts(at: AppTest) -> list[tuple[str, bool]]:
    """(source, rendered-as-HTML?) of every element that renders Markdown."""
    out = [(e.value, False) for e in [*at.error, *at.warning, *at.info, *at.success, *at.caption, *at.toast]]
    out += [(m.value, bool(m.proto.allow_html)) for m in at.markdown]
    return out


def assert_no_markup(at: AppTest) -> None:
    """User text (marked EVIL) reaches no Markdown element as a link, image, tag, LaTeX or directive."""
    for source, as_html in texts(at):
        if "EVIL" not in source:
            continue
        assert not UNESCAPED_MARKUP.search(source), source[:500]
        if as_html:
            assert "<img" not in source and "<script" not in source, source[:500]


def assert_usable(at: AppTest) -> None:
    """No exception, and the estimate page shows its headline (switching to it when needed)."""
    assert not at.exception, [e.value for e in at.exception]
    if PEAK not in metrics(at):
        at.switch_page("ui/pages/estimate.py").run()
        assert not at.exception, [e.value for e in at.exception]
    assert PEAK in metrics(at), messages(at)


# ----------------------------------------------------------------------------- config.json upload and paste (app)

BAD_CONFIGS: dict[str, tuple[bytes, str]] = {
    "malformed": (b"{ this is not json", "not valid JSON"),
    "huge": (b'{"model_type": "qwen2", "pad": "' + b"x" * (MAX_INPUT_BYTES + 10) + b'"}', "larger than 2 MiB"),
    "deep": (DEEP_JSON.encode(), f"nested deeper than {MAX_NESTING}"),
    "list": (b"[1, 2, 3]", "must be a JSON object"),
    "wrong-type": (json.dumps({**small_config(), "hidden_size": "big"}).encode(), "hidden_size"),
    "nan": (json.dumps({**small_config(), "num_hidden_layers": float("nan")}).encode(), "num_hidden_layers"),
    "unknown-model-type": (json.dumps({**small_config(), "model_type": "bert"}).encode(), "bert"),
    "billion-layers": (json.dumps({**small_config(), "num_hidden_layers": 10**9}).encode(), "at most 4,096"),
    "not-utf8": (b'{"model_type": "\xff\xfe"}', "UTF-8"),
}


# Every bad config uploaded and pasted, except bytes that are not UTF-8 pasted: a text area only ever holds text.
HOW = [
    (case, how) for case in sorted(BAD_CONFIGS) for how in ("upload", "paste") if (case, how) != ("not-utf8", "paste")
]


@pytest.mark.parametrize(("case", "how"), HOW, ids=[f"{c}-{h}" for c, h in HOW])
def test_bad_config_keeps_the_previous_model(case: str, how: str) -> None:
    data, message = BAD_CONFIGS[case]
    at = run_app()
    at.radio(key=keys.MODEL_SOURCE).set_value("config").run()
    before = metrics(at)
    assert before[PEAK] == default_peak()
    if how == "upload":
        at.file_uploader(key=keys.CONFIG_UPLOAD).upload("config.json", data, "application/json").run()
    else:  # set_value: as a client would that ignores the text area's max_chars (the browser enforces it)
        assert at.text_area(key=keys.CONFIG_PASTE).max_chars == MAX_INPUT_BYTES + 1
        at.text_area(key=keys.CONFIG_PASTE).set_value(data.decode()).run()
    assert not at.exception, [e.value for e in at.exception]
    errors = " ".join(e.value for e in at.error)
    assert message in errors, errors[:1000]
    assert tr("en", "err.config_rejected", why="").split(":")[0] in errors
    assert metrics(at) == before  # the model in use did not change
    # and a good config still works afterwards
    good = small_config()
    at.file_uploader(key=keys.CONFIG_UPLOAD).upload("good.json", json.dumps(good).encode(), "application/json").run()
    assert not at.exception and not at.error
    assert metrics(at)[PEAK] == default_peak({"model.config": {**good, "_name_or_path": "good.json"}})


def test_upload_file_name_is_not_markup() -> None:
    at = run_app()
    at.radio(key=keys.MODEL_SOURCE).set_value("config").run()
    at.file_uploader(key=keys.CONFIG_UPLOAD).upload(PAYLOAD + ".json", b"{ bad", "application/json").run()
    assert not at.exception
    assert any("EVIL" in e.value for e in at.error)
    assert_no_markup(at)
    assert_usable(at)


def test_config_name_inside_the_config_is_not_markup() -> None:
    at = run_app()
    at.radio(key=keys.MODEL_SOURCE).set_value("config").run()
    cfg = {**small_config(), "_name_or_path": PAYLOAD}
    at.text_area(key=keys.CONFIG_PASTE).input(json.dumps(cfg)).run()
    assert not at.exception and PEAK in metrics(at)
    assert any("EVIL" in c.value for c in at.caption)  # the model name is shown, escaped
    assert_no_markup(at)


# ----------------------------------------------------------------------------- verl page (app)


@pytest.fixture()
def verl_page() -> AppTest:
    return run_app(page="ui/pages/verl_io.py")


def test_verl_page_never_runs_the_script(verl_page: AppTest, tmp_path: Path) -> None:
    at = verl_page
    canary = tmp_path / "canary"
    at.text_area(key=keys.VERL_IMPORT_TEXT).input(injection_script(canary)).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not list(tmp_path.iterdir()), "a shell command ran"
    notes = " ".join(c.value for c in at.caption)
    assert "unresolved shell variable" in notes
    at.button(key=keys.VERL_IMPORT_APPLY).click().run()  # the part that could be read applies
    assert field_value(at, "rollout.n") == 8
    assert_no_markup(at)
    assert_usable(at)


@pytest.mark.parametrize("text", list(HOSTILE_VERL_TEXTS.values()), ids=list(HOSTILE_VERL_TEXTS))
def test_verl_page_survives_hostile_text(verl_page: AppTest, tmp_path: Path, text: str) -> None:
    at = verl_page
    canary = tmp_path / "canary"
    at.text_area(key=keys.VERL_IMPORT_TEXT).input(text.replace("{canary}", str(canary))).run()
    assert not at.exception, [e.value for e in at.exception]
    assert messages(at) or at.caption  # a problem, a note or "nothing to change": something is said
    assert not canary.exists()
    assert_no_markup(at)
    assert_usable(at)


def test_verl_page_refuses_huge_text(verl_page: AppTest) -> None:
    at = verl_page
    huge = "actor_rollout_ref.rollout.n=4\n" * (MAX_INPUT_BYTES // 20)
    assert at.text_area(key=keys.VERL_IMPORT_TEXT).max_chars == MAX_INPUT_BYTES + 1  # the browser stops here
    at.text_area(key=keys.VERL_IMPORT_TEXT).set_value(huge).run()  # a client that ignores max_chars
    assert not at.exception
    assert any(tr("en", "err.text_too_large", mib=2) in e.value for e in at.error)
    assert_usable(at)


def test_compare_page_survives_hostile_overrides() -> None:
    at = run_app(page="ui/pages/compare.py")
    bomb_value = "[&a [1,1,1,1,1,1,1,1,1], &b [*a,*a,*a,*a,*a,*a,*a,*a,*a], &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]]"
    at.text_input(key=keys.cmp_label(0)).input(PAYLOAD[:60]).run()
    at.text_area(key=keys.cmp_overrides(1)).input(
        f"rollout.n={bomb_value}\nhardware.num_gpus=1e30\nmodel.config={DEEP_JSON[:2000]}\n{PAYLOAD}\n"
    ).run()
    assert not at.exception, [e.value for e in at.exception]
    errors = " ".join(e.value for e in at.error)
    assert "rollout.n" in errors or "hardware.num_gpus" in errors or "model.config" in errors
    assert_no_markup(at)
    assert_usable(at)


# ----------------------------------------------------------------------------- tampered links (app)


def test_tampered_link_is_ignored_with_messages() -> None:
    at = run_app(TAMPERED)
    warning = " ".join(w.value for w in at.warning)
    for key in ("nonsense.key", "hardware.num_gpus", "rollout.n", "data.train_batch_size", "model.path",
                "actor.ppo_mini_batch_size", "rollout.gpu_memory_utilization", "model.config", "hardware.gpu",
                "data.max_prompt_length", "data.max_response_length", "actor.strategy", "xxxxxxxx"):  # fmt: skip
        assert key in warning, key
    assert len(warning) < 20_000  # long values are cut, not echoed in full
    assert_no_markup(at)
    assert metrics(at)[PEAK] == default_peak()  # every bad parameter ignored: the preset's numbers


def test_oversized_query_string_is_dropped() -> None:
    """Streamlit itself ignores a query string over 512 KiB: the app opens on its defaults."""
    at = run_app({"model.config": DEEP_JSON, "hardware.num_gpus": "16"})
    assert metrics(at)[PEAK] == default_peak()


def test_link_with_too_many_parameters() -> None:
    at = run_app({f"junk{i}": str(i) for i in range(500)})
    warning = " ".join(w.value for w in at.warning)
    assert tr("en", "url.too_many", n=300) in warning
    assert metrics(at)[PEAK] == default_peak()


@pytest.mark.parametrize("page", ["ui/pages/tradeoffs.py", "ui/pages/planner.py", "ui/pages/verl_io.py"])
def test_tampered_link_on_other_pages(page: str) -> None:
    at = run_app({"preset": PAYLOAD, "rollout.n": "-1", PAYLOAD: "1"}, page=page)
    assert any("EVIL" in w.value for w in at.warning)
    assert_no_markup(at)


# ----------------------------------------------------------------------------- absurd numbers (app)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (keys.NUM_GPUS, 0),
        (keys.NUM_GPUS, -8),
        (keys.NUM_GPUS, 10**30),
        (keys.NUM_GPUS, 1e30),
        (keys.GROUP_SIZE, 0),
        (keys.GROUP_SIZE, 10**12),
        (keys.GPU_UTIL, 0.0),
        (keys.GPU_UTIL, -1.0),
        (keys.GPU_UTIL, 1e30),
        (keys.GPU_UTIL, float("nan")),
        (keys.GPU_UTIL, float("inf")),
        (keys.field_key("data.max_response_length"), 10**9),
        (keys.field_key("overheads.fragmentation_fraction"), float("nan")),
        (keys.field_key("actor.optim.lr"), 1e30),
    ],
)
def test_absurd_numbers_give_a_message_then_recover(key: str, value: float) -> None:
    """Streamlit clamps a number outside a widget's bounds to the bound; whatever arrives, the calculator
    either estimates it or names the field, and a good value brings the headline back.

    (NaN sent for an *integer* widget is not reachable from the browser, which never sends NaN; a forged
    websocket message with one fails inside Streamlit's own number_input, in the sender's session only.)"""
    at = run_app()
    assert key in [w.key for w in at.number_input], f"{key} is not a number input (any more): fix the case list"
    good = at.number_input(key=key).value
    at.number_input(key=key).set_value(value).run()
    assert not at.exception, [e.value for e in at.exception]
    assert PEAK in metrics(at) or at.error
    if PEAK not in metrics(at):  # no estimate: the message names the field (in the error or under the widget)
        shown = " ".join([e.value for e in at.error] + [m.value for m in at.sidebar.markdown])
        assert keys.field_of_key(key) in shown, shown[:1000]
    at.number_input(key=key).set_value(good).run()
    assert not at.exception
    assert metrics(at)[PEAK] == default_peak()


@pytest.mark.parametrize("text", ["1e30B", "-7B", "0B", "nanB", "7B-A99B MoE", "7B-A0B", PAYLOAD[:100]])
def test_bad_model_size_names_the_input(text: str) -> None:
    at = run_app()
    at.radio(key=keys.MODEL_SOURCE).set_value("size").run()
    assert at.text_input(key=keys.MODEL_SIZE).max_chars == 200
    at.text_input(key=keys.MODEL_SIZE).set_value(text).run()
    assert not at.exception
    assert any(tr("en", "input.model_size") in e.value for e in at.error)
    assert_no_markup(at)
    at.text_input(key=keys.MODEL_SIZE).set_value("7B dense").run()
    assert not at.exception and PEAK in metrics(at)


# ----------------------------------------------------------------------------- team presets directory


@pytest.fixture()
def team_presets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """RLPLAN_PRESETS_DIR set to a temporary team directory (with a valid team GPU and broken files)."""
    with presets_dir(monkeypatch, write_team_dir(tmp_path / "team")) as root:
        yield root


def test_app_runs_on_the_good_presets_and_names_the_broken_files(team_presets: Path) -> None:
    at = run_app()
    warning = " ".join(w.value for w in at.warning)
    assert tr("en", "err.preset_files", n=len(BROKEN_FILES)) in warning
    for name in BROKEN_FILES:
        assert name in warning, name
    assert any("Team H100 (ours)" in o for o in at.selectbox(key=keys.GPU).options)
    assert metrics(at)[PEAK] == default_peak()
    at.selectbox(key=keys.GPU).set_value("team-h100").run()
    assert not at.exception
    assert metrics(at)[PEAK] == default_peak({"hardware.gpu": "team-h100"})
    for page in ("ui/pages/compare.py", "ui/pages/planner.py", "ui/pages/verl_io.py"):
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert any("typo.yaml" in w.value for w in at.warning), page


def test_presets_dir_that_does_not_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with presets_dir(monkeypatch, tmp_path / "missing"):
        assert any("not a directory" in p for p in preset_problems())
        at = run_app()
        assert any("not a directory" in w.value for w in at.warning)
        assert metrics(at)[PEAK] == default_peak()


# ----------------------------------------------------------------------------- escaping


def test_md_escapes_links_images_html_and_latex() -> None:
    out = md(PAYLOAD + " www.evil.example https://evil.example " + "z" * 1000)
    assert not UNESCAPED_MARKUP.search(out)
    assert "https\u200b://" in out and "www\u200b." in out and len(out) < 600
    assert md("mail me@evil.example") == "mail me\u200b@evil.example"
    assert md("hardware.num_gpus (12): must divide") == "hardware.num_gpus (12): must divide"  # plain text unchanged
    # the one HTML snippet (inline field errors under a widget): entities, so no tag survives
    assert html("x <img src=x onerror=alert(1)> & y") == "x &lt;img src=x onerror=alert(1)&gt; &amp; y"
