"""The verl version table (calculator/resolve/versions.py) covers every version a Scenario accepts."""

from __future__ import annotations

from calculator.inputs.scenario import VERL_VERSIONS
from calculator.resolve.versions import VERSION_BEHAVIOUR, behaviour


def test_every_scenario_version_has_a_row_with_sources():
    assert set(VERSION_BEHAVIOUR) == set(VERL_VERSIONS)
    for v, row in VERSION_BEHAVIOUR.items():
        assert row.version == v and row.sources and row.notes


def test_facts_that_hold_in_every_version():
    for row in VERSION_BEHAVIOUR.values():
        assert not row.ref_on_gpu_bf16  # FSDP ref is CPU-offloaded since verl 0.2
        assert not row.logits_fp32
        assert row.vllm_util_semantics == "total"
        assert row.old_log_prob_entropy


def test_unknown_version_falls_back_to_current():
    assert behaviour("1.0") is VERSION_BEHAVIOUR["0.9"]
