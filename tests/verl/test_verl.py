"""verl round trip (issue #7): export a scenario as verl settings, import launch scripts and verl YAML.

The property tests generate valid scenarios by choosing many fields from small sets (invalid combinations
are skipped) and check that ``import(export(s)) == s`` exactly, in all three formats.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from calculator import load_scenario
from calculator import verl as V
from calculator.inputs.presets import model_presets
from calculator.inputs.scenario import Scenario
from calculator.loading import load_scenario_with_warnings
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
    "verl_version": ["0.9", "0.8", "0.7", "0.6"],
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


# ---------------------------------------------------------------------------------------------- mapping


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


def test_native_to_verl_items():
    s = load_scenario("qwen2.5-7b-grpo-8xh100")
    assert V.native_to_verl_items("hardware.num_gpus", 16, s) == [("trainer.n_gpus_per_node", 8), ("trainer.nnodes", 2)]
    assert V.native_to_verl_items("model.path", "qwen2.5-7b", s) == [
        ("actor_rollout_ref.model.path", "Qwen/Qwen2.5-7B")
    ]
    assert V.native_to_verl_items("actor.strategy", "megatron", s) == [("model_engine", "megatron")]
    assert V.native_to_verl_items("hardware.gpu", "a100-80gb", s) == []


@pytest.mark.parametrize("model_id", sorted(model_presets()))
def test_model_path_round_trip(model_id):
    repo = model_presets()[model_id].hf_repo
    assert V._model_id_from_path(repo) == model_id
    assert V._model_id_from_path(f"/models/{repo.split('/')[-1]}") == model_id


# ---------------------------------------------------------------------------------------------- export format


def test_command_is_valid_bash_and_passes_exactly_the_overrides(tmp_path):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    s = load_scenario(
        "qwen2.5-7b-grpo-8xh100",
        overrides={"model.target_modules": "attention", "model.lora_rank": 16, "ref.log_prob_use_dynamic_bsz": None},
    )
    cmd = V.format_overrides(s)
    script = tmp_path / "run.sh"
    script.write_text('python3() { printf "%s\\n" "$@"; }\n' + cmd)
    out = subprocess.run([bash, str(script)], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[:2] == ["-m", "verl.trainer.main_ppo"]
    expected = [f"{k}={V.hydra_value(v)}" for k, v in V.export_overrides(s)]
    assert out[2:] == expected
    assert "actor_rollout_ref.model.target_modules=[q_proj,k_proj,v_proj,o_proj]" in out


def test_command_layout():
    s = load_scenario("qwen2.5-7b-ppo-8xh100")
    text = V.format_overrides(s)
    lines = text.splitlines()
    launch = lines.index(f"{V.LAUNCH} \\")
    assert all(line.startswith("#") for line in lines[:launch])
    body = lines[launch + 1 :]
    assert all(line.endswith(" \\") for line in body[:-1]) and not body[-1].endswith("\\")
    groups = [line.strip().strip("`# \\") for line in body if line.strip().startswith("`#")]
    assert groups == [g for g in V.GROUPS if g in groups] and {"data", "actor", "rollout", "critic", "trainer"} <= set(
        groups
    )
    for key in (
        "actor_rollout_ref.rollout.name=vllm",
        "trainer.n_gpus_per_node=8",
        "trainer.nnodes=1",
        "actor_rollout_ref.model.path=",
        "critic.model.path=",
        "data.max_prompt_length=",
    ):
        assert key in text


def test_only_non_defaults_and_required_keys():
    s = load_scenario(
        "qwen2.5-7b-grpo-8xh100", overrides={"rollout.gpu_memory_utilization": 0.5, "rollout.temperature": 0.7}
    )
    keys = dict(V.export_overrides(s))
    assert "actor_rollout_ref.rollout.gpu_memory_utilization" not in keys  # = verl's default
    assert keys["actor_rollout_ref.rollout.temperature"] == 0.7
    assert "actor_rollout_ref.actor.ppo_epochs" not in keys
    assert keys["actor_rollout_ref.rollout.name"] == "vllm"  # required: no verl default


def test_megatron_export():
    s = load_scenario(
        "qwen2.5-7b-grpo-8xh100",
        overrides={
            "actor.strategy": "megatron",
            "actor.megatron.tensor_model_parallel_size": 4,
            "actor.megatron.param_offload": True,
            "actor.fsdp_config.param_offload": True,  # no such key under Megatron: a # rlplan line
        },
    )
    pairs = V.export_overrides(s)
    keys = [k for k, _ in pairs]
    assert keys[keys.index("model_engine")] == "model_engine" and dict(pairs)["model_engine"] == "megatron"
    assert dict(pairs)["actor_rollout_ref.actor.megatron.tensor_model_parallel_size"] == 4
    assert not any("fsdp_config" in k for k in keys)
    assert ("actor.fsdp_config.param_offload", True) in V.export_scenario(s).rlplan
    assert "model_engine: megatron" in V.export_yaml(s)


def test_yaml_is_nested_with_headers():
    s = load_scenario("qwen2.5-7b-ppo-8xh100")
    text = V.export_yaml(s)
    data = yaml.safe_load(text)
    assert data["actor_rollout_ref"]["rollout"]["name"] == "vllm"
    assert text.count("\nactor_rollout_ref:") == 1
    assert "# critic" in text and "  # rollout" in text


# ---------------------------------------------------------------------------------------------- import: shell

SCRIPT = r"""#!/usr/bin/env bash
# verl examples/grpo_trainer style launch script
set -x
export VLLM_ATTENTION_BACKEND=XFORMERS
MODEL_PATH=Qwen/Qwen2.5-7B-Instruct
NNODES=${NNODES:-2}
GPUS=8
n_resp=$((2 * 4))
ppo_mini=$(( 256 / 2 ))
max_prompt=1024
export max_response=2048
TOKENS=$(( (max_prompt + max_response) * 4 ))
RUN_ID=$(date +%s)

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/gsm8k/train.parquet \
    data.train_batch_size=1024 \
    data.max_prompt_length=$max_prompt \
    data.max_response_length=${max_response} \
    actor_rollout_ref.model.path="$MODEL_PATH" \
    actor_rollout_ref.actor.ppo_mini_batch_size=$ppo_mini \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$TOKENS \
    actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu='${actor_rollout_ref.actor.ppo_max_token_len_per_gpu}' \
    actor_rollout_ref.rollout.max_model_len='${oc.select:data.max_prompt_length,1}' \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=$n_resp \
    actor_rollout_ref.rollout.tensor_model_parallel_size=${TP:-4} \
    +actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_dtype=fp8 \
    trainer.experiment_name=grpo_$RUN_ID \
    data.gen_batch_size=$((GEN * 2)) \
    actor_rollout_ref.rollout.temperature=$RUN_ID \
    trainer.n_gpus_per_node=$GPUS \
    trainer.nnodes=$NNODES $@
