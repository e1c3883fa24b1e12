"""The Report (calculator/report/models.py): frozen typed records, the stable JSON keys of DESIGN.md 6.2, a JSON
round trip that gives back the same Report, and a phase's totals derived from its components."""

from __future__ import annotations

import dataclasses
import json

import pytest
from pydantic import ValidationError

from calculator import estimate, load_scenario
from calculator.report.models import Component, PhaseMemory, Report
from calculator.units import GIB_BYTES


@pytest.fixture(scope="module")
def report() -> Report:
    return estimate(load_scenario("qwen2.5-7b-ppo-8xh100", overrides={"reward_model.enable": True}))


def test_json_keys_of_the_contract(report: Report):
    d = json.loads(report.model_dump_json())
    assert {"model", "hardware", "phases", "peak", "rollout", "time", "warnings"} <= set(d)
    assert {"name", "total_params", "active_params", "kv_cache_bytes_per_token"} == set(d["model"])
    assert {"phase", "gib_per_gpu", "fits", "headroom_gib", "worst_case_gib_per_gpu"} <= set(d["peak"])
    phase = d["phases"][0]
    assert {"name", "total_gib", "components", "total_bytes", "details"} <= set(phase)
    assert {"name", "role", "bytes", "formula", "gib"} <= set(phase["details"][0])  # gib is computed


def test_json_round_trip(report: Report):
    """The computed ``gib`` of each component is written to JSON and ignored when read back."""
    data = json.loads(report.model_dump_json())
    for p in data["phases"] + data["worst_case_phases"]:
        for c in p["details"]:
            assert c.pop("gib") == pytest.approx(c["bytes"] / GIB_BYTES)
    # ``checks`` and ``decisions`` are Python-API-only fields (excluded from JSON): they come back empty.
    assert Report.model_validate(data) == report.model_copy(update={"checks": [], "decisions": []})


def test_records_are_frozen_and_closed(report: Report):
    with pytest.raises(ValidationError, match="frozen"):
        report.peak.fits = False  # type: ignore[misc]
    # Components are plain frozen records (built ~100 times per estimate): closed, frozen, checked.
    part = Component(name="x", role="actor", bytes=1, formula="f")
    with pytest.raises(dataclasses.FrozenInstanceError):
        part.bytes = 2  # type: ignore[misc]
    with pytest.raises(TypeError, match="colour"):
        Component(name="x", role="actor", bytes=1, formula="f", colour="red")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="bytes must be >= 0"):
        Component(name="x", role="actor", bytes=-1, formula="f")
    with pytest.raises(ValueError, match="role must be one of"):
        Component(name="x", role="optimizer", bytes=1, formula="f")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="process one of"):
        Component(name="x", role="actor", bytes=1, formula="f", process="gpu")  # type: ignore[arg-type]


def test_phase_totals_come_from_the_components():
    parts = (
        Component(name="actor_params", role="actor", bytes=3 * GIB_BYTES, formula="a"),
        Component(name="kv_cache", role="rollout", bytes=2 * GIB_BYTES, formula="b", process="rollout"),
        Component(name="cuda_context", role="runtime", bytes=GIB_BYTES, formula="c", torch_allocated=False),
    )
    p = PhaseMemory(name="rollout", components=parts)
    assert p.total_bytes == 6 * GIB_BYTES
    assert p.trainer_allocated_bytes == 3 * GIB_BYTES  # the rollout process and non-torch memory are not counted
    assert p.component("kv_cache") is parts[1] and p.component("nope") is None
    assert parts[0].gib == 3.0


def test_report_phases_agree_with_their_details(report: Report):
    for p in report.phases + report.worst_case_phases:
        assert p.total_bytes == sum(c.bytes for c in p.details)
        assert p.total_gib == pytest.approx(p.total_bytes / GIB_BYTES)
        assert sum(p.components.values()) == pytest.approx(p.total_gib)
    assert report.roles == ["actor", "rollout", "ref", "critic", "reward"]
