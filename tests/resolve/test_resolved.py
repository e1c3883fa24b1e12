"""The resolved plan: verl's inheritance rules applied once, with provenance (calculator/resolve/resolved.py).

Hand-checked against verl 0.9.1's config interpolations (calculator/resolve/inheritance.py cites them).
"""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator.names import PHASE_ORDER, Phase, Strategy
from calculator.resolve.inheritance import INHERITS, field_value, inherited
from calculator.resolve.resolved import Source, resolve


def _resolve(preset: str = "qwen2.5-7b-grpo-8xh100", **overrides: object):
    return resolve(load_scenario(preset, overrides=dict(overrides)))


def test_every_inheritance_chain_names_real_fields() -> None:
    s = load_scenario("qwen2.5-7b-ppo-8xh100")
    for key, chain in INHERITS.items():
        for name in (key, *chain):
            field_value(s, name)  # AttributeError if a chain names a field that does not exist


def test_log_prob_settings_inherit_from_the_actor_and_say_so() -> None:
    r = _resolve(**{"actor.use_dynamic_bsz": True, "actor.ppo_max_token_len_per_gpu": 12000})
    p = r.passes[Phase.OLD_LOG_PROB]
    assert p.use_dynamic_bsz is True and p.max_token_len_per_gpu == 12000
    texts = {d.key: d for d in r.decisions}
    assert texts["rollout.log_prob_max_token_len_per_gpu"].source is Source.INHERITED
    assert "actor.ppo_max_token_len_per_gpu" in texts["rollout.log_prob_max_token_len_per_gpu"].note


def test_ref_micro_batch_falls_back_through_rollout_then_actor() -> None:
    s = load_scenario(
        "qwen2.5-7b-grpo-8xh100",
        overrides={
            "actor.use_kl_loss": True,
            "actor.use_dynamic_bsz": False,
            "ref.log_prob_micro_batch_size_per_gpu": None,
            "rollout.log_prob_micro_batch_size_per_gpu": 6,
        },
    )
    assert inherited(s, "ref.log_prob_micro_batch_size_per_gpu") == (6, "rollout.log_prob_micro_batch_size_per_gpu")
    r = resolve(s)
    assert r.passes[Phase.REF_LOG_PROB].micro_batch_size_per_gpu == 6


def test_missing_micro_batch_is_assumed_one_and_recorded() -> None:
    # The actor packs by tokens, the old log-prob pass does not, and no micro-batch is set anywhere: verl would
    # refuse (calculator.verl.checks says so); the estimate assumes 1 sequence and records it.
    r = _resolve(
        **{
            "actor.use_dynamic_bsz": True,
            "actor.ppo_micro_batch_size_per_gpu": None,
            "rollout.log_prob_use_dynamic_bsz": False,
            "rollout.log_prob_micro_batch_size_per_gpu": None,
        }
    )
    assert r.passes[Phase.OLD_LOG_PROB].micro_batch_size_per_gpu == 1
    assumed = {d.key: d for d in r.decisions if d.source is Source.ASSUMED}
    assert set(assumed) == {"rollout.log_prob_micro_batch_size_per_gpu"}
    assert "refuse" in assumed["rollout.log_prob_micro_batch_size_per_gpu"].note


def test_dynamic_batching_records_no_assumed_micro_batch() -> None:
    r = _resolve(**{"actor.use_dynamic_bsz": True, "actor.ppo_micro_batch_size_per_gpu": None})
    assert not [d for d in r.decisions if d.source is Source.ASSUMED]


def test_critic_inherits_strategy_and_v1_packs_it_by_32768_tokens() -> None:
    r = _resolve("qwen2.5-7b-ppo-8xh100", **{"critic.strategy": None, "actor.strategy": "fsdp2"})
    assert r.critic is not None and r.critic.strategy is Strategy.FSDP2
    upd = r.passes[Phase.UPDATE_CRITIC]
    assert upd.use_dynamic_bsz is True and upd.max_token_len_per_gpu == 32768  # verl 0.9.1 V1 critic engine
    assert any(d.key == "critic.use_dynamic_bsz" and d.source is Source.FIXED for d in r.decisions)
    # verl 0.8.0 wheel: the critic engine is always dynamic too, but the update packs
    # critic.ppo_max_token_len_per_gpu (ray_trainer.py:814); the legacy 0.7.1 worker honours use_dynamic_bsz.
    v08 = _resolve("qwen2.5-7b-ppo-8xh100", verl_version="0.8", **{"critic.ppo_max_token_len_per_gpu": 12000})
    assert v08.passes[Phase.UPDATE_CRITIC].use_dynamic_bsz is True
    assert v08.passes[Phase.UPDATE_CRITIC].max_token_len_per_gpu == 12000
    assert v08.passes[Phase.CRITIC_VALUES].max_token_len_per_gpu == 32768
    old = _resolve("qwen2.5-7b-ppo-8xh100", verl_version="0.7.1", **{"critic.use_dynamic_bsz": False})
    assert old.passes[Phase.UPDATE_CRITIC].use_dynamic_bsz is False


