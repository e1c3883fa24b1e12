"""Bad input everywhere (issue #8): uploaded and pasted config.json, YAML, verl launch scripts, tampered
links, absurd numbers, a broken team presets directory.

Every case must give a clear message and leave the app usable: no exception, nothing executed (canary
files that a shell would create stay absent), nothing written, no user text rendered as markup, and the
headline renders again afterwards. Calculator-level tests pin the bounded parsers (size, nesting, YAML
alias expansion) and the config.json reader; AppTest drives the pages; one real-browser test checks that
an injected link or image never reaches the DOM.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst
from streamlit.testing.v1 import AppTest

from calculator import estimate, load_scenario
from calculator.errors import InputError
from calculator.inputs.overrides import parse_value
from calculator.inputs.presets import (
    MAX_INPUT_BYTES,
    MAX_NESTING,
    PRESETS_DIR,
    get_gpu,
    gpu_presets,
    load_presets,
    model_presets,
    preset_problems,
    read_json_text,
    read_mapping_file,
    read_yaml_text,
)
from calculator.model.architecture import ArchitectureError, parse_hf_config
from calculator.verl import import_verl_text
from tests.presets_env import clear_preset_caches
from ui import keys
from ui.i18n import tr
from ui.state import DEFAULT_PRESET
from ui.text import html, md

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
PEAK = tr("en", "metric.peak")

# A "billion laughs" document: 9 levels of 9 aliases = 9**9 (387 million) values from 324 bytes.
BILLION_LAUGHS = "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n" + "".join(
    f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)
DEEP_JSON = "[" * 100_000 + "]" * 100_000  # json.loads alone raises RecursionError on this
# Markup a user could smuggle into any echoed text: a tracking image, a link, raw HTML, LaTeX, a directive.
PAYLOAD = (
    "![EVIL](http://evil.example/p.png) [EVIL](http://evil.example) <img src=x onerror=alert('EVIL')> $EVIL$ :red[EVIL]"
)


def small_config() -> dict:
    return dict(model_presets()["qwen2.5-0.5b"].config)


# ----------------------------------------------------------------------------- AppTest helpers


def run_app(params: dict[str, str] | None = None, page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
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


UNESCAPED_MARKUP = re.compile(r"(?<!\\)(\]\(|<\s*(img|script|a|iframe|svg)\b|\$EVIL|\[EVIL)|https?://|www\.", re.I)


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


# ----------------------------------------------------------------------------- bounded YAML and JSON (calculator)


def test_billion_laughs_is_refused_quickly() -> None:
    assert len(yaml.safe_load(BILLION_LAUGHS)["i"]) == 9  # PyYAML alone builds it from shared references
    start = time.perf_counter()
    with pytest.raises(InputError, match="alias"):
        read_yaml_text(BILLION_LAUGHS, "bomb.yaml")
    assert time.perf_counter() - start < 0.5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: &a [*a]\n", "recursive alias"),
        ("[" * 100_000 + "]" * 100_000, f"nested deeper than {MAX_NESTING}"),
        ("".join("  " * i + "-\n" for i in range(200)), f"nested deeper than {MAX_NESTING}"),
        # each alias adds depth: 60 + 10 levels once expanded, though neither anchor is deeper than 64
        ("a: &a " + "[" * 60 + "1" + "]" * 60 + "\nb: " + "[" * 10 + "*a" + "]" * 10 + "\n", "once YAML aliases"),
        ("[" + ",".join(["1"] * 150_000) + "]", "more than 100,000 values"),
        ("a: " + "x" * (MAX_INPUT_BYTES + 1), "larger than 2 MiB"),
        ("a: " + "9" * 5000, "not valid YAML"),  # more digits than Python converts to int
        ("a: [unclosed\n", "not valid YAML"),
        ("a: 1\n---\nb: 2\n", "not valid YAML"),
    ],
    ids=[
        "recursive",
        "deep-flow",
        "deep-block",
        "deep-by-alias",
        "too-many-values",
        "huge",
        "long-int",
        "malformed",
        "two-docs",
    ],
)
def test_yaml_is_bounded(text: str, message: str) -> None:
    start = time.perf_counter()
    with pytest.raises(InputError, match=message):
        read_yaml_text(text, "input.yaml")
    assert time.perf_counter() - start < 5  # ~0.5 s for the largest here on one idle core


@pytest.mark.parametrize(
    "tag",
    [
        "!!python/object/apply:os.system ['touch {canary}']",
        "!!python/object/new:subprocess.Popen [['touch', '{canary}']]",
        "!!python/name:os.system",
        "!!python/module:os",
    ],
)
def test_yaml_tags_never_execute(tmp_path: Path, tag: str) -> None:
    canary = tmp_path / "canary"
    with pytest.raises(InputError, match="constructor for the tag"):
        read_yaml_text("a: " + tag.format(canary=canary) + "\n", "input.yaml")
    assert not canary.exists()


@pytest.mark.parametrize("parser", ["libyaml", "pure-python"])
def test_both_yaml_parsers_are_bounded(parser: str) -> None:
    """Without libyaml the loader falls back to PyYAML's Python event parser: bounded the same way."""
    from calculator.inputs import presets

    loader_class = presets.BoundedSafeLoader if parser == "libyaml" else presets._bounded_loader(presets._PyEventParser)
    for text in (BILLION_LAUGHS, "[" * 1000 + "]" * 1000, "a: &a [*a]\n"):
        loader = loader_class(text)
        try:
            with pytest.raises(yaml.YAMLError, match="alias|nested"):
                loader.get_single_data()
        finally:
            loader.dispose()


