"""Importing a launch script for the release it was written for (calculator/verl/legacy.py): the deprecated
global micro-batch keys (issue 13 item 3), the release's max_num_seqs, inherited means reset (issue 13 item 9),
and verl example scripts imported unmodified (issue 14)."""

from __future__ import annotations

from calculator import estimate
from calculator.loading import load_scenario_with_warnings

PRESET = "qwen2.5-7b-grpo-8xh100"
# Reconstructed from verl examples/ppo_trainer/run_deepseek7b_llm.sh of the 0.4-0.6 era (deprecated global
# micro-batch keys); 8 GPUs, Ulysses SP 1.
GLOBAL_MICRO = """python3 -m verl.trainer.main_ppo \\
    data.train_batch_size=1024 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=256 \\
    actor_rollout_ref.actor.ppo_micro_batch_size=64 \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size=128 \\
    actor_rollout_ref.rollout.n=5 \\
    trainer.n_gpus_per_node=8 trainer.nnodes=1
"""


def test_legacy_release_converts_global_micro_batch_per_dp_rank():
    s, notes = load_scenario_with_warnings(PRESET, {"verl_version": "0.6"}, GLOBAL_MICRO)
    # 0.7.1 fsdp_workers.py:256-260: 64 // (8 GPUs // SP 1) = 8; NOT multiplied by rollout.n (5)
    assert s.actor.ppo_micro_batch_size_per_gpu == 8
    assert s.rollout.log_prob_micro_batch_size_per_gpu == 128 // 8 == 16
    assert s.actor.ppo_mini_batch_size == 256  # the mini-batch stays in prompts (x n inside verl)
    text = "\n".join(notes)
    assert "= 8 sequences per GPU -> actor.ppo_micro_batch_size_per_gpu" in text
    assert "not multiplied by rollout.n" in text
    assert s.rollout.max_num_seqs == 1024  # verl 0.6's default (_generated_ppo_trainer.yaml:183)


def test_engine_release_reports_verls_rejection():
    s, notes = load_scenario_with_warnings(PRESET, {"verl_version": "0.9.1"}, GLOBAL_MICRO)
    assert any("verl 0.9.1's engine reads only" in n and "ppo_micro_batch_size_per_gpu" in n for n in notes)
    assert not any("converted" in n for n in notes)
    assert s.rollout.max_num_seqs == 256


def test_rlplan_version_line_picks_the_release():
    s, notes = load_scenario_with_warnings(PRESET, None, '# rlplan: verl_version="0.7.0"\n' + GLOBAL_MICRO)
    assert s.verl_version == "0.7.0" and s.actor.ppo_micro_batch_size_per_gpu == 8


def test_inherited_mean_is_reset_when_the_script_changes_the_max():
    s, notes = load_scenario_with_warnings(PRESET, None, "data.max_response_length=4096")
    assert s.data.max_response_length == 4096 and s.data.mean_response_length is None
    assert any("data.mean_response_length reset from 600 to null" in n for n in notes)
    kept, notes = load_scenario_with_warnings(
        PRESET, {"data.mean_response_length": 700}, "data.max_response_length=4096"
    )
    assert kept.data.mean_response_length == 700  # --set wins (applied after the import)
    same, notes = load_scenario_with_warnings(PRESET, None, "data.max_response_length=1024")  # the preset's max
    assert same.data.mean_response_length == 600 and not any("reset" in n for n in notes)


# verl examples/tuning/7b/qwen2-7b_grpo_2_h800_fsdp_vllm.sh (volcengine/verl b178a3cd56f5), shortened: the
# keys that set memory and time, as written (quoting, $@, unmodelled keys kept).
TUNING_7B = """set -x
model_path=Qwen/Qwen2-7B-Instruct
train_files="['$HOME/data/rlhf/gsm8k/train.parquet']"
PYTHONPATH=/opt/tiger/open_verl python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_files="$train_files" \\
    data.train_batch_size=1024 \\
    data.max_prompt_length=1024 \\
    data.max_response_length=1024 \\
    data.truncation='error' \\
    actor_rollout_ref.model.path=$model_path \\
    actor_rollout_ref.actor.ppo_mini_batch_size=256 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16 \\
    actor_rollout_ref.actor.use_kl_loss=True \\
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \\
    actor_rollout_ref.actor.fsdp_config.param_offload=True \\
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16 \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \\
    actor_rollout_ref.rollout.n=5 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16 \\
    trainer.logger='["console","wandb"]' \\
    trainer.n_gpus_per_node=2 \\
    trainer.nnodes=1 \\
    trainer.total_epochs=15 $@
"""

