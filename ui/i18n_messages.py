"""The calculator's own messages in both languages: advisor options (by lever id) and verl config checks (by rule).

The calculator keeps its English text (the JSON contract and the CLI print it unchanged); each message carries a
stable id (``Suggestion.lever``, ``ConfigProblem.rule``). This catalogue gives every id its text in English and
Chinese; the dashboard renders through :func:`lever_title` / :func:`check_text`, so a Chinese page shows Chinese
titles, and a check's exact numbers and verl's own error text stay beside the translation. A test asserts that every
lever and every rule the calculator can emit has both languages here.
"""

from __future__ import annotations

import re

# verl config checks (calculator/verl/checks): what each rule means, one line per language.
CHECKS: dict[str, dict[str, str]] = {
    "en": {
        "max_model_len_above_max_position": "max_model_len above the model's max_position_embeddings",
        "placement_engine": "Split placement needs the vLLM rollout",
        "placement_estimator": "Estimator not listed for the one-step-off recipe",
        "placement_gpu_split": "Samples cannot be spread evenly over the training GPUs",
        "placement_partial": "Partial rollout without staleness has no effect",
        "placement_staleness": "Staleness threshold above verl's recommendation",
        "placement_strategy": "Split placement documented for FSDP2 and Megatron only",
        "group_estimator_n1": "A group advantage estimator with one response per prompt",
        "critic_settings_without_critic": "Critic settings without a critic",
        "gae_without_critic": "GAE needs the critic",
        "kl_twice": "KL both in the reward and in the loss",
        "lora_rank_vllm": "LoRA rank above vLLM's limit",
        "megatron_world_size": "GPU count not divisible by the Megatron model-parallel size",
        "megatron_layer_split": "The layers do not split over the Megatron pipeline stages",
        "megatron_lora_release": "this verl release has no Megatron LoRA (from 0.7.0)",
        "real_train_batch_size": "Batch not divisible over the data-parallel ranks",
        "train_batch_ge_mini": "Train batch smaller than the mini-batch",
        "mini_batch_dp": "Mini-batch not divisible over the data-parallel ranks",
        "micro_divides_mini": "Micro-batch does not divide the mini-batch",
        "log_prob_micro_divides_batch": "Log-prob micro-batch does not divide the batch",
        "micro_batch_required": "A micro-batch size verl requires is missing",
        "micro_batch_given_twice": "Micro-batch given twice",
        "micro_batch_deprecated": "Deprecated global micro-batch key",
        "layered_summon_dummy_load": "layered_summon needs a real rollout.load_format",
        "dynamic_bsz_mismatch": "Dynamic batching set differently for actor and critic",
        "critic_v1_batching": "verl's V1 trainer batches the critic dynamically",
        "dynamic_token_budget": "Token budget shorter than the longest sequence",
        "rollout_tp_gpus": "GPU count not divisible by the rollout replica size",
        "rollout_replica_nodes": "Rollout replica does not fit the node layout",
        "rollout_ep": "Rollout expert parallelism does not match TP x DP",
        "rollout_tp_heads": "Attention heads not divisible by rollout TP",
        "ulysses_heads": "Attention heads not divisible by the Ulysses size",
        "ulysses_remove_padding": "Ulysses needs remove-padding",
        "ulysses_world": "GPU count not divisible by the Ulysses size",
    },
    "zh": {
        "max_model_len_above_max_position": "max_model_len 超过模型的 max_position_embeddings",
        "placement_engine": "分离部署需要 vLLM rollout",
        "placement_estimator": "one-step-off 配方未列出该优势估计器",
        "placement_gpu_split": "样本无法均匀分配到训练 GPU 上",
        "placement_partial": "staleness 为 0 时部分 rollout 无效",
        "placement_staleness": "staleness 阈值高于 verl 的建议值",
        "placement_strategy": "分离部署只在 FSDP2 和 Megatron 下有文档",
        "group_estimator_n1": "组内优势估计器但每个提示只有一个回复",
        "critic_settings_without_critic": "设置了 critic 参数但没有 critic",
        "gae_without_critic": "GAE 需要 critic",
        "kl_twice": "奖励中和损失中同时使用了 KL",
        "lora_rank_vllm": "LoRA 秩超过 vLLM 上限",
        "megatron_world_size": "GPU 数不能被 Megatron 模型并行规模整除",
        "megatron_layer_split": "模型层数无法按 Megatron 流水线阶段划分",
        "megatron_lora_release": "该 verl 版本的 Megatron 后端不支持 LoRA（0.7.0 起支持）",
        "real_train_batch_size": "批大小不能在数据并行进程间均分",
        "train_batch_ge_mini": "训练批小于 mini-batch",
        "mini_batch_dp": "mini-batch 不能在数据并行进程间均分",
        "micro_divides_mini": "micro-batch 不能整除 mini-batch",
        "log_prob_micro_divides_batch": "log-prob 的 micro-batch 不能整除批大小",
        "micro_batch_required": "缺少 verl 要求的 micro-batch 大小",
        "micro_batch_given_twice": "micro-batch 被重复设置",
        "micro_batch_deprecated": "已弃用的全局 micro-batch 键",
        "layered_summon_dummy_load": "layered_summon 需要真实的 rollout.load_format",
        "dynamic_bsz_mismatch": "actor 与 critic 的动态批设置不一致",
        "critic_v1_batching": "verl V1 训练器对 critic 使用动态批",
        "dynamic_token_budget": "token 预算短于最长序列",
        "rollout_tp_gpus": "GPU 数不能被推理副本规模整除",
        "rollout_replica_nodes": "推理副本与节点布局不匹配",
        "rollout_ep": "推理专家并行不等于 TP × DP",
        "rollout_tp_heads": "注意力头数不能被推理 TP 整除",
        "ulysses_heads": "注意力头数不能被 Ulysses 规模整除",
        "ulysses_remove_padding": "Ulysses 需要开启 remove-padding",
        "ulysses_world": "GPU 数不能被 Ulysses 规模整除",
    },
}

