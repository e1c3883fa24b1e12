"""Import (calculator/verl/imports.py): verl overrides and YAML -> Scenario fields; engine selection, deprecated
and unknown keys as notes, ``# rlplan:`` lines read back; hostile text is refused or read as text within a CPU-time
bound, and nothing in it is executed (issue #8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from calculator import verl as V
from calculator.errors import InputError
from calculator.loading import load_scenario_with_warnings
from calculator.verl import import_verl_text
from tests.support.hostile import DEEP_JSON, HOSTILE_VERL_TEXTS
from tests.support.limits import run_cpu_bounded


def test_rlplan_comment_lines_are_bounded() -> None:
    natives, notes = import_verl_text("# rlplan: model.config=" + DEEP_JSON + "\nactor_rollout_ref.rollout.n=4\n")
    assert natives.get("rollout.n") == 4


def test_megatron_selection_forms():
    for text in (
        "python3 -m verl.trainer.main_ppo model_engine=megatron",
        "python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer",
        "python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer.yaml",
        "model_engine=megatron\n",
    ):
        natives, _ = V.import_verl_text(text)
        assert natives.get("actor.strategy") == "megatron", text


def test_engine_specific_keys():
    natives, notes = V.import_verl_text("actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4")
    assert "actor.megatron.tensor_model_parallel_size" not in natives
    assert any("model_engine=megatron" in n and "reject" in n for n in notes)
    natives, _ = V.import_verl_text(
        "model_engine=megatron actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4"
    )
    assert natives["actor.megatron.tensor_model_parallel_size"] == 4


def test_fsdp2_actor_gets_verl_critic_default():
    natives, _ = V.import_verl_text("actor_rollout_ref.actor.strategy=fsdp2 algorithm.adv_estimator=gae")
    assert natives["actor.strategy"] == "fsdp2" and natives["critic.strategy"] == "fsdp"
    natives, _ = V.import_verl_text("actor_rollout_ref.actor.strategy=fsdp2 critic.strategy=fsdp2")
    assert natives["critic.strategy"] is None  # same as the actor's: rlplan's default


def test_critic_deprecated_sp_key():
    natives, notes = V.import_verl_text(
        "critic.ulysses_sequence_parallel_size=2 critic.fsdp.ulysses_sequence_parallel_size=4"
    )
    assert natives["critic.ulysses_sequence_parallel_size"] == 4
    assert any("not forwarded" in n for n in notes)


def test_unknown_keys_are_warnings():
    s, notes = load_scenario_with_warnings(
        "qwen2.5-7b-grpo-8xh100", verl_overrides=["actor_rollout_ref.actor.made_up_key=3", "trainer.project_name=x"]
    )
    assert s.rollout.n == 5
    assert any("made_up_key" in n for n in notes) and not any("project_name" in n for n in notes)


def test_rlplan_lines_are_read_back():
    natives, _ = V.import_verl_text('# rlplan: hardware.gpu="a100-80gb"\n# rlplan: data.mean_response_length=300\n')
    assert natives == {"hardware.gpu": "a100-80gb", "data.mean_response_length": 300}
    _, notes = V.import_verl_text("# rlplan: not.a_field=1\n")
    assert any("not a scenario field" in n for n in notes)


def test_yaml_value_equal_to_verl_interpolated_default_is_inherit():
    natives, _ = V.import_verl_yaml(
        {
            "critic": {"ppo_epochs": "${oc.select:actor_rollout_ref.actor.ppo_epochs,1}"},
            "actor_rollout_ref": {"actor": {"ppo_epochs": 3}},
        }
    )
    assert natives["critic.ppo_epochs"] is None and natives["actor.ppo_epochs"] == 3


@pytest.mark.parametrize("text", list(HOSTILE_VERL_TEXTS.values()), ids=list(HOSTILE_VERL_TEXTS))
def test_hostile_text_is_read_without_executing(tmp_path: Path, text: str) -> None:
    canary = tmp_path / "canary"
    try:
        natives, _notes = import_verl_text(text.replace("{canary}", str(canary)))
    except InputError as err:  # issue 12: YAML with a python tag, an alias bomb or deep nesting is refused
        assert "refused" in str(err)
    else:
        # neither the bomb nor the 50,000-deep list was built: absent, or kept as the text it was
        assert isinstance(natives.get("rollout.n", ""), str)
    assert not list(tmp_path.iterdir()), "something was executed"


def test_hostile_text_within_a_cpu_bound(tmp_path: Path) -> None:
    """All the hostile texts together take ~0.2 CPU-seconds here (the 50,000-deep value is the largest)."""
    run_cpu_bounded(
        f"""
        for name, text in HOSTILE_VERL_TEXTS.items():
            try:
                import_verl_text(text.replace("{{canary}}", {str(tmp_path / "canary")!r}))
            except InputError:
                pass  # refused (issue 12)
        import_verl_text("# rlplan: model.config=" + DEEP_JSON + "\\nactor_rollout_ref.rollout.n=4\\n")
        """,
        setup="""
        from calculator.errors import InputError
        from calculator.verl import import_verl_text
        from tests.support.hostile import DEEP_JSON, HOSTILE_VERL_TEXTS
        """,
        cpu_s=5,
    )
    assert not list(tmp_path.iterdir()), "something was executed"


# Reconstructed from verl examples/grpo_trainer/run_deepseek671b_math_megatron_96gb.sh (volcengine/verl
# b178a3cd56f5, lines 70, 113-120): Megatron-core's hybrid CPU optimizer through the '+' pass-through keys.
DSV3_OPTIM_LINES = """
optimizer_offload_fraction=${OFFLOAD_FRACTION:-1.}
python3 -m verl.trainer.main_ppo --config-path=config --config-name='ppo_megatron_trainer.yaml' \\
    +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction=${optimizer_offload_fraction} \\
    +actor_rollout_ref.actor.optim.override_optimizer_config.overlap_cpu_optimizer_d2h_h2d=True \\
    +actor_rollout_ref.actor.optim.override_optimizer_config.use_precision_aware_optimizer=True \\
    +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload=True \\
    actor_rollout_ref.actor.megatron.grad_offload=True
