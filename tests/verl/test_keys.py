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
    assert V.verl_to_native("+actor_rollout_ref.rollout.n") == "rollout.n"
    assert V.verl_to_native("actor_rollout_ref.actor.made_up") is None
