#!/usr/bin/env bash
# An example verl 0.9 launch script (the style of verl's examples/grpo_trainer/*.sh) for rlplan's importer:
#   python -m calculator estimate --verl docs/examples/run_qwen3_8b_grpo.sh --gpu h100-80gb
set -x
MODEL=Qwen/Qwen3-8B
NNODES=${NNODES:-1}
max_prompt=1024
max_response=4096
python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/dapo/train.parquet \
    data.train_batch_size=256 \
    data.max_prompt_length=$max_prompt \
    data.max_response_length=$max_response \
    actor_rollout_ref.model.path=$MODEL \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.ppo_mini_batch_size=64 \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$(( (max_prompt + max_response) * 2 )) \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.fsdp_config.param_offload=False \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=8 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu='${actor_rollout_ref.actor.ppo_max_token_len_per_gpu}' \
    actor_rollout_ref.rollout.temperature=$TEMPERATURE \
    trainer.logger='["console","wandb"]' \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=$NNODES "$@"