"""


def test_megatron_hybrid_cpu_optimizer_keys_map_to_scenario_fields():
    natives, notes = import_verl_text(DSV3_OPTIM_LINES)
    assert natives["actor.strategy"] == "megatron"  # --config-name ppo_megatron_trainer
    assert natives["actor.megatron.optimizer_offload_fraction"] == 1.0
    assert natives["actor.megatron.overlap_cpu_optimizer_d2h_h2d"] is True
    assert natives["actor.megatron.use_precision_aware_optimizer"] is True
    assert natives["actor.megatron.optimizer_cpu_offload"] is True
    assert natives["actor.megatron.grad_offload"] is True
    assert not any("not modelled" in n for n in notes), notes


def test_megatron_hybrid_cpu_optimizer_exports_with_plus():
    s = load_scenario_with_warnings(
        "qwen2.5-7b-grpo-8xh100",
        overrides={
            "actor.strategy": "megatron",
            "actor.megatron.optimizer_cpu_offload": True,
            "actor.megatron.optimizer_offload_fraction": 0.5,
        },
    )[0]
    keys = dict(V.export_overrides(s))
    assert keys["+actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload"] is True
    assert keys["+actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction"] == 0.5


def test_megatron_lora_is_the_model_lora_dict():
    """verl >= 0.7's Megatron engine reads LoRA from model.lora.rank (megatron_peft.get_peft_cls); the FSDP key
    model.lora_rank is not read by it (and model.lora.rank not by FSDP): a note, and a full fine-tune."""
    natives, _ = V.import_verl_text("model_engine=megatron actor_rollout_ref.model.lora.rank=32")
    assert natives["model.lora_rank"] == 32
    natives, notes = V.import_verl_text("model_engine=megatron actor_rollout_ref.model.lora_rank=32")
    assert "model.lora_rank" not in natives
    assert any("does not read it" in n and "model.lora.rank" in n for n in notes)
    natives, notes = V.import_verl_text("actor_rollout_ref.model.lora.rank=32")
    assert "model.lora_rank" not in natives and any("does not read it" in n for n in notes)
    assert V.import_verl_text("actor_rollout_ref.model.lora_rank=32")[0]["model.lora_rank"] == 32


def test_later_release_of_a_preset_is_matched_with_a_note():
    natives, notes = V.import_verl_text("actor_rollout_ref.model.path=Qwen/Qwen3-30B-A3B-Instruct-2507")
    assert natives["model.path"] == "qwen3-30b-a3b"
    assert any("later release" in n and "--model" in n for n in notes)
    natives, notes = V.import_verl_text("actor_rollout_ref.model.path=Qwen/Qwen3-30B-A3B-Base")
    assert natives["model.path"] == "qwen3-30b-a3b" and not any("later release" in n for n in notes)
    natives, _ = V.import_verl_text("actor_rollout_ref.model.path=Qwen/Qwen3-30B-A3B-FP8")
    assert "model.path" not in natives  # a quantised checkpoint is not the bf16 preset


# verl main (b178a3cd5) examples/ppo_trainer/run_qwen2-7b_rm_legacy.sh: reward_model.use_reward_loop=False selects
# verl's legacy FSDP reward worker, configured by reward_model.micro_batch_size_per_gpu,
# reward_model.model.fsdp_config.param_offload and reward_model.model.use_remove_padding. Before, the first was
# listed as irrelevant (silently dropped) and the others as unknown keys; they change the reward phase's memory.
def test_legacy_reward_worker_keys_are_reported_not_modelled():
    _natives, notes = V.import_verl_text(
        "python3 -m verl.trainer.main_ppo reward_model.enable=True reward_model.use_reward_loop=False "
        "reward_model.micro_batch_size_per_gpu=32 reward_model.model.fsdp_config.param_offload=True "
        "reward_model.model.use_remove_padding=True actor_rollout_ref.actor.router_replay.mode=R3 "
        "data.sampler.class_name=CurriculumSampler\n"
    )
    assert not any(n.startswith("verl overrides not modelled") for n in notes), notes  # nothing unknown
    for key in (
        "reward_model.use_reward_loop",
        "reward_model.micro_batch_size_per_gpu",
        "reward_model.model.fsdp_config.param_offload",
        "reward_model.model.use_remove_padding",
        "actor_rollout_ref.actor.router_replay.mode",
    ):
        assert any(n.startswith(f"verl {key}: not modelled; likely effect: ") for n in notes), key
    assert not any("data.sampler" in n for n in notes)  # the data order: no effect, no note


@pytest.mark.parametrize(
    ("text", "warned"),
    [
        ("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n", True),  # a wrong file
        ("#!/bin/bash\nset -x\necho starting\n", True),
        ("python3 -m verl.trainer.main_ppo \\\n  actor_rollout_ref.rollout.n=4\n", False),
        ("# rlplan: rollout.n=4\n", False),
        ("   \n", False),  # nothing pasted: nothing to say
    ],
)
def test_a_script_without_overrides_says_so(text: str, warned: bool) -> None:
    """A file with no key=value override would otherwise be estimated on verl's defaults without a word."""
    _, notes = import_verl_text(text)
    assert any("no verl key=value overrides found" in n for n in notes) is warned
