"""verl 0.9.1's defaults for the mapped keys (calculator/verl/defaults.py): complete for each engine's config,
interpolations kept as Hydra text, the Megatron config's differences, and what export relies on (a key at its
default is not written). tests/reference/test_verl_real.py checks every value against the verl 0.9.1 wheel."""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator import verl as V
from calculator.inputs.scenario import MegatronSection
from calculator.verl.keys import UNEVEN_PP_FIELDS

# Added with '+' into the engine_kwargs pass-through dict (default {}): no default to copy.
NO_DEFAULT = {"actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_dtype"}
# Megatron: the '+' keys of optim.override_optimizer_config and of the uneven pipeline split
# (override_transformer_config) and megatron.grad_offload (removed in verl 0.9.1): absent from the 0.9.1 config, so
# Megatron-core's default (= the Scenario's) applies.
NO_MEGATRON_DEFAULT = {
    f"{role}.{path}"
    for role in ("actor_rollout_ref.actor", "critic")
    for path in (
        "megatron.grad_offload",
        "optim.override_optimizer_config.optimizer_cpu_offload",
        "optim.override_optimizer_config.optimizer_offload_fraction",
        "optim.override_optimizer_config.overlap_cpu_optimizer_d2h_h2d",
        *(f"megatron.override_transformer_config.{f}" for f in UNEVEN_PP_FIELDS),
    )
}


@pytest.mark.parametrize("engine", ["fsdp", "megatron"])
def test_every_mapped_key_of_the_engine_has_a_default(engine: str):
    defaults = V.verl_defaults(engine)
    missing = {km.verl for km in V.KEY_MAPS if engine in km.engines and km.verl not in defaults}
    assert missing == NO_DEFAULT | (NO_MEGATRON_DEFAULT if engine == "megatron" else set())


def test_required_and_interpolated_values_are_kept_as_text():
    d = V.VERL_DEFAULTS
    assert d["actor_rollout_ref.rollout.name"] == "???"  # required: no default
    assert d["data.train_batch_size"] == 1024 and d["data.max_prompt_length"] == 512
    assert d["actor_rollout_ref.ref.log_prob_use_dynamic_bsz"] == (
        "${oc.select:actor_rollout_ref.actor.use_dynamic_bsz,false}"
    )
    assert d["critic.forward_max_token_len_per_gpu"] == "${.ppo_max_token_len_per_gpu}"  # relative


def test_megatron_config_differences():
    fsdp, meg = V.verl_defaults("fsdp"), V.verl_defaults("megatron")
    a = "actor_rollout_ref.actor"
    assert fsdp[f"{a}.strategy"] == "fsdp" and meg[f"{a}.strategy"] == "megatron"
    assert meg[f"{a}.optim.optimizer"] == "adam"
    assert meg[f"{a}.megatron.tensor_model_parallel_size"] == MegatronSection().tensor_model_parallel_size == 1
    assert f"{a}.fsdp_config.param_offload" in fsdp and f"{a}.fsdp_config.param_offload" not in meg
    assert V.verl_defaults() == fsdp  # FSDP is verl's default engine


def test_a_setting_at_verl_default_is_not_exported():
    """Export writes what differs from these defaults (plus the keys a launch needs)."""
    base = load_scenario("qwen2.5-7b-grpo-8xh100")
    key = "actor_rollout_ref.rollout.gpu_memory_utilization"
    at_default = load_scenario(base, overrides={"rollout.gpu_memory_utilization": V.VERL_DEFAULTS[key]})
    assert key not in dict(V.export_overrides(at_default))
    other = load_scenario(base, overrides={"rollout.gpu_memory_utilization": 0.55})
    assert dict(V.export_overrides(other))[key] == 0.55
