"""calculator.inputs.display: the scenario's name follows changes (issue 13 item 12)."""

from __future__ import annotations

from calculator import differs_from, load_scenario, scenario_title

PRESET = "qwen2.5-7b-grpo-8xh100"
BIG = {"model.path": "llama3.1-70b", "hardware.num_gpus": 32, "hardware.gpu": "h200-141gb"}


def test_unchanged_preset_keeps_its_name() -> None:
    base = load_scenario(PRESET)
    assert not differs_from(base, base)
    assert scenario_title(base, base, model_name="M", num_gpus=1, gpu_name="G") == base.name
    assert scenario_title(base, None, model_name="M", num_gpus=1, gpu_name="G") == base.name


def test_changed_scenario_says_what_is_in_use_and_its_preset() -> None:
    base = load_scenario(PRESET)
    s = load_scenario(PRESET, overrides=BIG)
    assert s.name == base.name  # the preset's name is carried over: the title must not use it alone
    title = scenario_title(s, base, model_name="Llama-3.1-70B", num_gpus=32, gpu_name="H200-SXM-141GB")
    assert title == "Llama-3.1-70B, 32 x H200-SXM-141GB (based on preset Qwen2.5-7B GRPO, 8 x H100)"


def test_any_setting_counts_as_a_change_but_the_description_does_not() -> None:
    base = load_scenario(PRESET)
    assert differs_from(load_scenario(PRESET, overrides={"rollout.n": 16}), base)
    assert not differs_from(base.model_copy(update={"description": "edited"}), base)
