"""The name a scenario goes by in headers (the dashboard's exports, ``advise``'s first line, the Markdown title).

A preset's name describes the run it defines ("Qwen2.5-7B GRPO, 8 x H100"). Once the model, the GPUs or any other
setting differ from the preset, that name would describe a different run, so the title says what is actually in
use and where it came from: "Llama-3.1-70B, 32 x H200-SXM-141GB (based on preset Qwen2.5-7B GRPO, 8 x H100)".
"""

from __future__ import annotations

from calculator.inputs.scenario import Scenario

_NOT_SETTINGS = {"name", "description"}


def differs_from(s: Scenario, base: Scenario | None) -> bool:
    """Whether ``s`` defines a different run than ``base`` (its name and description aside)."""
    if base is None:
        return False
    return s.model_dump(mode="json", exclude=_NOT_SETTINGS) != base.model_dump(mode="json", exclude=_NOT_SETTINGS)


def scenario_title(s: Scenario, base: Scenario | None, *, model_name: str, num_gpus: int, gpu_name: str) -> str:
    """``s.name`` while ``s`` is ``base`` unchanged (or no base is known); otherwise the model and GPUs in use
    followed by "(based on preset <base name>)". ``model_name`` / ``gpu_name`` are the resolved display names
    (``report.model.name``, ``report.hardware.gpu_name``)."""
    if not differs_from(s, base):
        return s.name
    in_use = f"{model_name}, {num_gpus} x {gpu_name}"
    assert base is not None  # differs_from is False without a base
    return f"{in_use} (based on preset {base.name})" if base.name else in_use
