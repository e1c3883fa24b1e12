"""GPU facts (calculator/inputs/hardware.py): derived bandwidths and rates from the preset table, hand-checked, and
the validators of a GPU preset (one boundary test each)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from calculator.inputs.hardware import PCIE_X16_GB_PER_S_PER_DIRECTION, GpuSpec
from calculator.inputs.presets import gpu_presets
from calculator.units import GIB_BYTES

GPUS = gpu_presets()


def test_pcie_table_is_the_x16_payload_rate():
    """16 GT/s x 16 lanes x 128/130 encoding / 8 bits = 31.5 GB/s for Gen4; each generation doubles."""
    assert 16 * 16 * 128 / 130 / 8 == pytest.approx(PCIE_X16_GB_PER_S_PER_DIRECTION[4], rel=1e-3)
    assert [PCIE_X16_GB_PER_S_PER_DIRECTION[g] for g in (3, 4, 5, 6)] == [15.75, 31.5, 63.0, 126.0]


def test_h100_by_hand():
    """presets/gpus/h100-80gb.yaml: NVLink 900 GB/s bidirectional, PCIe Gen5, 989 dense bf16 TFLOPS."""
    g = GPUS["h100-80gb"]
    assert g.intra_node_gb_per_s == 450.0  # half of the bidirectional NVLink figure
    assert g.pcie_gb_per_s == 63.0
    assert g.training_tflops == 989
    assert g.usable_memory_bytes == int(79.22 * GIB_BYTES)


def test_pcie_only_gpu_talks_over_pcie():
    g = GPUS["l40s-48gb"]  # no NVLink, PCIe Gen4
    assert g.nvlink_gb_per_s is None and g.intra_node_gb_per_s == 31.5


def test_gpu_without_bf16_trains_at_its_fp16_rate():
    g = GPUS["v100-16gb"]
    assert g.bf16_dense_tflops is None and g.training_tflops == g.fp16_dense_tflops == 125


def test_every_preset_is_below_its_marketing_memory():
    for g in GPUS.values():
        assert 0 < g.usable_memory_gib <= g.memory_gb and g.pcie_gen in PCIE_X16_GB_PER_S_PER_DIRECTION


def _spec(**changes) -> dict:
    return {**GPUS["h100-80gb"].model_dump(), **changes}


def test_usable_memory_may_equal_but_not_exceed_the_marketing_figure():
    assert GpuSpec(**_spec(memory_gb=79.22)).usable_memory_gib == 79.22  # equality allowed (MI300X-class)
    with pytest.raises(ValidationError, match=r"usable_memory_gib \(80.5\) exceeds memory_gb \(80.0 GB\)"):
        GpuSpec(**_spec(usable_memory_gib=80.5))


@pytest.mark.parametrize(
    ("field", "value"),
    [("pcie_gen", 2), ("pcie_gen", 7), ("memory_gb", 0), ("hourly_price_usd", -0.01), ("vendor", "intel"),
     ("nvlink_gb_per_s", 0), ("sources", ()), ("confidence", "certain"), ("made_up", 1)],
)  # fmt: skip
def test_bad_field_is_refused(field: str, value: object):
    with pytest.raises(ValidationError, match=field):
        GpuSpec(**_spec(**{field: value}))


def test_boundaries_that_pass():
    for value in (3, 6):
        assert GpuSpec(**_spec(pcie_gen=value)).pcie_gen == value
    g = GpuSpec(**_spec(hourly_price_usd=0))
    assert g.hourly_price_usd == 0
    with pytest.raises(ValidationError, match="frozen"):
        g.memory_gb = 1  # type: ignore[misc]