def test_ordinary_yaml_still_loads() -> None:
    text = "base: &b {x: 1, y: [1, 2]}\nuse: *b\nmerged: {<<: *b, z: 3}\nwhen: 2024-01-01\n"
    data = read_yaml_text(text, "ok.yaml")
    assert data["use"] == {"x": 1, "y": [1, 2]} and data["merged"]["z"] == 3
    verl_like = {"data": {f"k{i}": list(range(10)) for i in range(500)}}  # ~6,000 values: far below the bound
    assert read_yaml_text(yaml.safe_dump(verl_like), "verl.yaml") == verl_like


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (DEEP_JSON, f"nested deeper than {MAX_NESTING}"),
        ("[" * 100 + "]" * 100, f"nested deeper than {MAX_NESTING}"),
        ('{"a": 1,,}', r"not valid JSON \(Expecting .*line 1 column 9\)"),
        ('{"a": "' + "x" * MAX_INPUT_BYTES + '"}', "larger than 2 MiB"),
        ('{"a": ' + "9" * 5000 + "}", "not valid JSON"),
    ],
    ids=["deep-100000", "deep-100", "malformed", "huge", "long-int"],
)
def test_json_is_bounded(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        read_json_text(text, "config.json")


def test_override_values_are_bounded() -> None:
    """--set / Hydra values: a YAML bomb or a deep value stays plain text instead of being built."""
    levels = ["&a [1,1,1,1,1,1,1,1,1]"] + [
        f"&{c} [{','.join(['*' + p] * 9)}]" for p, c in zip("abcdefg", "bcdefgh", strict=True)
    ]
    bomb = "[" + ", ".join(levels) + "]"  # 9**8 values
    start = time.perf_counter()
    assert parse_value(bomb) == bomb
    assert parse_value("[" * 50_000 + "]" * 50_000).startswith("[[[")
    assert parse_value("8") == 8 and parse_value("1e-6") == 1e-6
    assert time.perf_counter() - start < 1


# ----------------------------------------------------------------------------- config.json (calculator)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"num_hidden_layers": 10**9}, "at most 4,096"),  # built a 10**9-element list before: the server died
        ({"num_hidden_layers": 10**30}, "at most 4,096"),
        ({"vocab_size": 10**15}, "at most 16,777,216"),
        ({"hidden_size": "3584"}, "'hidden_size' must be a non-negative integer"),
        ({"hidden_size": float("nan")}, "'hidden_size' must be a non-negative integer"),
        ({"hidden_size": 1e30}, "'hidden_size' must be a non-negative integer"),
        ({"num_attention_heads": -4}, "non-negative"),
        ({"num_hidden_layers": True}, "non-negative integer"),
        ({"model_type": "bert"}, "not supported"),
        ({"model_type": ["qwen2"] * 1000}, "not supported"),
        ({"tie_word_embeddings": "no"}, "true or false"),
        ({"model_type": "qwen2_moe", "num_experts": 2, "num_experts_per_tok": 8, "moe_intermediate_size": 64}, "at most"),
        ({"model_type": "qwen2_moe", "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
          "mlp_only_layers": "abc"}, "mlp_only_layers"),
    ],
)  # fmt: skip
def test_bad_config_json_is_an_architecture_error(change: dict, message: str) -> None:
    with pytest.raises(ArchitectureError, match=message) as info:
        parse_hf_config({**small_config(), **change})
    assert len(str(info.value)) < 400  # the offending value is quoted abbreviated