"""


def test_shell_script_import():
    natives, notes = V.import_verl_text(SCRIPT)
    assert natives["model.path"] == "qwen2.5-7b"
    assert natives["data.max_prompt_length"] == 1024 and natives["data.max_response_length"] == 2048
    assert natives["actor.ppo_mini_batch_size"] == 128
    assert natives["rollout.n"] == 8
    assert natives["actor.ppo_max_token_len_per_gpu"] == 12288
    assert natives["rollout.log_prob_max_token_len_per_gpu"] == 12288  # Hydra interpolation resolved
    assert natives["rollout.max_model_len"] == 1024  # oc.select resolved against the overrides
    assert natives["rollout.tensor_model_parallel_size"] == 4  # ${TP:-4}
    assert natives["rollout.kv_cache_dtype"] == "fp8"
    assert natives["hardware.num_gpus"] == 16 and natives["hardware.gpus_per_node"] == 8  # ${NNODES:-2} x 8
    assert "data.gen_batch_size" not in natives and "rollout.temperature" not in natives
    joined = "\n".join(notes)
    assert (
        "verl override data.gen_batch_size: value has an unresolved shell variable ($GEN: not set in the script)"
        in joined
    )
    assert "rollout.temperature: value has an unresolved shell variable ($RUN_ID <- $(date +%s))" in joined
    assert "data.train_files" not in joined and "experiment_name" not in joined  # not modelled: silent


def test_shell_unresolved_value_is_ignored_not_guessed():
    natives, notes = V.import_verl_text("python3 -m verl.trainer.main_ppo data.train_batch_size=$BSZ rollout_x=1")
    assert "data.train_batch_size" not in natives
    assert any("BSZ" in n for n in notes)


def test_tokenize_overrides_compat():
    toks = V.tokenize_overrides(
        "# comment\nA=4\npython3 -m verl.trainer.main_ppo \\\n  actor_rollout_ref.rollout.n=$A \\\n  ++trainer.nnodes=2 \\\n"
        "  --config-path=x  CUDA_VISIBLE_DEVICES=0\n"
    )
    assert toks == ["actor_rollout_ref.rollout.n=4", "trainer.nnodes=2"]


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


def test_deprecated_micro_batches_reported():
    _, notes = V.import_verl_text(
        "actor_rollout_ref.actor.ppo_micro_batch_size=64 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8"
    )
    assert any("[actor] You have set both 'actor.ppo_micro_batch_size'" in n for n in notes)
    _, notes = V.import_verl_text("algorithm.adv_estimator=gae critic.ppo_micro_batch_size=64")
    assert any("[critic] You have set both 'critic.micro_batch_size'" in n for n in notes)
    _, notes = V.import_verl_text("actor_rollout_ref.rollout.log_prob_micro_batch_size=64")
    assert any("micro_batch_deprecated" in n or "reads only" in n for n in notes)


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


# ---------------------------------------------------------------------------------------------- import: YAML


def test_yaml_fragment_dotted_and_relative_interpolation():
    text = """
