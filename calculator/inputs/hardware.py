"""GPU facts: the hardware table the calculator reads (one YAML preset per GPU in presets/gpus/).

Memory is kept twice: the vendor's decimal figure (``memory_gb``) and what
``torch.cuda.mem_get_info`` reports as total (``usable_memory_gib``), which is what vLLM's
``gpu_memory_utilization`` multiplies and what every fit check compares against. Throughput
figures are dense (no 2:4 sparsity) tensor-core TFLOPS from the vendor datasheets
(shared/reference/gpus.yaml lists the sources). An unknown GPU is an error, never a guess.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, ConfigDict, Field, model_validator

from calculator.inputs.numbers import NoBoolNumbers
from calculator.units import GIB_BYTES

# PCIe x16 payload bandwidth per direction (GB/s, decimal): 16 GT/s x 16 lanes x 128/130
# encoding = 31.5 GB/s for Gen4, twice that for Gen5, half for Gen3 (PCI-SIG base specs).
PCIE_X16_GB_PER_S_PER_DIRECTION: dict[int, float] = {3: 15.75, 4: 31.5, 5: 63.0, 6: 126.0}


class GpuSpec(NoBoolNumbers):
    """One GPU type. Every number cites its source in the preset file."""

    # Team preset files written before the unit-suffix rename (``*_gbps``) still load.
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    id: str = Field(description="Preset id, what --gpu accepts.")
    name: str
    vendor: Literal["nvidia", "amd", "huawei"]
    memory_gb: float = Field(gt=0, description="Vendor memory size in decimal GB.")
    usable_memory_gib: float = Field(
        gt=0, description="Total memory as torch.cuda.mem_get_info reports it (GiB = 2**30 B)."
    )
    usable_memory_source: str = Field(description="Where the usable figure was observed, or how it was estimated.")
    memory_type: str
    hbm_bandwidth_gb_per_s: float = Field(
        validation_alias=AliasChoices("hbm_bandwidth_gb_per_s", "hbm_bandwidth_gbps"),
        gt=0,
        description="Peak memory bandwidth, GB/s (decimal).",
    )
    bf16_dense_tflops: float | None = Field(default=None, gt=0)
    fp16_dense_tflops: float = Field(gt=0)
    fp8_dense_tflops: float | None = Field(default=None, gt=0)
    nvlink_gb_per_s: float | None = Field(
        validation_alias=AliasChoices("nvlink_gb_per_s", "nvlink_gbps"),
        default=None,
        gt=0,
        description="GPU-to-GPU bandwidth per GPU, bidirectional total, GB/s; null = PCIe only.",
    )
    pcie_gen: int = Field(ge=3, le=6)
    inter_node_gb_per_s: float = Field(
        validation_alias=AliasChoices("inter_node_gb_per_s", "inter_node_gbps"),
        gt=0,
        description="Typical scale-out bandwidth per GPU per direction in GB/s (one NIC per GPU); "
        "a cluster property, editable.",
    )
    tdp_w: float = Field(gt=0)
    hourly_price_usd: float = Field(
        ge=0, description="EXAMPLE on-demand price per GPU-hour in USD; edit it for your contract."
    )
    sources: tuple[str, ...] = Field(min_length=1)
    confidence: Literal["high", "medium", "low"]
    notes: str = ""

    @model_validator(mode="after")
    def _usable_below_marketing(self) -> GpuSpec:
        # A GiB is larger than a GB, so the usable GiB figure can never exceed the marketing number
        # (HBM stacks of MI300X-class parts are 192 GiB sold as "192 GB": equality is allowed).
        if self.usable_memory_gib > self.memory_gb:
            raise ValueError(f"usable_memory_gib ({self.usable_memory_gib}) exceeds memory_gb ({self.memory_gb} GB)")
        return self

    @property
    def usable_memory_bytes(self) -> int:
        return int(self.usable_memory_gib * GIB_BYTES)

    @property
    def training_tflops(self) -> float:
        """Dense 16-bit tensor TFLOPS used for bf16 training (fp16 where the GPU has no bf16, e.g. V100)."""
        return self.bf16_dense_tflops or self.fp16_dense_tflops

    @property
    def pcie_gb_per_s(self) -> float:
        """Host link bandwidth per direction, GB/s, at the x16 payload rate of its PCIe generation."""
        return PCIE_X16_GB_PER_S_PER_DIRECTION[self.pcie_gen]

    @property
    def intra_node_gb_per_s(self) -> float:
        """Per-direction GPU-to-GPU bandwidth inside a node: half the bidirectional NVLink figure,
        or the PCIe link when the GPU has no NVLink."""
        return self.nvlink_gb_per_s / 2 if self.nvlink_gb_per_s else self.pcie_gb_per_s


# Host RAM per node by GPU server class (GiB), the default of ``hardware.host_ram_gib_per_node``: NVIDIA DGX
# datasheets list 2 TB system memory for DGX H100 / H200 / B200 and 1 TB (2 TB optional) for DGX A100; 8-GPU
# H20 / H800 / A800 HGX servers ship with 1-2 TB (verl docs/perf/dpsk.md reports 1.5 TB used per H20 node, so
# those nodes had 2 TB). Anything else: 1 TiB. Edit the field for your servers.
HOST_RAM_GIB_PER_NODE: dict[str, float] = {
    "h100-80gb": 2048.0,
    "h200-141gb": 2048.0,
    "b200-180gb": 2048.0,
    "h20-96gb": 2048.0,
    "h800-80gb": 2048.0,
    "a100-80gb": 1024.0,
    "a100-40gb": 1024.0,
    "a800-80gb": 1024.0,
}
DEFAULT_HOST_RAM_GIB_PER_NODE = 1024.0


def host_ram_gib_per_node(gpu_id: str, configured: float | None) -> float:
    """Node RAM: the configured value, else the GPU's server-class default."""
    if configured is not None:
        return configured
    return HOST_RAM_GIB_PER_NODE.get(gpu_id, DEFAULT_HOST_RAM_GIB_PER_NODE)
