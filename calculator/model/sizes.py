"""An approximate architecture from just a size ("7B dense", "30B-A3B MoE").

Honest and simple: take the preset of the chosen family whose parameter count is nearest (on a log
scale), keep its width (hidden size, heads, FFN, vocabulary, experts) and change only the number of
decoder layers so that the total comes as close as possible to the requested size. Parameters are
linear in the layer count, so two counts give the exact per-layer and fixed parts. The layer count
is kept within [half, double] of the base model's: a size far from every preset keeps the nearest
shape and says by how much it misses. A preset within ``NOMINAL_TOLERANCE`` of the size is used as it
is: "7B" means the standard 7B model (Qwen2.5-7B has 7.6B parameters), not a 7.0B variant. For MoE the active size follows the base model's ratio; the
requested active size only helps pick the base model.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from calculator.inputs.presets import model_presets
from calculator.model.architecture import parse_hf_config

_SIZE = re.compile(
    r"^\s*(?P<total>\d+(?:\.\d+)?)\s*(?P<unit>[bm])\s*(?:-?\s*a\s*(?P<active>\d+(?:\.\d+)?)\s*(?P<aunit>[bm]))?"
    r"\s*(?P<kind>dense|moe)?\s*$",
    re.IGNORECASE,
)
_SCALE = {"b": 1e9, "m": 1e6}

NOMINAL_TOLERANCE = 0.10  # a preset this close to the requested size is taken unchanged
DEFAULT_DENSE_FAMILY = "qwen2.5"
DEFAULT_MOE_FAMILY = "qwen3-moe"


@dataclass(frozen=True)
class SizeSpec:
    """A model size as the user wrote it: total (and active) parameters, dense or MoE."""

    total_params: float
    active_params: float | None
    moe: bool

    @property
    def text(self) -> str:
        if self.moe and self.active_params:
            return f"{_short(self.total_params)}-A{_short(self.active_params)} MoE"
        return f"{_short(self.total_params)} {'MoE' if self.moe else 'dense'}"


@dataclass(frozen=True)
class ApproxModel:
    """The approximate model: its config.json, the preset it came from and how close it gets."""

    config: dict[str, Any]
    base_id: str
    base_name: str
    num_layers: int
    base_layers: int
    total_params: int
    active_params: int
    target: SizeSpec

    @property
    def error_fraction(self) -> float:
        return self.total_params / self.target.total_params - 1


def _short(count: float) -> str:
    return f"{count / 1e9:g}B" if count >= 1e9 else f"{count / 1e6:g}M"


def parse_size(text: str) -> SizeSpec:
    """'7B', '7B dense', '0.5B', '500M', '30B-A3B', '30B-A3B MoE', '235B MoE'. Raises ValueError."""
    m = _SIZE.match(text or "")
    if not m:
        raise ValueError(f"cannot read size {text!r}: write e.g. '7B dense', '1.5B', '30B-A3B MoE'")
    total = float(m["total"]) * _SCALE[m["unit"].lower()]
    active = float(m["active"]) * _SCALE[m["aunit"].lower()] if m["active"] else None
    moe = bool(active) or (m["kind"] or "").lower() == "moe"
    if total <= 0 or (active is not None and not 0 < active <= total):
        raise ValueError(f"size {text!r}: need total > 0 and 0 < active <= total")
    return SizeSpec(total, active, moe)


def model_families(moe: bool) -> list[str]:
    """Model families with at least one preset of the given kind, most presets first."""
    counts: dict[str, int] = {}
    for m in model_presets(strict=False).values():
        arch = m.architecture
        if (arch.num_experts > 0) == moe and arch.q_lora_rank is None and arch.kv_lora_rank == 0:
            counts[m.family] = counts.get(m.family, 0) + 1
    return sorted(counts, key=lambda f: (-counts[f], f))


def _params(cfg: dict[str, Any]) -> tuple[int, int]:
    arch = parse_hf_config(cfg)
    return arch.total_params(), arch.active_params()


def _with_layers(cfg: dict[str, Any], layers: int) -> dict[str, Any]:
    out = dict(cfg)
    out["num_hidden_layers"] = layers
    for key in ("max_window_layers",):
        if isinstance(out.get(key), int):
            out[key] = min(out[key], layers)
    if isinstance(out.get("layer_types"), list) and out["layer_types"]:
        kinds = out["layer_types"]
        out["layer_types"] = [kinds[i % len(kinds)] for i in range(layers)]
    if isinstance(out.get("mlp_only_layers"), list):
        out["mlp_only_layers"] = [i for i in out["mlp_only_layers"] if i < layers]
    return out


def approximate_model(spec: SizeSpec, family: str | None = None) -> ApproxModel:
    """The nearest preset of ``family`` (default: Qwen2.5 dense / Qwen3-MoE) re-layered to ``spec``'s size."""
    family = family or (DEFAULT_MOE_FAMILY if spec.moe else DEFAULT_DENSE_FAMILY)
    candidates = [
        m
        for m in model_presets(strict=False).values()
        if m.family == family and (m.architecture.num_experts > 0) == spec.moe and m.architecture.kv_lora_rank == 0
    ]
    if not candidates:
        raise ValueError(f"no {'MoE' if spec.moe else 'dense'} preset in family {family!r}")

    def distance(m: Any) -> float:
        d = abs(math.log(m.architecture.total_params() / spec.total_params))
        if spec.active_params:
            d += abs(math.log(m.architecture.active_params() / spec.active_params))
        return d

    base = min(candidates, key=distance)
    cfg = dict(base.config)
    layers0 = int(cfg["num_hidden_layers"])
    p_l, _ = _params(cfg)
    p_l1, _ = _params(_with_layers(cfg, layers0 + 1))
    per_layer = p_l1 - p_l
    fixed = p_l - layers0 * per_layer
    wanted = round((spec.total_params - fixed) / per_layer)
    layers = max(max(1, layers0 // 2), min(2 * layers0, wanted))
    nominal = abs(p_l / spec.total_params - 1) <= NOMINAL_TOLERANCE
    if nominal and (not spec.active_params or abs(_params(cfg)[1] / spec.active_params - 1) <= 0.25):
        layers = layers0
    new_cfg = _with_layers(cfg, layers)
    total, active = _params(new_cfg)
    if layers == layers0:
        new_cfg["_name_or_path"] = f"≈{spec.text} (approx.: {base.name})"
    else:
        new_cfg["_name_or_path"] = f"≈{spec.text} (approx.: {base.name} with {layers} instead of {layers0} layers)"
    return ApproxModel(
        config=new_cfg,
        base_id=base.id,
        base_name=base.name,
        num_layers=layers,
        base_layers=layers0,
        total_params=total,
        active_params=active,
        target=spec,
    )


__all__ = ["ApproxModel", "SizeSpec", "approximate_model", "model_families", "parse_size"]