# verl examples/grpo_trainer/run_deepseek671b_math_megatron_96gb.sh (same commit): shell arithmetic,
# ${VAR:-default}, --config-name ppo_megatron_trainer.yaml, '+' overrides (lines 25-29, 58-70, 78-130 in part).
MEGATRON_DSV3 = """max_prompt_length=$((1024 * 2))
max_response_length=$((1204 * 8))
NNODES=${NNODES:-12}
actor_ppo_max_token_len=$(((max_prompt_length + max_response_length) * 10 / 10))
train_tp=${TP:-8}
train_pp=${PP:-12}
optimizer_offload_fraction=${OFFLOAD_FRACTION:-1.}
python3 -m verl.trainer.main_ppo --config-path=config --config-name='ppo_megatron_trainer.yaml' \\
    data.max_prompt_length=${max_prompt_length} \\
    data.max_response_length=${max_response_length} \\
    data.train_batch_size=96 \\
    actor_rollout_ref.rollout.n=8 \\
    actor_rollout_ref.actor.use_dynamic_bsz=True \\
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=${actor_ppo_max_token_len} \\
    +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction=${optimizer_offload_fraction} \\
    +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload=True \\
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=${train_pp} \\
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=${train_tp} \\
    actor_rollout_ref.actor.megatron.grad_offload=True \\
    trainer.n_gpus_per_node=8 \\
    trainer.nnodes=$NNODES
"""


def test_tuning_script_imports_unmodified_and_estimates():
    s, notes = load_scenario_with_warnings(PRESET, {"verl_version": "0.7.1"}, TUNING_7B)
    assert s.hardware.num_gpus == 2 and s.rollout.tensor_model_parallel_size == 2 and s.rollout.n == 5
    assert s.actor.fsdp_config.param_offload and s.actor.ppo_micro_batch_size_per_gpu == 16
    r = estimate(s)
    assert r.peak.gib_per_gpu > 0 and r.time is not None and r.time.step_s > 0


def test_megatron_deepseek_script_arithmetic_and_plus_keys():
    s, _notes = load_scenario_with_warnings(PRESET, {"verl_version": "0.8"}, MEGATRON_DSV3)
    assert s.actor.strategy == "megatron"
    assert s.data.max_prompt_length == 2048 and s.data.max_response_length == 1204 * 8
    assert s.actor.ppo_max_token_len_per_gpu == 2048 + 9632  # (p + r) * 10 / 10
    assert s.hardware.num_gpus == 96
    m = s.actor.megatron
    assert (m.tensor_model_parallel_size, m.pipeline_model_parallel_size) == (8, 12)
    assert m.optimizer_cpu_offload and m.optimizer_offload_fraction == 1.0 and m.grad_offload


def test_optim_keys_are_no_longer_dropped_silently():
    """The blanket actor.optim.* ignore is gone: hyper-parameters are listed as irrelevant, the rest is reported
    (exp_avg_dtype is modelled for Megatron; on this FSDP preset verl would reject it, and the note says so)."""
    _, notes = load_scenario_with_warnings(
        PRESET, None, "actor_rollout_ref.actor.optim.weight_decay=0.1\nactor_rollout_ref.actor.optim.exp_avg_dtype=bf16"
    )
    text = "\n".join(notes)
    assert "actor_rollout_ref.actor.optim.exp_avg_dtype" in text and "model_engine=megatron" in text
    assert "weight_decay" not in text
    # seen in verl's example scripts (b178a3cd56f5): worker choice and FSDP mixed precision are reported
    _, notes = load_scenario_with_warnings(
        PRESET,
        None,
        "trainer.use_legacy_worker_impl=disable\n"
        "+actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=fp32\n"
        "reward_model.reward_kwargs.max_resp_len=4096",
    )
    assert sum("not modelled; likely effect" in n for n in notes) == 2
    assert not any("reward_kwargs" in n for n in notes)


def test_legacy_megatron_divides_by_megatron_data_parallel_size():
    script = (
        "python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\\n"
        " actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \\\n"
        " actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \\\n"
        " actor_rollout_ref.actor.ppo_micro_batch_size=16 trainer.n_gpus_per_node=8 trainer.nnodes=1\n"
    )
    s, notes = load_scenario_with_warnings(PRESET, {"verl_version": "0.7.1"}, script)
    # 0.7.1 megatron_workers.py:358: 16 // mpu DP (8 // (TP 2 x PP 2) = 2) = 8
    assert s.actor.ppo_micro_batch_size_per_gpu == 8
    assert any("Megatron DP = world size 8 // (TP x PP x CP 4)" in n for n in notes)
