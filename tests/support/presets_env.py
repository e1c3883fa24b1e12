"""Shared by tests that point RLPLAN_PRESETS_DIR somewhere else: a team presets directory (a valid team GPU and
broken files), and forgetting every cached preset list before and after."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from calculator.inputs.presets import MAX_INPUT_BYTES, PRESETS_DIR
from tests.support.hostile import BILLION_LAUGHS

# The broken files write_team_dir creates: each must be named in the problems, none may stop the app.
BROKEN_FILES = ("typo.yaml", "bomb.yaml", "latin1.yaml", "huge.yaml", "h100-80gb.yaml", "broken.yaml")


def clear_preset_caches() -> None:
    """Clear the calculator's preset caches, the UI's option lists and preset lookups, its process-wide LRU (scenarios
    validated from a preset) and Streamlit's data cache."""
    import streamlit as st

    from calculator.inputs.presets import clear_cache
    from ui import cache, catalogue, options

    clear_cache()
    catalogue.clear()
    cache.CACHE.clear()
    options.gpu_ids.cache_clear()
    options.model_ids.cache_clear()
    options.model_label.cache_clear()
    options.gpu_label.cache_clear()
    st.cache_data.clear()


def _team_gpu() -> dict:
    gpu = yaml.safe_load((PRESETS_DIR / "gpus" / "h100-80gb.yaml").read_text())
    gpu.update(id="team-h100", name="Team H100 (ours)", hourly_price_usd=1.23)
    return gpu


def write_team_dir(root: Path, *, broken: bool = True) -> Path:
    """A team presets directory with one valid GPU ``team-h100`` and (``broken``) one file per BROKEN_FILES."""
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


@contextlib.contextmanager
def presets_dir(monkeypatch: pytest.MonkeyPatch, root: Path) -> Iterator[Path]:
    """RLPLAN_PRESETS_DIR set to ``root`` with fresh caches; unset and caches cleared again afterwards."""
    monkeypatch.setenv("RLPLAN_PRESETS_DIR", str(root))
    clear_preset_caches()
    try:
        yield root
    finally:
        monkeypatch.delenv("RLPLAN_PRESETS_DIR")
        clear_preset_caches()
