"""``python -m calculator presets [models|gpus|scenarios] [--json]``: the preset catalogues."""

from __future__ import annotations

import argparse
import json

from calculator.cli.terminal import one_line, out
from calculator.inputs.presets import gpu_presets, model_presets, scenario_presets


def presets_text(kind: str, as_json: bool) -> str:
    if kind == "models":
        rows = [
            {
                "id": m.id,
                "name": m.name,
                "family": m.family,
                "total_params": m.architecture.total_params(),
                "active_params": m.architecture.active_params(),
                "hf_repo": m.hf_repo,
            }
            for m in model_presets().values()
        ]
    elif kind == "gpus":
        rows = [
            {
                "id": g.id,
                "name": g.name,
                "usable_memory_gib": g.usable_memory_gib,
                "memory_gb": g.memory_gb,
                "bf16_dense_tflops": g.training_tflops,
                "hbm_bandwidth_gbps": g.hbm_bandwidth_gb_per_s,  # contract key (DESIGN.md 6.1): GB/s
                "hourly_price_usd": g.hourly_price_usd,
            }
            for g in gpu_presets().values()
        ]
    else:
        rows = [
            {"id": k, "name": v.get("name", k), "description": v.get("description", "")}
            for k, v in scenario_presets().items()
        ]
    rows.sort(key=lambda r: r["id"])
    if as_json:
        return json.dumps(rows, indent=2)
    return "\n".join(f"{one_line(r['id']):<32} {one_line(r['name'])}" for r in rows)


def run(args: argparse.Namespace) -> int:
    out(presets_text(args.kind, args.json))
    return 0
