"""The key tables (calculator/verl/keys.py): every mapped field and its verl key, both ways, per engine."""

from __future__ import annotations

from calculator import verl as V


def test_native_verl_inverse():
    for km in V.KEY_MAPS:
        if km.native == "hardware.num_gpus":
            continue
        assert V.verl_to_native(km.verl) == km.native
        assert V.native_to_verl(km.native) == km.verl
    assert V.native_to_verl("hardware.gpu") is None and V.native_to_verl("data.mean_response_length") is None
    assert V.native_to_verl("actor.fsdp_config.param_offload", "megatron") is None
    assert V.native_to_verl("actor.strategy", "megatron") == "model_engine"
    assert V.native_to_verl("model.lora_rank", "megatron") == "actor_rollout_ref.model.lora.rank"
    assert V.native_to_verl("model.lora_rank", "fsdp") == "actor_rollout_ref.model.lora_rank"
    assert V.verl_to_native("+actor_rollout_ref.rollout.n") == "rollout.n"
    assert V.verl_to_native("actor_rollout_ref.actor.made_up") is None


def test_aliases_point_at_mapped_fields():
    """Older or duplicate verl spellings (33 of them) import into the same Scenario fields; 8 are Megatron's
    precision-aware optimizer settings passed through optim.override_optimizer_config (actor and critic), 2 the
    Megatron engine's LoRA keys (model.lora.rank / alpha)."""
    assert len(V.ALIASES) == 33
    for verl_key, native in V.ALIASES.items():
        assert V.native_field_exists(native), (verl_key, native)
        assert V.verl_to_native(verl_key) == native
    assert V.verl_to_native("critic.model.fsdp_config.param_offload") == "critic.fsdp.param_offload"


def test_rlplan_only_fields_have_no_verl_key():
    for native in ("hardware.gpu", "data.mean_response_length", "model.config", "overheads.cuda_context_gib", "name"):
        assert V.is_rlplan_only(native) and V.native_to_verl(native) is None, native
    assert not V.is_rlplan_only("rollout.n")


def test_engine_specific_keys():
    """FSDP-only keys do not exist in the Megatron config and the other way round."""
    for km in V.KEY_MAPS:
        if km.engines == V.FSDP_ONLY:
            assert V.native_to_verl(km.native, "megatron") is None, km.native
        if km.engines == V.MEGATRON_ONLY:
            assert V.native_to_verl(km.native, "fsdp") is None, km.native
        assert km.group in V.GROUPS
