"""Choices the dashboard offers: model and GPU lists with display labels (pure). The algorithms are
``calculator.ALGORITHMS``."""

from __future__ import annotations

import functools

from calculator import format_count, gpu_presets, model_presets


@functools.cache
def model_ids() -> list[str]:
    """Model presets grouped by family (families in alphabetical order), smallest first inside a family."""
    models = model_presets(strict=False)
    return sorted(models, key=lambda m: (models[m].family, models[m].published_params))


@functools.lru_cache(maxsize=1024)  # an option list asks for every label on every rerun
def model_label(model_id: str) -> str:
    m = model_presets(strict=False).get(model_id)
    if m is None:
        return model_id
    arch = m.architecture
    size = format_count(arch.total_params())
    if arch.active_params() != arch.total_params():
        size += f" (A{format_count(arch.active_params())})"
    return f"{m.name} · {size} · {m.family}"


@functools.cache
def gpu_ids() -> list[str]:
    """GPU presets, largest usable memory first."""
    gpus = gpu_presets(strict=False)
    return sorted(gpus, key=lambda g: (-gpus[g].usable_memory_gib, gpus[g].name))


@functools.lru_cache(maxsize=1024)
def gpu_label(gpu_id: str) -> str:
    g = gpu_presets(strict=False).get(gpu_id)
    return f"{g.name} · {g.usable_memory_gib:g} GiB" if g else gpu_id