def test_phases_follow_the_roles() -> None:
    grpo = _resolve()
    assert Phase.CRITIC_VALUES not in grpo.phases and grpo.phases[0] is Phase.ROLLOUT
    ppo = _resolve("qwen2.5-7b-ppo-8xh100")
    assert set(ppo.phases) >= {Phase.CRITIC_VALUES, Phase.UPDATE_CRITIC}
    assert list(ppo.phases) == [p for p in PHASE_ORDER if p in ppo.phases]
    kl = _resolve(**{"actor.use_kl_loss": True})
    assert Phase.REF_LOG_PROB in kl.phases and kl.ref is not None and not kl.ref_via_actor
    lora = _resolve(**{"actor.use_kl_loss": True, "model.lora_rank": 32})
    assert lora.ref is None and lora.ref_via_actor and Phase.REF_LOG_PROB in lora.phases


@pytest.mark.parametrize(("tp", "pp", "cp", "dp"), [(1, 1, 1, 16), (2, 2, 1, 4), (4, 1, 2, 2)])
def test_megatron_data_parallel_is_world_over_model_parallel(tp: int, pp: int, cp: int, dp: int) -> None:
    r = _resolve(
        **{
            "hardware.num_gpus": 16,
            "actor.strategy": "megatron",
            "actor.megatron.tensor_model_parallel_size": tp,
            "actor.megatron.pipeline_model_parallel_size": pp,
            "actor.megatron.context_parallel_size": cp,
            "actor.ulysses_sequence_parallel_size": 2,  # ignored under Megatron
        }
    )
    assert r.actor.dp == dp and r.actor.sp == 1


def test_engine_settings_and_max_model_len() -> None:
    r = _resolve(**{"rollout.max_model_len": None, "rollout.quantization": "fp8", "rollout.kv_cache_dtype": "fp8"})
    assert r.rollout.max_model_len == max(r.actor_arch.max_position_embeddings, r.worst_lengths.sequence)
    assert r.rollout.weight_bytes_per_param == 1 and r.rollout.kv_dtype_bytes == 1
    assert r.rollout.largest_capture == min(2 * r.rollout.max_num_seqs, 512, r.rollout.max_num_batched_tokens)
    eager = _resolve(**{"rollout.enforce_eager": True})
    assert eager.rollout.largest_capture == 0
    off = _resolve(**{"rollout.enable_chunked_prefill": False})
    assert off.rollout.profile_tokens == max(off.rollout.max_num_batched_tokens, off.rollout.max_model_len)


def test_processes_follow_the_release() -> None:
    assert _resolve(verl_version="0.9").num_processes == 2  # trainer + rollout server
    assert _resolve(verl_version="0.6").num_processes == 1  # vLLM inside the trainer process
    assert _resolve(**{"reward_model.enable": True}).num_processes == 3


def test_expected_and_worst_micro_batches_by_hand() -> None:
    # 8 GPUs, GRPO preset: fixed micro-batches; packed tokens = micro x (mean prompt + mean response).
    r = _resolve(
        **{
            "actor.use_dynamic_bsz": False,
            "actor.ppo_micro_batch_size_per_gpu": 4,
            "data.mean_prompt_length": 200,
            "data.mean_response_length": 300,
        }
    )
    upd = r.passes[Phase.UPDATE_ACTOR]
    s = r.scenario
    assert upd.expected.tokens_per_gpu == 4 * (200 + 300)
    assert upd.worst.tokens_per_gpu == 4 * (s.data.max_prompt_length + s.data.max_response_length)