@pytest.mark.parametrize("cfg", [[1, 2, 3], "config", None, 42])
def test_config_json_must_be_an_object(cfg: object) -> None:
    with pytest.raises(ArchitectureError, match="must be a JSON object"):
        parse_hf_config(cfg)


CONFIG_KEYS = [
    "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
    "intermediate_size", "vocab_size", "tie_word_embeddings", "max_position_embeddings", "num_experts",
    "num_experts_per_tok", "moe_intermediate_size", "decoder_sparse_step", "mlp_only_layers", "attention_bias",
]  # fmt: skip
CONFIG_GARBAGE = hst.one_of(
    hst.sampled_from([0, -1, 1, 2, 7, 64, 4096, 4097, 2**20, 2**40, 10**30, 1e30, float("nan"), float("inf"), True,
                      None, "", "8", "qwen2", "qwen3_moe", "mixtral", "deepseek_v3", [], [0, 1], {}, {"a": 1}]),
    hst.integers(-(2**64), 2**64),
    hst.floats(allow_nan=True, allow_infinity=True),
    hst.text(max_size=10),
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hst.dictionaries(hst.sampled_from(CONFIG_KEYS), CONFIG_GARBAGE, max_size=6))
def test_config_fuzz_parses_or_says_why(change: dict) -> None:
    """Any JSON-ish values for a config's fields: an ArchitectureError (a ValueError), or an architecture
    the estimate handles (a report, or an InputError), quickly."""
    cfg = {**small_config(), **change}
    start = time.perf_counter()
    try:
        parse_hf_config(cfg)
    except ValueError:
        return
    try:
        r = estimate(load_scenario(DEFAULT_PRESET, overrides={"model.config": cfg}))
    except InputError:
        return
    assert math.isfinite(r.peak.gib_per_gpu) and r.peak.gib_per_gpu > 0
    assert time.perf_counter() - start < 5


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


@pytest.mark.parametrize("how", ["upload", "paste"])
@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_keeps_the_previous_model(case: str, how: str) -> None:
    data, message = BAD_CONFIGS[case]
    if how == "paste" and case == "not-utf8":
        pytest.skip("a text area only ever holds text")
    at = run_app()
    at.radio(key=keys.MODEL_SOURCE).set_value("config").run()
    before = metrics(at)
    assert before[PEAK] == default_peak()
    start = time.perf_counter()
    if how == "upload":
        at.file_uploader(key=keys.CONFIG_UPLOAD).upload("config.json", data, "application/json").run()
    else:  # set_value: as a client would that ignores the text area's max_chars (the browser enforces it)
        assert at.text_area(key=keys.CONFIG_PASTE).max_chars == MAX_INPUT_BYTES + 1
        at.text_area(key=keys.CONFIG_PASTE).set_value(data.decode()).run()
    assert time.perf_counter() - start < 10
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


# ----------------------------------------------------------------------------- verl launch scripts (calculator)


