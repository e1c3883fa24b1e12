"""Every preset file validates; custom preset directories merge and validate the same way (issue #2)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from calculator import estimate, load_scenario
from calculator.errors import InputError
from calculator.inputs.presets import PRESETS_DIR, clear_cache, gpu_presets, model_presets, scenario_presets

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
