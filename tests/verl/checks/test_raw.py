"""Rules on the raw verl keys of an imported launch script (calculator/verl/checks/raw.py), through the importer
that runs them: the deprecated global micro-batch sizes, alone or beside the ``*_per_gpu`` ones, only for the roles
that run and only without dynamic batching (verl 0.9.1 ``ActorConfig.__post_init__``, ``validate_config``,
``CriticConfig.__post_init__``, ``init_model``)."""

from __future__ import annotations

import pytest

from calculator import verl as V

A = "actor_rollout_ref"
TWICE = "You have set both"
DEPRECATED = "(the deprecated global micro-batch) passes validate_config"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (f"{A}.actor.ppo_micro_batch_size=64 {A}.actor.ppo_micro_batch_size_per_gpu=8",
         "[actor] You have set both 'actor.ppo_micro_batch_size' AND 'actor.ppo_micro_batch_size_per_gpu'"),
        (f"{A}.actor.ppo_micro_batch_size=64", f"{A}.actor.ppo_micro_batch_size {DEPRECATED}"),
        (f"{A}.rollout.log_prob_micro_batch_size=64", f"{A}.rollout.log_prob_micro_batch_size {DEPRECATED}"),
        (f"{A}.ref.log_prob_micro_batch_size=64 {A}.ref.log_prob_micro_batch_size_per_gpu=4 {A}.actor.use_kl_loss=True",
         f"[{A}.ref] You have set both '{A}.ref.log_prob_micro_batch_size'"),
        ("algorithm.adv_estimator=gae critic.ppo_micro_batch_size=64",
         "[critic] You have set both 'critic.micro_batch_size' AND 'critic.micro_batch_size_per_gpu'"),
    ],
)  # fmt: skip
def test_deprecated_micro_batch_keys_are_reported(text: str, fragment: str) -> None:
    _, notes = V.import_verl_text(text)
    assert any(fragment in n for n in notes), notes


def test_critic_note_explains_the_interpolated_default() -> None:
    """critic.ppo_micro_batch_size_per_gpu defaults to ${oc.select:.ppo_micro_batch_size,null}: one key sets both."""
    _, notes = V.import_verl_text("algorithm.adv_estimator=gae critic.ppo_micro_batch_size=64")
    assert any("setting critic.ppo_micro_batch_size alone sets both" in n for n in notes), notes


@pytest.mark.parametrize(
    "text",
    [
        # dynamic batching: verl ignores the micro-batch sizes, so neither rule applies
        f"{A}.actor.ppo_micro_batch_size=64 {A}.actor.ppo_micro_batch_size_per_gpu=8 {A}.actor.use_dynamic_bsz=True",
        # no KL term: the reference policy does not run
        f"{A}.ref.log_prob_micro_batch_size=64 {A}.ref.log_prob_micro_batch_size_per_gpu=4 {A}.actor.use_kl_loss=False",
        # GRPO: no critic
        "algorithm.adv_estimator=grpo critic.ppo_micro_batch_size=64",
        # the supported keys alone
        f"{A}.actor.ppo_micro_batch_size_per_gpu=8 {A}.rollout.log_prob_micro_batch_size_per_gpu=16",
    ],
)
def test_no_report_where_verl_does_not_check(text: str) -> None:
    _, notes = V.import_verl_text(text)
    assert not any(TWICE in n or DEPRECATED in n for n in notes), notes


LAYERED = "To use layered_summon, you must make sure base-model is preloaded in vllm"


@pytest.mark.parametrize(
    ("text", "raises"),
    [
        (f"{A}.model.lora_rank=32 {A}.rollout.layered_summon=true", True),  # default load_format: dummy
        (f"{A}.model.lora_rank=32 {A}.rollout.layered_summon=true {A}.rollout.load_format=dummy_dtensor", True),
        (f"{A}.model.lora_rank=32 {A}.rollout.layered_summon=true {A}.rollout.load_format=safetensors", False),
        (f"{A}.model.lora_rank=32 {A}.rollout.layered_summon=true {A}.model.lora.merge=true", False),  # merged sync
        (f"{A}.rollout.layered_summon=true", False),  # no LoRA: no adapter sync, no base-only sync
        (f"{A}.model.lora_rank=32", False),  # whole-model summon: no base-only request
    ],
)
def test_layered_summon_needs_a_real_load_format(text: str, raises: bool) -> None:
    """verl asks for the base model alone at the first sync when load_format contains 'dummy'
    (engine_workers.py base_sync_done), and collect_lora_params refuses that with layered_summon."""
    _, notes = V.import_verl_text(text)
    assert any(LAYERED in n for n in notes) is raises, notes


@pytest.mark.parametrize("rank", ["[1,2]", "abc", "true", "null"])
def test_layered_summon_rule_reads_odd_values(rank: str) -> None:
    """Found by tests/security/test_fuzz_long.py: a list where a LoRA rank belongs must not crash the rule."""
    _, notes = V.import_verl_text(f"{A}.model.lora_rank={rank} {A}.rollout.layered_summon=true")
    assert not any(LAYERED in n for n in notes)