def injection_script(canary: Path) -> str:
    c = str(canary)
    return textwrap.dedent(
        f"""\
        #!/bin/bash
        set -x; touch {c}.1
        X=$(touch {c}.2)
        Y=`touch {c}.3`
        eval "touch {c}.4"
        source <(echo touch {c}.5)
        N=${{UNSET:=$(touch {c}.6)}}
        touch {c}.7 && python3 -m verl.trainer.main_ppo \\
            actor_rollout_ref.rollout.n=8 \\
            trainer.n_gpus_per_node=$X \\
            trainer.nnodes=$(rm -rf / --no-preserve-root) \\
            data.train_batch_size=`touch {c}.8` \\
            actor_rollout_ref.actor.ppo_mini_batch_size=$(( 2**99 )) | sh -c "touch {c}.9"
        cat > {c}.10 <<EOF
        data.max_prompt_length=1
        EOF
        """
    )


def test_launch_script_is_only_parsed(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    natives, notes = import_verl_text(injection_script(canary))
    assert natives.get("rollout.n") == 8  # the plain override is read
    assert "hardware.num_gpus" not in natives and "data.train_batch_size" not in natives
    joined = " ".join(notes)
    assert "unresolved shell variable" in joined and "rm -rf" in joined  # said, not done
    assert not list(tmp_path.iterdir()), "a shell command ran"


def test_shell_arithmetic_refuses_huge_exponents_and_long_expressions() -> None:
    start = time.perf_counter()
    for expr in ("2**65", "2**-1", "1+" * 100_000 + "1", "(" * 5000 + "1" + ")" * 5000, "1/0", "__import__('os')"):
        natives, notes = import_verl_text(f"actor_rollout_ref.rollout.n=$(( {expr} ))")
        assert "rollout.n" not in natives and any("unresolved" in n for n in notes), expr[:40]
    assert import_verl_text("N=4\nactor_rollout_ref.rollout.n=$(( N * 2 ))")[0]["rollout.n"] == 8
    assert time.perf_counter() - start < 5


def _run_isolated(code: str, timeout_s: float = 10) -> subprocess.CompletedProcess:
    """Run ``code`` in a child Python with 1 GiB of address space and a deadline (a runaway stays contained)."""
    wrapper = (
        "import resource; resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))\n"
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
    ) + code
    return subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True, timeout=timeout_s)


