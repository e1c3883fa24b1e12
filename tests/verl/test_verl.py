"""verl round trip (issue #7): export a scenario as verl settings, import launch scripts and verl YAML.

The property tests generate valid scenarios by choosing many fields from small sets (invalid combinations
are skipped) and check that ``import(export(s)) == s`` exactly, in all three formats.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from calculator import load_scenario
from calculator import verl as V
from calculator.inputs.presets import model_presets
from calculator.inputs.scenario import Scenario
from tests.support.strategies import scenario_dicts

# Fields verl has a key for but that can still need a "# rlplan:" line, and why.
EXPRESSIBLE_BUT_AMBIGUOUS = {
    "critic.strategy": "null (= the actor's) vs the same value written explicitly; a Megatron critic beside an "
    "FSDP actor (model_engine picks both)",
    "critic.model_path": "null (= the actor's model) vs the actor's model written explicitly",
    "reward_model.model_path": "same as critic.model_path",
    "hardware.gpus_per_node": "a single-node launch (trainer.nnodes=1) does not tell the node size",
    "actor.optim.optimizer": "Megatron's 'adam' is rlplan's AdamW and adam; Adafactor has no Megatron name",
    "model.path": "a model given as model.config: verl reads the architecture from the checkpoint",
    "model.lora_rank": "Megatron LoRA on verl 0.5 / 0.6, whose Megatron config has no model.lora",
    "model.lora_alpha": "same as model.lora_rank",
}


def _maybe(draw, values: list[Any]) -> Any:
    return draw(st.sampled_from([*values, "__skip__"]))


def _put(d: dict[str, Any], key: str, value: Any) -> None:
    if value == "__skip__":
        return
    node = d
    parts = key.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value


EXTRA_FIELDS: dict[str, list[Any]] = {
    "name": ["custom", "my run: 7B, GRPO", "ünïcode «run»"],
    "description": ["", "two\nlines", "quotes \" and ' and $HOME"],
    "verl_version": ["0.9", "0.9.1", "0.9.0", "0.8", "0.7", "0.7.1", "0.7.0", "0.6", "0.5"],
    "hardware.gpus_per_node": [8, 8, 4],
    "model.lora_alpha": [16, 32],
    "model.target_modules": ["all-linear", "attention", "mlp"],
    "model.use_remove_padding": [True, True, False],
    "algorithm.kl_coef": [0.001, 0.01],
    "actor.ppo_epochs": [1, 2],
    "actor.kl_loss_coef": [0.001, 0.05],
    "actor.calculate_entropy": [False, True],
    "actor.entropy_checkpointing": [False, True],
    "actor.clip_ratio_high": [0.2, 0.28],
    "actor.use_torch_compile": [True, False],
    "actor.optim.optimizer": ["AdamW", "adam", "SGD", "Adafactor"],
    "actor.optim.lr": [1e-6, 3e-7],
    "actor.ulysses_sequence_parallel_size": [1, 1, 2],
    "actor.fsdp_config.fsdp_size": [-1, 2],
    "actor.fsdp_config.model_dtype": ["fp32", "bf16"],
    "actor.fsdp_config.reshard_after_forward": [True, False],
    "actor.fsdp_config.use_no_sync_for_gradient_accumulation": [False, True],
    "actor.megatron.tensor_model_parallel_size": [1, 2],
    "actor.megatron.pipeline_model_parallel_size": [1, 2],
    "actor.megatron.virtual_pipeline_model_parallel_size": [None, 2],
    "actor.megatron.expert_model_parallel_size": [1, 2],
    "actor.megatron.expert_tensor_parallel_size": [None, 1],
    "actor.megatron.sequence_parallel": [True, False],
    "actor.megatron.param_offload": [False, True],
    "ref.log_prob_micro_batch_size_per_gpu": [None, 4, 16],
    "ref.log_prob_use_dynamic_bsz": [None, True, False],
    "ref.log_prob_max_token_len_per_gpu": [None, 8192],
    "ref.ulysses_sequence_parallel_size": [None, 1],
    "ref.fsdp_config.param_offload": [False, True],
    "ref.megatron_param_offload": [None, True, False],
    "rollout.data_parallel_size": [1, 1, 2],
    "rollout.dtype": ["bfloat16", "float16"],
    "rollout.quantization": ["none", "fp8"],
    "rollout.kv_cache_dtype": ["auto", "fp8"],
    "rollout.max_num_batched_tokens": [8192, 16384],
    "rollout.max_num_seqs": [256, 1024],
    "rollout.max_model_len": [None, 8192],
    "rollout.enable_chunked_prefill": [True, False],
    "rollout.log_prob_micro_batch_size_per_gpu": [None, 8, 32],
    "rollout.log_prob_use_dynamic_bsz": [None, True, False],
    "rollout.log_prob_max_token_len_per_gpu": [None, 24576],
    "rollout.update_weights_bucket_megabytes": [2048, 512],
    "critic.enable": [None, True, False],
    "critic.model_path": [None, "qwen2.5-0.5b", "qwen2.5-7b"],
    "critic.strategy": [None, "fsdp", "fsdp2", "megatron"],
    "critic.ppo_mini_batch_size": [None, 16],
    "critic.ppo_micro_batch_size_per_gpu": [None, 4],
    "critic.forward_micro_batch_size_per_gpu": [None, 8],
    "critic.use_dynamic_bsz": [None, True, False],
    "critic.ppo_max_token_len_per_gpu": [32768, 16384],
    "critic.forward_max_token_len_per_gpu": [None, 65536],
    "critic.ppo_epochs": [None, 2],
    "critic.ulysses_sequence_parallel_size": [1, 2],
    "critic.enable_gradient_checkpointing": [True, False],
    "critic.lora_rank": [0, 16],
    "critic.megatron.tensor_model_parallel_size": [1, 2],
    "reward_model.enable": [False, True],
    "reward_model.model_path": [None, "qwen2.5-1.5b", "qwen2.5-7b"],
    "reward_model.rollout.tensor_model_parallel_size": [2, 1],
    "reward_model.rollout.gpu_memory_utilization": [0.5, 0.3],
    "overheads.cuda_context_gib": [0.5, 0.75],
    "efficiency.train_mfu": [0.35, 0.41],
    "data.gen_batch_size": [None, 2048],
}


@st.composite
def rich_scenarios(draw) -> Scenario:
    d = draw(scenario_dicts())
    if draw(st.integers(0, 3)) == 0:
        d["actor"]["strategy"] = "megatron"
        d["actor"]["fsdp_config"]["offload_policy"] = False
    for key, values in EXTRA_FIELDS.items():
        _put(d, key, _maybe(draw, values))
    if draw(st.integers(0, 9)) == 0:  # a custom HF config instead of a preset
        d["model"]["config"] = dict(model_presets()["qwen2.5-0.5b"].config)
    if draw(st.booleans()):
        d["model"]["use_dora"] = d["model"].get("lora_rank", 0) > 0
    try:
        return Scenario(**d)
    except ValidationError:
        assume(False)
        raise


def _natives(exp: V.Export) -> dict[str, Any]:
    return dict(exp.rlplan)


SETTINGS = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow]
)


@SETTINGS
@given(rich_scenarios())
def test_round_trip_command(s: Scenario):
    assert load_scenario(None, verl_overrides=V.format_overrides(s)) == s


@SETTINGS
@given(rich_scenarios())
def test_round_trip_yaml(s: Scenario):
    assert load_scenario(None, verl_overrides=V.export_yaml(s)) == s


@SETTINGS
@given(rich_scenarios(), rich_scenarios())
def test_round_trip_overrides_onto_a_base(s: Scenario, base: Scenario):
    exp = V.export_scenario(s, base)
    text = V.format_overrides(exp, "overrides")
    assert not any(line.startswith("#") for line in text.splitlines()), "verl keys only"
    assert load_scenario(base, overrides=_natives(exp), verl_overrides=text) == s


@SETTINGS
@given(rich_scenarios())
def test_rlplan_lines_only_for_what_verl_cannot_say(s: Scenario):
    engine = V.engine_of(s)
    for key, _ in V.export_scenario(s).rlplan:
        assert V.is_rlplan_only(key) or V.native_to_verl(key, engine) is None or key in EXPRESSIBLE_BUT_AMBIGUOUS, key


def test_plain_scenario_needs_no_rlplan_lines():
    s = load_scenario(
        "qwen2.5-7b-grpo-8xh100", overrides={"name": "custom", "description": "", "data.mean_response_length": None}
    )
    assert V.export_scenario(s).rlplan == []
