"""Every preset file validates; custom preset directories merge and validate the same way (issue #2); the bounded
YAML / JSON readers refuse hostile input (issue #8) with a message, within a CPU-time bound."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from calculator import estimate, load_scenario
from calculator.errors import InputError
from calculator.inputs.presets import (
    PRESETS_DIR,
    clear_cache,
    get_gpu,
    gpu_presets,
    load_presets,
    model_presets,
    preset_problems,
    read_json_text,
    read_mapping_file,
    read_yaml_text,
    scenario_presets,
)
from tests.support.hostile import BILLION_LAUGHS, HOSTILE_JSON, HOSTILE_YAML
from tests.support.limits import run_cpu_bounded
from tests.support.presets_env import BROKEN_FILES, presets_dir, write_team_dir

MODEL_FILES = sorted((PRESETS_DIR / "models").glob("*.yaml"))
GPU_FILES = sorted((PRESETS_DIR / "gpus").glob("*.yaml"))
SCENARIO_FILES = sorted((PRESETS_DIR / "scenarios").glob("*.yaml"))


def test_counts():
    assert len(MODEL_FILES) >= 25
    assert len(GPU_FILES) >= 15
    assert len(SCENARIO_FILES) >= 6


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
def test_model_preset_file(path: Path):
    text = path.read_text()
    assert text.startswith("#"), "each preset starts with a comment citing its source"
    m = model_presets()[yaml.safe_load(text)["id"]]
    assert m.source and m.published_params_source
    assert m.id == path.stem


@pytest.mark.parametrize("path", GPU_FILES, ids=lambda p: p.stem)
def test_gpu_preset_file(path: Path):
    g = gpu_presets()[path.stem]
    assert g.sources and 0 < g.usable_memory_gib <= g.memory_gb
    assert "EXAMPLE" in path.read_text(), "price is marked as an editable example"


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=lambda p: p.stem)
def test_scenario_preset_estimates(path: Path):
    s = load_scenario(path.stem)
    r = estimate(s)
    assert r.phases and r.peak.gib_per_gpu > 0


def test_seed_scenarios_present():
    ids = set(scenario_presets())
    for seed in (
        "seed000-",
        "seed001-grpo-basic",
        "seed001-grpo-optimized",
        "seed001-grpo-max-optimization",
        "seed002-",
        "seed003-",
    ):
        assert any(i.startswith(seed) for i in ids), seed


def _write(d: Path, kind: str, name: str, data) -> None:
    (d / kind).mkdir(parents=True, exist_ok=True)
    (d / kind / name).write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)


def test_extra_presets_dir_merges(tmp_path, monkeypatch):
    gpu = yaml.safe_load((PRESETS_DIR / "gpus" / "h100-80gb.yaml").read_text())
    gpu.update(id="team-h100", name="Team H100", hourly_price_usd=1.23)
    _write(tmp_path, "gpus", "team-h100.yaml", gpu)
    monkeypatch.setenv("RLPLAN_PRESETS_DIR", str(tmp_path))
    clear_cache()
    try:
        gpus = gpu_presets()
        assert gpus["team-h100"].hourly_price_usd == 1.23
        assert "h100-80gb" in gpus  # shipped ones are still there
    finally:
        monkeypatch.delenv("RLPLAN_PRESETS_DIR")
        clear_cache()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("id: x\nname: y\nvendr: nvidia\n", "unknown field"),  # a typo is an error
        ("- a\n- b\n", "must be a mapping"),
        ("id: [unclosed\n", "not valid YAML"),
        ("!!python/object/apply:os.system ['echo hi']\n", "not valid YAML"),
    ],
)
def test_broken_extra_preset_is_a_clear_error(tmp_path, monkeypatch, content, message):
    _write(tmp_path, "gpus", "bad.yaml", content)
    monkeypatch.setenv("RLPLAN_PRESETS_DIR", str(tmp_path))
    clear_cache()
    try:
        with pytest.raises(InputError, match=message):
            gpu_presets()
    finally:
        monkeypatch.delenv("RLPLAN_PRESETS_DIR")
        clear_cache()


def test_billion_laughs_is_refused() -> None:
    assert len(yaml.safe_load(BILLION_LAUGHS)["i"]) == 9  # PyYAML alone builds it from shared references
    with pytest.raises(InputError, match="alias"):
        read_yaml_text(BILLION_LAUGHS, "bomb.yaml")


@pytest.mark.parametrize("case", sorted(HOSTILE_YAML))
def test_yaml_is_bounded(case: str) -> None:
    text, message = HOSTILE_YAML[case]
    with pytest.raises(InputError, match=message):
        read_yaml_text(text, "input.yaml")


def test_hostile_yaml_and_json_are_refused_within_a_cpu_bound() -> None:
    """All of them together take ~0.4 CPU-seconds here (150,000 values: the largest); expanding the billion
    laughs alone would take minutes. 5 CPU-seconds, in a child process, is a bound no load can break."""
    run_cpu_bounded(
        """
        for cases, read in ((HOSTILE_YAML, read_yaml_text), (HOSTILE_JSON, read_json_text)):
            for name, (text, message) in cases.items():
                try:
                    read(text, name)
                except InputError:
                    continue
                raise SystemExit(f"{name} was accepted")
        """,
        setup="""
        from calculator.errors import InputError
        from calculator.inputs.presets import read_json_text, read_yaml_text
        from tests.support.hostile import HOSTILE_JSON, HOSTILE_YAML
        """,
        cpu_s=5,
    )


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
    from calculator.inputs import yaml_text

    loader_class = (
        yaml_text.BoundedSafeLoader if parser == "libyaml" else yaml_text._bounded_loader(yaml_text._PyEventParser)
    )
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


@pytest.mark.parametrize("case", sorted(HOSTILE_JSON))
def test_json_is_bounded(case: str) -> None:
    text, message = HOSTILE_JSON[case]
    with pytest.raises(InputError, match=message):
        read_json_text(text, "config.json")


@pytest.fixture()
def team_presets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """RLPLAN_PRESETS_DIR set to a temporary team directory (with a valid team GPU and broken files)."""
    with presets_dir(monkeypatch, write_team_dir(tmp_path / "team")) as root:
        yield root


def test_broken_team_files_are_skipped_and_named(team_presets: Path) -> None:
    problems = preset_problems()
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
    s = load_scenario("qwen2.5-7b-grpo-8xh100", overrides={"hardware.gpu": "team-h100"})
    assert estimate(s).hardware.gpu_name == "Team H100 (ours)"


def test_broken_team_files_are_read_within_a_cpu_bound(tmp_path: Path) -> None:
    """Reading a team directory with a YAML bomb, a 2 MiB file and broken copies takes ~0.02 CPU-seconds here."""
    root = write_team_dir(tmp_path / "team")
    run_cpu_bounded(
        f"""
        problems = preset_problems()
        assert len(problems) == {len(BROKEN_FILES)}, problems
        """,
        setup=f"""
        import os
        os.environ["RLPLAN_PRESETS_DIR"] = {str(root)!r}
        from calculator.inputs.presets import preset_problems
        """,
        cpu_s=5,
    )


def test_mapping_file_reads_at_most_the_limit(tmp_path: Path) -> None:
    """A preset path that is a pipe or a device is refused before a byte is read (issue 12: regular files only)."""
    with pytest.raises(InputError, match="not a regular file"):
        read_mapping_file("/dev/zero", "gpus preset zero.yaml")
    with pytest.raises(InputError, match="cannot read"):
        read_mapping_file(tmp_path, "gpus preset dir.yaml")