# Advisor options (calculator/planning/levers.py), Chinese titles by lever id (English: the calculator's title).
LEVERS_ZH: dict[str, str] = {
    "cap_max_model_len": "将 vLLM 的 max_model_len 限制为提示 + 回复长度",
    "fused_kernels": "log-prob 与熵使用融合算子",
    "entropy_chunking": "按 2048 token 分块计算熵",
    "entropy_checkpointing": "反向传播时重算熵",
    "free_cache_engine": "生成结束后让推理引擎休眠",
    "enforce_eager": "关闭 vLLM CUDA graph",
    "gpu_memory_utilization": "降低推理的 gpu_memory_utilization",
    "rollout_tp": "增大推理张量并行",
    "micro_batch": "减小 micro-batch",
    "token_budget": "动态批并减小 token 预算",
    "gradient_checkpointing": "梯度检查点",
    "activation_offload": "激活卸载",
    "optimizer_offload": "卸载 actor 的优化器状态",
    "param_offload": "卸载 actor 的参数",
    "critic_optimizer_offload": "卸载 critic 的优化器状态",
    "critic_param_offload": "卸载 critic 的参数",
    "offload_policy": "FSDP2 CPU 卸载策略",
    "full_shard": "在所有 GPU 上分片（fsdp_size=-1）",
    "no_sync_off": "分片的梯度累积",
    "ulysses_sp": "Ulysses 序列并行",
    "megatron_parallel": "增大 Megatron 模型并行（MoE 的 EP、TP、PP）",
    "more_gpus": "增加同型号 GPU",
    "smaller_rollout_batch": "每步更少的提示",
    "fewer_responses": "每个提示更少的回复（rollout.n）",
    "shorter_responses": "更短的回复",
    "shorter_prompts": "更短的提示",
    "lora": "用 LoRA（秩 {n}）代替全参数微调",
    "combined": "叠加设置改动直到放得下",
    "searched_settings": "{n} 块 GPU 下最快的可行设置（规划器搜索）",
    "searched_min_gpus": "{n} 块 GPU 并使用搜索到的设置（可行的最少 GPU 数）",
}


def lever_title(lever: str, english: str, lang: str) -> str:
    """An advisor option's title: the calculator's English, or the Chinese for its lever id. ``{n}`` in the
    Chinese takes the English title's number ("Fastest fitting settings at 32 GPUs" -> 32)."""
    if lang != "zh" or lever not in LEVERS_ZH:
        return english
    zh = LEVERS_ZH[lever]
    number = re.search(r"\d+", english)
    return zh.replace("{n}", number.group() if number else "?")


def check_text(rule: str, message: str, lang: str) -> str:
    """A verl check: its rule in the chosen language, then the check's own message (verl's wording and the
    numbers of this configuration, as the JSON report and the CLI give them)."""
    head = CHECKS.get(lang, CHECKS["en"]).get(rule)
    return f"**{head}** — {message}" if head else message