def test_shell_arithmetic_bounds_the_result() -> None:
    nested = "(" * 6 + "2" + ")**64" * 6
    done = _run_isolated(
        "import time; from calculator.verl import import_verl_text\n"
        "t = time.perf_counter()\n"
        f"natives, notes = import_verl_text('actor_rollout_ref.rollout.n=$(( {nested} ))')\n"
        "assert 'rollout.n' not in natives and time.perf_counter() - t < 1, time.perf_counter() - t\n",
        timeout_s=5,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_rlplan_comment_lines_are_bounded() -> None:
    natives, notes = import_verl_text("# rlplan: model.config=" + DEEP_JSON + "\nactor_rollout_ref.rollout.n=4\n")
    assert natives.get("rollout.n") == 4


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
    assert at.session_state[keys.GROUP_SIZE] == 8
    assert_no_markup(at)
    assert_usable(at)


@pytest.mark.parametrize(
    "text",
    [
        BILLION_LAUGHS.replace("i: &i", "data: &i"),  # a verl-looking YAML bomb
        "actor_rollout_ref:\n  rollout: !!python/object/apply:os.system ['touch {canary}']\n",
        "data:\n" + "".join("  " * i + "- \n" for i in range(1, 300)),
        "actor_rollout_ref.rollout.n=" + "[" * 50_000 + "]" * 50_000,
        f"{PAYLOAD}=1\nactor_rollout_ref.{PAYLOAD}=2\n",
    ],
    ids=["alias-bomb", "python-tag", "deep-yaml", "deep-value", "markup-keys"],
)
def test_verl_page_survives_hostile_text(verl_page: AppTest, tmp_path: Path, text: str) -> None:
    at = verl_page
    canary = tmp_path / "canary"
    start = time.perf_counter()
    at.text_area(key=keys.VERL_IMPORT_TEXT).input(text.replace("{canary}", str(canary))).run()
    assert time.perf_counter() - start < 10
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

TAMPERED = {
    "nonsense.key": "1",
    "x" * 10_000: "1",  # a 10,000-character parameter name
    "hardware.num_gpus": "abc",
    "rollout.n": "nan",
    "data.train_batch_size": "1e30",
    "actor.ppo_mini_batch_size": "-8",
    "rollout.gpu_memory_utilization": "NaN",
    "overheads.fragmentation_fraction": "inf",
    "data.max_prompt_length": "9" * 100_000,  # a 100,000-digit number
    "model.path": "y" * 100_000,
    "model.config": "[" * 20_000 + "]" * 20_000,  # json.loads alone: RecursionError
    "data.max_response_length": "[&a [1,1,1,1,1,1,1,1,1], &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]]",
    "hardware.gpu": "<script>alert('EVIL')</script>",
    "actor.strategy": PAYLOAD,
    PAYLOAD: PAYLOAD,
    "lang": PAYLOAD,
    "algo": PAYLOAD,
    "size": PAYLOAD,
}


def test_tampered_link_is_ignored_with_messages() -> None:
    start = time.perf_counter()
    at = run_app(TAMPERED)
    assert time.perf_counter() - start < 30
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
    if key not in [w.key for w in at.number_input]:
        pytest.skip(f"{key} is not a number input")
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


def _team_gpu() -> dict:
    gpu = yaml.safe_load((PRESETS_DIR / "gpus" / "h100-80gb.yaml").read_text())
    gpu.update(id="team-h100", name="Team H100 (ours)", hourly_price_usd=1.23)
    return gpu


def write_team_dir(root: Path, *, broken: bool = True) -> Path:
    gpus = root / "gpus"
    gpus.mkdir(parents=True)
    (gpus / "team-h100.yaml").write_text(yaml.safe_dump(_team_gpu()))
    if broken:
        (gpus / "typo.yaml").write_text("id: typo\nname: Typo\nvendr: nvidia\n")
        (gpus / "bomb.yaml").write_text(BILLION_LAUGHS)
        (gpus / "latin1.yaml").write_bytes(b"id: caf\xe9\n")
        (gpus / "huge.yaml").write_text("a: " + "x" * (MAX_INPUT_BYTES + 1))
        (gpus / "h100-80gb.yaml").write_text("id: h100-80gb\nmemory_gb: [\n")  # a broken copy of a shipped id
        (root / "scenarios").mkdir()
        (root / "scenarios" / "broken.yaml").write_text("- not\n- a mapping\n")
    return root


BROKEN_FILES = ("typo.yaml", "bomb.yaml", "latin1.yaml", "huge.yaml", "h100-80gb.yaml", "broken.yaml")


@pytest.fixture()
def team_presets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """RLPLAN_PRESETS_DIR set to a temporary team directory (with a valid team GPU and broken files)."""
    root = write_team_dir(tmp_path / "team")
    monkeypatch.setenv("RLPLAN_PRESETS_DIR", str(root))
    clear_preset_caches()
    yield root
    monkeypatch.delenv("RLPLAN_PRESETS_DIR")
    clear_preset_caches()


def test_broken_team_files_are_skipped_and_named(team_presets: Path) -> None:
    start = time.perf_counter()
    problems = preset_problems()
    assert time.perf_counter() - start < 5
    for name in BROKEN_FILES:
        assert any(name in p for p in problems), name
    assert any("unknown field" in p for p in problems) and any("alias" in p for p in problems)
    assert all("$RLPLAN_PRESETS_DIR/" in p for p in problems)  # named relative to the team directory
    with pytest.raises(InputError, match="typo.yaml"):
        gpu_presets()  # strict callers (the CLI's preset listing) still get the error
    gpus = gpu_presets(strict=False)
    assert gpus["team-h100"].hourly_price_usd == 1.23
    assert gpus["h100-80gb"].name != "" and "h100-80gb" in gpus  # the shipped preset stands in for its broken copy
    presets = load_presets()
    assert "team-h100" in presets.gpus and len(presets.problems) == len(problems)
    with pytest.raises(InputError, match="preset files skipped: .*typo.yaml"):
        get_gpu("typo")
    s = load_scenario(DEFAULT_PRESET, overrides={"hardware.gpu": "team-h100"})
    assert estimate(s).hardware.gpu_name == "Team H100 (ours)"


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
    monkeypatch.setenv("RLPLAN_PRESETS_DIR", str(tmp_path / "missing"))
    clear_preset_caches()
    try:
        assert any("not a directory" in p for p in preset_problems())
        at = run_app()
        assert any("not a directory" in w.value for w in at.warning)
        assert metrics(at)[PEAK] == default_peak()
    finally:
        monkeypatch.delenv("RLPLAN_PRESETS_DIR")
        clear_preset_caches()


def test_mapping_file_reads_at_most_the_limit(tmp_path: Path) -> None:
    """A preset path that is a pipe or a device is refused before a byte is read (issue 12: regular files only)."""
    with pytest.raises(InputError, match="not a regular file"):
        read_mapping_file("/dev/zero", "gpus preset zero.yaml")
    with pytest.raises(InputError, match="cannot read"):
        read_mapping_file(tmp_path, "gpus preset dir.yaml")


# ----------------------------------------------------------------------------- escaping


def test_md_escapes_links_images_html_and_latex() -> None:
    out = md(PAYLOAD + " www.evil.example https://evil.example " + "z" * 1000)
    assert not UNESCAPED_MARKUP.search(out)
    assert "https\u200b://" in out and "www\u200b." in out and len(out) < 600
    assert md("mail me@evil.example") == "mail me\u200b@evil.example"
    assert md("hardware.num_gpus (12): must divide") == "hardware.num_gpus (12): must divide"  # plain text unchanged
    # the one HTML snippet (inline field errors under a widget): entities, so no tag survives
    assert html("x <img src=x onerror=alert(1)> & y") == "x &lt;img src=x onerror=alert(1)&gt; &amp; y"


# ----------------------------------------------------------------------------- in a real browser


@pytest.mark.browser
def test_injected_markup_never_reaches_the_dom() -> None:
    """The same tampered link in chromium: the messages are there, no injected image, link or script."""
    import os

    if not os.path.exists("/usr/bin/chromium"):
        pytest.skip("/usr/bin/chromium is missing: apt-get install -y chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    from urllib.parse import urlencode, urlparse

    from tests.server import CHROMIUM, CHROMIUM_ARGS, streamlit_server

    params = {"preset": PAYLOAD, "rollout.n": PAYLOAD, PAYLOAD: "1", "hardware.gpu": "<script>alert('EVIL')</script>"}
    with streamlit_server() as server, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            dialogs: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto(f"{server.url}/?{urlencode(params)}")
            metric = page.locator('[data-testid="stMetric"]').filter(has_text=PEAK)
            sync_api.expect(metric.locator('[data-testid="stMetricValue"]')).to_have_text(
                default_peak(), timeout=30_000
            )
            alert = page.locator('[data-testid="stAlert"]').filter(has_text="EVIL").first
            sync_api.expect(alert).to_be_visible()
            assert "![EVIL](http://evil.example/p.png)" in alert.inner_text().replace("\u200b", "")  # shown as text
            assert page.locator('img[src*="evil.example"]').count() == 0
            assert page.locator('a[href*="evil.example"]').count() == 0
            assert page.locator('img[src="x"]').count() == 0
            assert page.locator(".katex").filter(has_text="EVIL").count() == 0
            assert page.locator('[data-testid="stException"]').count() == 0
            assert not dialogs and not [u for u in requests if urlparse(u).hostname == "evil.example"]
        finally:
            browser.close()
    assert "Traceback" not in server.log_text()
