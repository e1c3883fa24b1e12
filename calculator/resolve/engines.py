"""The inference engines' settings as verl starts them (policy rollout and the reward model).

verl facts used (``workers/rollout/vllm_rollout``, ``workers/config/rollout.py``):
- ``max_model_len`` per release (``VersionBehaviour.max_model_len_rule``, calculator/resolve/versions.py):
  0.7.1+ the configured one, else the model's ``max_position_embeddings`` (a configured value above it makes
  verl raise: ``calculator.verl.checks``); 0.7.0 always ``max_position_embeddings``; 0.5/0.6 (sync SPMD) the
  configured one, else prompt + response. When prompt + response exceeds ``max_position_embeddings`` the
  larger is used (the KV cache must hold the longest sequence the step generates; verl's checks flag it).
- ``max_num_seqs``: the scenario's (an imported launch script that leaves it unset gets its release's default,
  ``VersionBehaviour.max_num_seqs_default``: calculator/verl/imports.py).
- weights in fp8 when ``rollout.quantization=fp8`` (1 B/param for the linear layers; embeddings, lm_head and
  norms stay bf16), bf16 otherwise; with ``expert_parallel_size > 1`` vLLM's ``enable_expert_parallel`` splits
  the routed experts over TP x DP ranks (verl asserts EP = TP x DP, ``workers/config/rollout.py`` 294-296;
  ``vllm_async_server.py`` 402); KV in fp8 when
  ``kv_cache_dtype=fp8``, else the model dtype (2 B).
- vLLM captures CUDA graphs for batch sizes up to ``min(2 x max_num_seqs, 512, max_num_batched_tokens)``
  (``vllm/config/vllm.py``); the profile forward runs over ``max_num_batched_tokens`` tokens, or
  ``max(max_num_batched_tokens, max_model_len)`` with chunked prefill off (``vllm/v1/worker/gpu_model_runner.py``
  ``profile_run``: one dummy batch of the scheduler's token budget, which without chunked prefill must hold a
  whole ``max_model_len`` prompt).
- The reward model's engine (``reward_model.rollout``) always runs vLLM with chunked prefill, bf16 weights and KV.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.inputs.scenario import Scenario
from calculator.model.architecture import Architecture
from calculator.resolve.versions import VersionBehaviour, behaviour

# verl sets rollout.logprobs_mode: processed_logprobs from 0.7.0 on (_generated_ppo_trainer.yaml); 0.6 and older
# pass no logprobs_mode (vLLM's default raw_logprobs: no log_softmax in the top-k/top-p sampler).
VERSIONS_WITHOUT_LOGPROBS_MODE = ("0.5", "0.6")
CUDA_GRAPH_MAX_CAPTURE = 512  # vllm/config/vllm.py: min(2 x max_num_seqs, 512, max_num_batched_tokens)


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """The settings of one inference engine (policy rollout or reward model), resolved."""

    engine: str  # "vllm" | "sglang"
    tp: int
    gpu_memory_utilization: float
    max_num_batched_tokens: int
    max_num_seqs: int
    max_model_len: int
    enable_chunked_prefill: bool
    enforce_eager: bool
    weight_bytes_per_param: int
    kv_dtype_bytes: int
    data_parallel: int = 1  # vLLM DP ranks of one engine (each holds its own KV cache)
    expert_parallel: bool = False  # vLLM enable_expert_parallel: experts split over TP x DP ranks
    sampler_log_softmax: bool = True  # logprobs_mode processed_logprobs: the sampler adds an fp32 log_softmax
    fused_moe_chunk_tokens: int = 0  # vLLM runs the fused experts in chunks of this many tokens (0: all at once)

    @property
    def capture_limit(self) -> int:
        """Largest batch size vLLM would capture in a CUDA graph with graphs on."""
        return min(2 * self.max_num_seqs, CUDA_GRAPH_MAX_CAPTURE, self.max_num_batched_tokens)

    @property
    def largest_capture(self) -> int:
        """Largest batch size captured in a CUDA graph (0 with ``enforce_eager``: nothing is captured)."""
        return 0 if self.enforce_eager else self.capture_limit

    @property
    def profile_tokens(self) -> int:
        """Tokens of vLLM's profiling forward (the activation peak it reserves)."""
        if self.enable_chunked_prefill:
            return self.max_num_batched_tokens
        return max(self.max_num_batched_tokens, self.max_model_len)


def max_model_len(s: Scenario, arch: Architecture, ver: VersionBehaviour | None = None) -> int:
    """The ``max_model_len`` the release gives vLLM (see the module docstring)."""
    rule = (ver or behaviour(s.verl_version)).max_model_len_rule
    sequence = s.data.max_prompt_length + s.data.max_response_length
    if rule == "set_or_prompt_response":
        return s.rollout.max_model_len or sequence
    if rule == "forced_max_position":
        return max(arch.max_position_embeddings, sequence)
    return s.rollout.max_model_len or max(arch.max_position_embeddings, sequence)


def rollout_engine(s: Scenario, arch: Architecture, ver: VersionBehaviour | None = None) -> EngineSettings:
    r = s.rollout
    return EngineSettings(
        engine=r.name,
        tp=r.tensor_model_parallel_size,
        gpu_memory_utilization=r.gpu_memory_utilization,
        max_num_batched_tokens=r.max_num_batched_tokens,
        max_num_seqs=r.max_num_seqs,
        max_model_len=max_model_len(s, arch, ver),
        enable_chunked_prefill=r.enable_chunked_prefill,
        enforce_eager=r.enforce_eager,
        weight_bytes_per_param=1 if r.quantization == "fp8" else 2,
        kv_dtype_bytes=1 if r.kv_cache_dtype == "fp8" else 2,
        data_parallel=r.data_parallel_size,
        expert_parallel=r.expert_parallel_size > 1,
        sampler_log_softmax=s.verl_version not in VERSIONS_WITHOUT_LOGPROBS_MODE,
        fused_moe_chunk_tokens=(ver or behaviour(s.verl_version)).vllm_fused_moe_chunk_tokens,
    )


def reward_engine(s: Scenario) -> EngineSettings:
    r = s.reward_model.rollout
    return EngineSettings(
        engine="vllm",
        tp=r.tensor_model_parallel_size,
        gpu_memory_utilization=r.gpu_memory_utilization,
        max_num_batched_tokens=r.max_num_batched_tokens,
        max_num_seqs=r.max_num_seqs,
        max_model_len=s.data.max_prompt_length + s.data.max_response_length,
        enable_chunked_prefill=True,
        enforce_eager=r.enforce_eager,
        weight_bytes_per_param=2,
        kv_dtype_bytes=2,
    )
