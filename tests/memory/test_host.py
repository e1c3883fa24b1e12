"""Host RAM per node (DESIGN.md 4.9, issue 14 item 7): hand-checked components, the sum, the verdict."""

from __future__ import annotations

import pytest

from calculator import estimate, load_scenario
from calculator.inputs.hardware import host_ram_gib_per_node
from calculator.inputs.presets import scenario_presets
from calculator.memory.host import host_memory
from calculator.report.estimate import build_context
from calculator.units import GIB_BYTES

BASE = "qwen2.5-7b-grpo-8xh100"  # FSDP1, 8 x H100 on one node, KL reference, vLLM TP 2
P7 = 7_615_616_512


def test_components_by_hand():
    """ref forced to CPU offload: 8 GPUs x P x 4 B / 8 = P x 4; two processes per GPU x 4 GiB; 32 GiB per node."""
    h = host_memory(build_context(load_scenario(BASE)))
    assert h.components == {
        "ref_offloaded": P7 * 4,
        "process_baseline": 8 * 2 * 4 * GIB_BYTES,
        "node_baseline": 32 * GIB_BYTES,
    }
    assert h.ram_bytes == 2048 * GIB_BYTES and h.usable_bytes == int(2048 * GIB_BYTES * 0.95)
    off = {"actor.fsdp_config.param_offload": True, "actor.fsdp_config.optimizer_offload": True}
    h2 = host_memory(build_context(load_scenario(BASE, overrides=off)))
    # fp32 master shard (4 B) + AdamW moments (8 B), per GPU / 8, times 8 GPUs of the node
    assert h2.components["actor_offloaded"] == 8 * (P7 * 4 // 8 + P7 * 8 // 8)


@pytest.mark.parametrize("preset", sorted(scenario_presets()))
def test_components_sum_to_the_total(preset):
    r = estimate(load_scenario(preset), with_time=False)
    assert r.host is not None
    assert sum(r.host.components.values()) == pytest.approx(r.host.total_gib_per_node, rel=1e-12)
    assert r.host.fits == (r.host.total_gib_per_node <= r.host.usable_ram_gib_per_node)


def test_host_ram_enters_the_verdict_with_its_reason():
    r = estimate(load_scenario(BASE, overrides={"hardware.host_ram_gib_per_node": 64}), with_time=False)
    assert not r.host.fits and not r.peak.fits and not r.peak.worst_case_fits
    assert len(r.peak.reasons) == 1 and r.peak.reasons[0].startswith("host RAM: ")
    assert "hardware.host_ram_gib_per_node" in r.peak.reasons[0]
    ok = estimate(load_scenario(BASE), with_time=False)
    assert ok.host.fits and ok.peak.reasons == []


def test_node_ram_default_by_server_class():
    assert host_ram_gib_per_node("h100-80gb", None) == 2048  # DGX H100: 2 TB
    assert host_ram_gib_per_node("a100-80gb", None) == 1024  # DGX A100: 1 TB
    assert host_ram_gib_per_node("rtx4090-24gb", None) == 1024  # unknown class: 1 TiB
    assert host_ram_gib_per_node("h100-80gb", 512.0) == 512  # the field wins
