"""presets/<kind>/catalogue.json (calculator.inputs.catalogue): equal to what the YAML files parse to, and never able
to change a result when it is stale, missing or broken."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from calculator.inputs import presets
from calculator.inputs.catalogue import (
    CATALOGUE_NAME,
    KINDS,
    build_catalogue,
    cached_mapping,
    catalogue_text,
    load_catalogue,
)
from calculator.inputs.presets import PRESETS_DIR
from calculator.inputs.readers import read_yaml_text

SHIPPED = sorted(f for kind in KINDS for f in (PRESETS_DIR / kind).glob("*.yaml"))


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (``1 == 1.0 == True`` in Python, not here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("kind", KINDS)
def test_catalogue_is_current(kind: str) -> None:
    """Fails after a preset file changed: run ``python -m tools.preset_catalogue --write``."""
    on_disk = (PRESETS_DIR / kind / CATALOGUE_NAME).read_text(encoding="utf-8")
    assert on_disk == catalogue_text(PRESETS_DIR, kind), "run: python -m tools.preset_catalogue --write"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_shipped_file_is_recorded_as_its_yaml_parses(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    entry = load_catalogue(PRESETS_DIR, path.parent.name)[path.name]
    assert entry["text"] == text
    assert _same(cached_mapping(entry, text), read_yaml_text(text, path.name))


def test_a_changed_text_is_not_taken_from_the_catalogue() -> None:
    entry = {"text": "id: a\n", "data": {"id": "a"}}
    assert cached_mapping(entry, "id: a\n") == {"id": "a"}
    assert cached_mapping(entry, "id: a \n") is None
    assert cached_mapping(None, "id: a\n") is None
    assert cached_mapping({"text": "[1]\n", "data": [1]}, "[1]\n") is None  # not a mapping


def test_values_json_cannot_carry_are_left_to_yaml(tmp_path: Path) -> None:
    """A date or a non-string key (``8``, YAML 1.1's ``on``) would come back from JSON as something else: such a file is not recorded."""
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "plain.yaml").write_text("name: plain\nn: 8\nratio: 1.0\nflag: true\n")
    (tmp_path / "scenarios" / "dated.yaml").write_text("name: dated\nwhen: 2024-01-01\n")
    (tmp_path / "scenarios" / "intkey.yaml").write_text("name: intkey\nby_n:\n  8: x\n")
    (tmp_path / "scenarios" / "boolkey.yaml").write_text("name: boolkey\non: 1\n")  # YAML 1.1: the key is True
    recorded = build_catalogue(tmp_path, "scenarios")["files"]
    assert sorted(recorded) == ["plain.yaml"]
    again = json.loads(json.dumps(recorded))["plain.yaml"]["data"]
    assert _same(again, {"name": "plain", "n": 8, "ratio": 1.0, "flag": True})


@pytest.mark.parametrize(
    "content", [None, "{not json", '{"format": 99, "files": {}}', "[]", '{"format": 1, "files": []}', "x" * 2**22]
)
def test_a_missing_or_unreadable_catalogue_is_ignored(tmp_path: Path, content: str | None) -> None:
    (tmp_path / "gpus").mkdir()
    if content is not None:
        (tmp_path / "gpus" / CATALOGUE_NAME).write_text(content)
    assert load_catalogue(tmp_path, "gpus") == {}


@pytest.fixture
def presets_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The shipped presets (with their catalogue) copied to ``tmp_path``, read from there with fresh caches."""
    root = tmp_path / "presets"
    shutil.copytree(PRESETS_DIR, root)
    monkeypatch.delenv(presets.EXTRA_PRESETS_ENV, raising=False)
    monkeypatch.setattr(presets, "PRESETS_DIR", root)
    presets.clear_cache()
    try:
        yield root
    finally:
        presets.clear_cache()


def test_an_edited_preset_file_wins_over_a_stale_catalogue(presets_copy: Path) -> None:
    gpu = presets_copy / "gpus" / "h100-80gb.yaml"
    text = gpu.read_text(encoding="utf-8")
    assert "hourly_price_usd" in text
    edited = "\n".join(
        "hourly_price_usd: 9.87" if line.startswith("hourly_price_usd:") else line for line in text.splitlines()
    )
    gpu.write_text(edited + "\n", encoding="utf-8")
    assert presets.gpu_presets()["h100-80gb"].hourly_price_usd == 9.87
    assert presets.preset_problems() == []


def test_the_presets_read_through_the_catalogue_equal_the_yaml(presets_copy: Path) -> None:
    via_catalogue = (presets.model_presets(), presets.gpu_presets(), presets.scenario_presets())
    for kind in KINDS:
        (presets_copy / kind / CATALOGUE_NAME).unlink()
    presets.clear_cache()
    assert (presets.model_presets(), presets.gpu_presets(), presets.scenario_presets()) == via_catalogue
