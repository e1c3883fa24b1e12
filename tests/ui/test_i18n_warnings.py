"""ui/i18n_warnings.py: every estimate warning the calculator gives has its Chinese, with the same numbers."""

from __future__ import annotations

import re

import pytest

from calculator import estimate, load_scenario
from calculator.inputs.presets import scenario_presets
from tests.ui.test_app import run_app
from ui.i18n_warnings import PATTERNS, translate, warning_text

BASE = "qwen2.5-7b-grpo-8xh100"
# Scenarios that trip the warning rules of calculator/report/warnings.py.
TRIGGERS: list[dict] = [
    {"hardware.gpu": "a100-40gb", "rollout.gpu_memory_utilization": 0.9},  # vLLM startup, OOM phases
    {"hardware.gpu": "a100-40gb", "rollout.gpu_memory_utilization": 0.9, "actor.strategy": "megatron"},  # its key
    {"actor.fsdp_config.param_offload": True, "rollout.gpu_memory_utilization": 0.99},  # offloaded: more GPUs
    {"model.path": "llama3.1-70b"},  # no KV memory at all on 8 x H100
    {"model.path": "llama3.1-70b", "hardware.num_gpus": 32, "hardware.gpu": "h200-141gb"},  # KV < max_model_len
    {"data.max_response_length": 8192, "data.mean_response_length": 600},  # max lengths, concurrency
    {"model.lora_rank": 32, "model.use_dora": True},
    {"actor.optim.optimizer": "Adafactor"},
    {"data.mean_response_length": None, "data.mean_prompt_length": 200},  # no mean response (the seeds: neither)
]


def _warnings() -> list[str]:
    out: list[str] = []
    for overrides in TRIGGERS:
        out += estimate(load_scenario(BASE, overrides=overrides)).warnings
    for pid in scenario_presets():
        out += estimate(load_scenario(pid)).warnings
    return [w for w in out if not w.startswith("verl: ")]


WARNINGS = _warnings()


def test_every_warning_has_chinese_with_its_numbers() -> None:
    for w in WARNINGS:
        zh = translate(w)
        assert zh is not None, f"no Chinese template for: {w}"
        numbers = re.findall(r"\d+(?:\.\d+)?", w)
        missing = [n for n in numbers if n not in zh and n not in ("5",)]  # "within 5%" is part of the template
        assert not missing, (w, zh, missing)


def test_the_triggers_reach_most_templates() -> None:
    hit = {i for w in WARNINGS for i, (p, _) in enumerate(PATTERNS) if p.fullmatch(w)}
    assert len(hit) >= 8, sorted(hit)  # the rest (SGLang, reward pool) need settings the presets do not use


@pytest.mark.parametrize("text", ["something new the catalogue does not know"])
def test_unknown_text_stays_english(text: str) -> None:
    assert warning_text(text, "zh") == text
    assert warning_text(WARNINGS[0], "en") == WARNINGS[0]


def test_chinese_page_shows_chinese_warnings() -> None:
    at = run_app({"lang": "zh", "hardware.gpu": "a100-40gb", "rollout.gpu_memory_utilization": "0.9"})
    shown = " ".join(w.value for w in at.warning)
    assert "vLLM 将无法启动" in shown
    assert "vLLM will refuse to start" not in shown