actor_rollout_ref:
  actor:
    ppo_max_token_len_per_gpu: 20000
  rollout:
    log_prob_max_token_len_per_gpu: ${actor_rollout_ref.actor.ppo_max_token_len_per_gpu}
    n: 4
critic:
  ppo_max_token_len_per_gpu: 9000
  forward_max_token_len_per_gpu: ${..data.max_prompt_length}
  ppo_epochs: ${.ppo_max_token_len_per_gpu}
data.max_prompt_length: 2048
"""
    natives, notes = V.import_verl_text(text)
    assert natives["rollout.log_prob_max_token_len_per_gpu"] == 20000
    assert natives["critic.forward_max_token_len_per_gpu"] == 2048  # ${..key}: from the root
    assert natives["critic.ppo_epochs"] == 9000  # ${.key}: a sibling
    assert natives["data.max_prompt_length"] == 2048 and natives["rollout.n"] == 4
    natives2, _ = V.import_verl_yaml(yaml.safe_load(text))
    assert natives2 == natives


def test_yaml_value_equal_to_verl_interpolated_default_is_inherit():
    natives, _ = V.import_verl_yaml(
        {
            "critic": {"ppo_epochs": "${oc.select:actor_rollout_ref.actor.ppo_epochs,1}"},
            "actor_rollout_ref": {"actor": {"ppo_epochs": 3}},
        }
    )
    assert natives["critic.ppo_epochs"] is None and natives["actor.ppo_epochs"] == 3


# ---------------------------------------------------------------------------------------------- CLI


def run(args: list[str], cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "calculator", *args], capture_output=True, text=True, cwd=cwd)


def test_cli_export_formats_round_trip(tmp_path):
    args = ["export", "qwen2.5-7b-ppo-8xh100", "--gpu", "a100-80gb", "--set", "rollout.n=2", "--num-gpus", "16"]
    for fmt in ("command", "yaml"):
        p = run([*args, "--format", fmt])
        assert p.returncode == 0, p.stderr
        f = tmp_path / f"out.{fmt}"
        f.write_text(p.stdout)
        q = run(["estimate", "--verl", str(f), "--json"])
        assert q.returncode == 0, q.stderr
        r = json.loads(q.stdout)
        assert r["hardware"]["gpu"] == "a100-80gb" and r["hardware"]["num_gpus"] == 16
    p = run([*args, "--format", "overrides"])
    assert p.returncode == 0
    assert all("=" in line and not line.startswith("#") for line in p.stdout.splitlines())
    assert "hardware.gpu" in p.stderr  # not a verl setting: said on stderr
    f = tmp_path / "o.txt"
    f.write_text(p.stdout)
    a = load_scenario(
        "qwen2.5-7b-ppo-8xh100", overrides={"hardware.gpu": "a100-80gb", "rollout.n": 2, "hardware.num_gpus": 16}
    )
    b = load_scenario("qwen2.5-7b-ppo-8xh100", overrides={"hardware.gpu": "a100-80gb"}, verl_overrides=p.stdout)
    assert a == b


def test_cli_export_reports_verl_problems():
    p = run(["export", "qwen2.5-7b-grpo-8xh100", "--set", "actor.ppo_micro_batch_size_per_gpu=48"])
    assert p.returncode == 0
    assert "verl error" in p.stderr and "micro_batch_size_per_gpu" in p.stderr


def test_cli_export_bad_input_exit_2():
    p = run(["export", "qwen2.5-7b-grpo-8xh100", "--format", "toml"])
    assert p.returncode == 2 and p.stderr.startswith("error: ")
