"""The calculator's estimate warnings (calculator/report/warnings.py) in Chinese.

The report carries warnings as English text (the JSON contract and the CLI print them as they are). The page shows
them through :func:`warning_text`: each template of calculator/report/warnings.py is matched with its numbers and
names captured, and rendered from its Chinese template with the same values. A warning no pattern matches is shown
in English, never dropped; ``tests/ui/test_i18n_warnings.py`` triggers every rule and fails when a template changes
without its pattern here.
"""

from __future__ import annotations

import re

_N = r"[-\d.,]+"  # a number as the calculator prints it
_P = r"[a-z_]+"  # a phase name

# (English template as a regex with named groups, Chinese template with the same names)
# The advice that ends the missing-mean warning (calculator/report/warnings.py ``_lengths``), in both languages.
_SET_MEANS = (
    r"Set data\.mean_response_length \(and data\.mean_prompt_length\) to the run's response_length/mean and "
    r"prompt_length/mean, which verl logs\.$"
)
_SET_MEANS_ZH = (
    "因此步时是上界，且没有长尾。请把 data.mean_response_length（及 data.mean_prompt_length）设为该运行的 "
    "response_length/mean 与 prompt_length/mean（verl 会记录这两个指标）。"
)


PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(en, re.S), zh)
    for en, zh in (
        (
            rf"vLLM will refuse to start: free memory at startup (?P<free>{_N}) GiB < gpu_memory_utilization "
            rf"(?P<util>{_N}) x (?P<usable>{_N}) GiB = (?P<req>{_N}) GiB \(the trainer's model shards are already "
            r"resident\)\. Lower rollout\.gpu_memory_utilization or set (?P<key>[a-z_.]+)=true\.$",
            "vLLM 将无法启动：启动时空闲显存 {free} GiB < gpu_memory_utilization {util} × {usable} GiB = {req} GiB"
            "（训练器的模型分片已常驻显存）。请降低 rollout.gpu_memory_utilization，或设置 {key}=true。",
        ),
        (
            rf"vLLM will refuse to start: free memory at startup (?P<free>{_N}) GiB < gpu_memory_utilization "
            rf"(?P<util>{_N}) x (?P<usable>{_N}) GiB = (?P<req>{_N}) GiB \(the trainer's model shards are already "
            r"resident\)\. Lower rollout\.gpu_memory_utilization\.$",
            "vLLM 将无法启动：启动时空闲显存 {free} GiB < gpu_memory_utilization {util} × {usable} GiB = {req} GiB"
            "（训练器的模型分片已常驻显存）。请降低 rollout.gpu_memory_utilization。",
        ),
        (
            rf"the trainer runs out of memory at init, before vLLM starts: its start-up state exceeds the usable "
            rf"(?P<usable>{_N}) GiB by (?P<over>{_N}) GiB\. Fix: (?P<fix>.+)\.$",
            "训练器在 vLLM 启动前的初始化阶段就会显存不足：启动时的常驻状态超出可用的 {usable} GiB 共 {over} GiB。"
            "修复：{fix}。",
        ),
        (
            rf"rollout engine has no memory for the KV cache: budget (?P<budget>{_N} GiB) - weights (?P<w>{_N} GiB) - "
            rf"activations (?P<a>{_N} GiB) - non-torch - CUDA graphs (?P<g>{_N} GiB) <= 0\. Raise "
            r"gpu_memory_utilization or rollout TP\.$",
            "推理引擎没有可用于 KV cache 的显存：预算 {budget} − 权重 {w} − 激活 {a} − 非 torch 显存 − CUDA graph {g} ≤ 0。"
            "请提高 gpu_memory_utilization 或推理 TP。",
        ),
        (
            rf"KV cache holds (?P<tokens>{_N}) tokens per replica, less than one sequence of max_model_len (?P<len>{_N}) "
            r"\(rollout\.max_model_len, default the model's max_position_embeddings\): vLLM refuses to start\. Set "
            rf"rollout\.max_model_len=(?P<seq>{_N}) \(prompt \+ response\), raise gpu_memory_utilization or rollout TP\.$",
            "每个副本的 KV cache 只能容纳 {tokens} 个 token，不足一条 max_model_len {len} 的序列"
            "（rollout.max_model_len，默认取模型的 max_position_embeddings）：vLLM 将拒绝启动。"
            "请设置 rollout.max_model_len={seq}（提示 + 回复），或提高 gpu_memory_utilization 或推理 TP。",
        ),
        (
            rf"KV cache limits rollout concurrency to (?P<conc>{_N}) sequences per replica, far below the (?P<want>{_N}) "
            rf"the engine would run at once \((?P<demand>{_N}) to generate per replica\): rollout will be slow\. More KV "
            r"\(higher gpu_memory_utilization, rollout TP\) or shorter responses\.$",
            "KV cache 把每个副本的推理并发限制在 {conc} 条序列，远低于引擎可同时运行的 {want} 条（每个副本需生成 {demand} 条）："
            "推理会很慢。请增加 KV（提高 gpu_memory_utilization、推理 TP）或缩短回复。",
        ),
        (
            rf"logits and entropy take (?P<gib>{_N} GiB) \((?P<pct>{_N}%)\) of phase (?P<phase>{_P}): set "
            r"model\.use_fused_kernels=true, actor\.entropy_from_logits_with_chunking=true, or smaller "
            r"micro-batches / token budgets\.$",
            "logits 与熵占阶段 {phase} 的 {gib}（{pct}）：请设置 model.use_fused_kernels=true、"
            "actor.entropy_from_logits_with_chunking=true，或减小 micro-batch / token 预算。",
        ),
        (
            rf"phase (?P<phase>{_P}) needs (?P<need>{_N} GiB) per GPU, over the usable (?P<usable>{_N}) GiB by "
            rf"(?P<over>{_N} GiB): OOM\.$",
            "阶段 {phase} 每卡需要 {need}，超出可用的 {usable} GiB 共 {over}：显存不足（OOM）。",
        ),
        (
            rf"phase (?P<phase>{_P}) is within 5% of the usable memory \((?P<need>{_N} GiB) of (?P<usable>{_N}) GiB\): "
            r"what the model leaves out \(allocator pages, library workspaces\) may OOM\.$",
            "阶段 {phase} 距可用显存不足 5%（{need} / {usable} GiB）：模型未计入的部分（分配器页、库工作区）可能导致 OOM。",
        ),
        (
            rf"fits at the mean lengths but not when every sequence is at max length \((?P<gib>{_N}) GiB in "
            rf"(?P<phase>{_P})\): long-tail batches can OOM\.$",
            "按平均长度放得下，但所有序列都达到最大长度时放不下（{phase} 阶段 {gib} GiB）：长尾批次可能 OOM。",
        ),
        (
            r"SGLang sizes its KV pool from the memory free at start \(params offloaded\); with free_cache_engine=false "
            r"the pool stays while the actor's params come back for log-prob/update: those phases grow by the params\.$",
            "SGLang 按启动时的空闲显存（参数已卸载）确定 KV 池大小；free_cache_engine=false 时 KV 池常驻，"
            "而 actor 参数在 log-prob / 更新时回到 GPU：这些阶段会多出参数的显存。",
        ),
        (
            r"DoRA: verl's LoRA path does not expose DoRA; shown is the LoRA figure plus PEFT DoRA's magnitude vectors "
            r"and merged-weight transient\.$",
            "DoRA：verl 的 LoRA 路径不提供 DoRA；这里显示的是 LoRA 的数值，加上 PEFT DoRA 的幅值向量和合并权重的临时显存。",
        ),
        (
            r"no data\.mean_response_length: the expected case puts every response at max_response_length "
            r"\((?P<resp>\d+) tokens\), so the step time is an upper bound with no long tail\. " + _SET_MEANS,
            "未设置 data.mean_response_length：期望情形按每条回复都达到 max_response_length（{resp} 个 token）计算，"
            + _SET_MEANS_ZH,
        ),
        (
            r"no data\.mean_response_length: the expected case puts every response at max_response_length "
            r"\((?P<resp>\d+) tokens\) and every prompt at max_prompt_length \((?P<prompt>\d+) tokens\), so the step "
            r"time is an upper bound with no long tail\. " + _SET_MEANS,
            "未设置 data.mean_response_length：期望情形按每条回复都达到 max_response_length（{resp} 个 token）、"
            "每条提示都达到 max_prompt_length（{prompt} 个 token）计算，" + _SET_MEANS_ZH,
        ),
        (
            r"Adafactor: factored second moments are counted as ~0 B/param \(rows \+ columns only\)\.$",
            "Adafactor：分解后的二阶矩按约 0 字节/参数计（只有行与列）。",
        ),
        (
            r"reward model on its own resource pool: its GPUs are not modelled here\.$",
            "奖励模型在独立资源池上：这里不计算它所用的 GPU。",
        ),
    )
)


def translate(text: str) -> str | None:
    """The Chinese for one calculator warning, or None when no template matches."""
    for pattern, zh in PATTERNS:
        m = pattern.fullmatch(text)
        if m:
            return zh.format(**m.groupdict())
    return None


def warning_text(text: str, lang: str) -> str:
    """A warning in the page's language (English where no Chinese template matches)."""
    if lang != "zh":
        return text
    return translate(text) or text
