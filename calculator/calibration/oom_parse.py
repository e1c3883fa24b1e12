"""Read an out-of-memory failure as PyTorch, vLLM, SGLang and Ray print it, and the verl phase it happened in.

Formats (each fixture in tests/calibration/fixtures/ cites the public issue it comes from):

* PyTorch >= 2.1 (``c10/cuda/CUDACachingAllocator.cpp``): ``CUDA out of memory. Tried to allocate 13.91 GiB. GPU 0
  has a total capacity of 79.11 GiB of which 8.85 GiB is free. [Process N has X GiB memory in use. | Including
  non-PyTorch memory, this process has X GiB memory in use.] Of the allocated memory 60.49 GiB is allocated by
  PyTorch, and 6.77 GiB is reserved by PyTorch but unallocated.`` (torch >= 2.4 may insert ``, with X allocated in
  private pools (e.g., CUDA Graphs)`` before ``and``; a pasted message wrapped mid-word is joined); before 2.1: ``Tried to allocate 1024.00 MiB
  (GPU 0; 8.00 GiB total capacity; 12.19 GiB already allocated; 0 bytes free; 12.68 GiB reserved in total by
  PyTorch)``.
* vLLM V1 (``vllm/v1/worker/gpu_worker.py`` ``init_device``; ``vllm/v1/core/kv_cache_utils.py``): ``Free memory on
  device (7.34/139.72 GiB) on startup is less than desired GPU memory utilization (0.9, 125.75 GiB)``; ``No
  available memory for the cache blocks``; ``To serve at least one request with the model's max seq len (N),
  (X GiB KV cache is needed, which is larger than the available KV cache memory (Y GiB)``.
* vLLM's sleep-mode allocator waking the engine (``vllm/device_allocator/cumem.py``): ``CUDA Error: out of memory
  at /workspace/csrc/cumem_allocator.cpp:62`` (no size printed).
* SGLang (``model_runner``): ``Not enough memory. Please try to increase --mem-fraction-static``; and at CUDA-graph
  capture (``cuda_graph_runner``): ``Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB...``.
* Ray's memory monitor: ``Task was killed due to the node running low on memory. Memory on the node (...) was
  59.49GB / 62.58GB (0.950744), which exceeds the memory usage threshold of 0.95``; and a worker's death by SIGKILL,
  for which Ray lists ``(1) The process is killed by SIGKILL by OOM killer due to high memory usage`` first
  (``host_oom_suspected``: the kernel's OOM killer is likely, not certain).

The phase comes from the verl functions in the stack (``compute_ref_log_prob``, ``update_policy``,
``generate_sequences``, ``wake_up``, ``update_weights``...), the most specific one present winning (a reference
forward runs ``compute_log_prob`` inside ``compute_ref_log_prob``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from calculator.errors import InputError
from calculator.inputs.limits import MAX_TRACEBACK_BYTES
from calculator.inputs.readers import size_text

_UNIT_GIB = {"b": 2**-30, "byte": 2**-30, "bytes": 2**-30, "kib": 2**-20, "mib": 2**-10, "gib": 1.0, "gb": 1.0}
_SIZE = r"([\d.]+) ?(GiB|MiB|KiB|bytes?|B|GB)"
_TORCH_NEW = re.compile(
    r"Tried to allocate "
    + _SIZE
    + r"\. GPU (\d+) has a total capacity of "
    + _SIZE
    + r" of which "
    + _SIZE
    + r" is free",
    re.IGNORECASE,
)
_TORCH_ALLOCATED = re.compile(
    r"Of the allocated memory "
    + _SIZE
    + r" is allocated by PyTorch, (?:with "
    + _SIZE
    + r" allocated in private pools \(e\.g\., CUDA Graphs\), )?and "
    + _SIZE
    + r" is reserved by PyTorch but unallocated",
    re.IGNORECASE,
)
_TORCH_OLD = re.compile(
    r"Tried to allocate "
    + _SIZE
    + r" \(GPU (\d+); "
    + _SIZE
    + r" total capacity; "
    + _SIZE
    + r" already allocated; "
    + _SIZE
    + r" free; "
    + _SIZE
    + r" reserved in total",
    re.IGNORECASE,
)
_VLLM_FREE = re.compile(
    r"Free memory on device(?: \S+)? \(([\d.]+)/([\d.]+) GiB\) on startup is less than desired "
    r"GPU memory utilization \(([\d.]+), ([\d.]+) GiB\)",
    re.IGNORECASE,
)
_VLLM_MAX_SEQ = re.compile(
    r"max seq len \((\d+)\), \(([\d.]+) GiB KV cache is needed, which is larger than the "
    r"available KV cache memory \(([\d.]+) GiB\)",
    re.IGNORECASE,
)
_VLLM_MAX_SEQ_OLD = re.compile(
    r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be "
    r"stored in KV cache \((\d+)\)",
    re.IGNORECASE,
)
_VLLM_NO_CACHE = re.compile(r"No available memory for the cache blocks", re.IGNORECASE)
_CUMEM = re.compile(r"CUDA Error: out of memory at \S*cumem_allocator\.cpp", re.IGNORECASE)
_SGLANG_GRAPH = re.compile(r"Capture cuda graph failed: CUDA out of memory\. Tried to allocate " + _SIZE, re.IGNORECASE)
_SGLANG = re.compile(r"Not enough memory\. Please try to (?:increase|decrease) --mem-fraction-static", re.IGNORECASE)
_RAY = re.compile(r"Task was killed due to the node running low on memory", re.IGNORECASE)
# Ray's report of a worker that died without a Python error; it names the kernel's OOM killer as the first of three
# possible causes (python/ray/_private/worker.py / the raylet's exit detail).
_RAY_SIGKILL = re.compile(r"killed by SIGKILL by OOM killer due to high memory usage", re.IGNORECASE)
_RAY_USAGE = re.compile(
    r"was ([\d.]+) ?GB / ([\d.]+) ?GB \(([\d.]+)\), which exceeds the memory usage threshold of "
    r"(\d+(?:\.\d+)?)",
    re.IGNORECASE,
)

# Most specific first: the first phase with a token in the text wins.
PHASE_TOKENS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ref_log_prob", ("compute_ref_log_prob", "ref_compute_log_prob", "_compute_ref_log_prob")),
    ("critic_values", ("compute_values",)),
    ("update_critic", ("update_critic",)),
    ("update_actor", ("update_policy", "update_actor", "train_mini_batch")),
    (
        "weight_sync",
        (
            "update_weights",
            "sync_rollout_weights",
            "sync_model_weights",
            "load_weights",
            "load_dtensor_weights",
            "get_per_tensor_param",
        ),
    ),
    ("old_log_prob", ("compute_log_prob", "compute_old_log_prob")),
    ("rollout", ("generate_sequences", "wake_up", "_initialize_kv_caches", "determine_available_memory", "resume")),
)
LOGITS_FUNCTIONS = ("entropy_from_logits", "logprobs_from_logits", "log_softmax", "logsumexp", "softmax")


class OomEvent(BaseModel):
    """What the message says; sizes in GiB as printed (None when the message does not give them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    engine: str
    phase: str | None
    allocation_gib: float | None = None
    total_gib: float | None = None
    free_gib: float | None = None
    allocated_by_pytorch_gib: float | None = None
    reserved_unallocated_gib: float | None = None
    required_gib: float | None = None
    max_model_len: int | None = None
    logits_function: str | None = None
    frames: list[str] = []
    message: str = ""


def _gib(value: str, unit: str) -> float:
    return float(value) * _UNIT_GIB[unit.lower()]


def _phase(text: str) -> tuple[str | None, list[str]]:
    for phase, tokens in PHASE_TOKENS:
        found = [t for t in tokens if re.search(rf"\b{re.escape(t)}\b|_{re.escape(t)}\b", text)]
        if found:
            return phase, found
    return None, []


def _line_of(text: str, start: int) -> str:
    a = text.rfind("\n", 0, start) + 1
    b = text.find("\n", start)
    return text[a : b if b != -1 else len(text)].strip()[:500]


def _torch(text: str, phase: str | None, frames: list[str]) -> OomEvent | None:
    m = _TORCH_NEW.search(text)
    if m:
        a = _TORCH_ALLOCATED.search(text.replace("\n", ""))  # a pasted message may be wrapped mid-word
        logits = next((f for f in LOGITS_FUNCTIONS if re.search(rf"\b{f}\b", text)), None)
        return OomEvent(
            kind="cuda_oom",
            engine="torch",
            phase=phase,
            frames=frames,
            logits_function=logits,
            allocation_gib=_gib(m[1], m[2]),
            total_gib=_gib(m[4], m[5]),
            free_gib=_gib(m[6], m[7]),
            allocated_by_pytorch_gib=_gib(a[1], a[2]) if a else None,
            reserved_unallocated_gib=_gib(a[5], a[6]) if a else None,
            message=_line_of(text, m.start()),
        )
    m = _TORCH_OLD.search(text)
    if m:
        logits = next((f for f in LOGITS_FUNCTIONS if re.search(rf"\b{f}\b", text)), None)
        return OomEvent(
            kind="cuda_oom",
            engine="torch",
            phase=phase,
            frames=frames,
            logits_function=logits,
            allocation_gib=_gib(m[1], m[2]),
            total_gib=_gib(m[4], m[5]),
            allocated_by_pytorch_gib=_gib(m[6], m[7]),
            free_gib=_gib(m[8], m[9]),
            reserved_unallocated_gib=max(_gib(m[10], m[11]) - _gib(m[6], m[7]), 0.0),
            message=_line_of(text, m.start()),
        )
    return None


# Engine start-up / wake-up failures, in the order they are tried: (pattern, kind, engine, the numbers it prints).
# All are rollout failures except the sleep-mode allocator's, which keeps the phase of the stack (a wake-up before
# the weight sync).
_ENGINE_EVENTS: tuple[tuple[re.Pattern[str], str, str, Callable[[re.Match[str]], dict[str, float]]], ...] = (
    (
        _VLLM_FREE,
        "vllm_startup_free_memory",
        "vllm",
        lambda m: {
            "free_gib": float(m[1]),
            "total_gib": float(m[2]),
            "required_gib": float(m[4]),
            "allocation_gib": float(m[4]),
        },
    ),
    (
        _VLLM_MAX_SEQ,
        "vllm_kv_below_max_model_len",
        "vllm",
        lambda m: {
            "max_model_len": int(m[1]),
            "required_gib": float(m[2]),
            "allocation_gib": float(m[2]),
            "free_gib": float(m[3]),
        },
    ),
    (_VLLM_MAX_SEQ_OLD, "vllm_kv_below_max_model_len", "vllm", lambda m: {"max_model_len": int(m[1])}),
    (_VLLM_NO_CACHE, "vllm_no_kv_cache", "vllm", lambda m: {}),
    (_CUMEM, "vllm_wake_up_oom", "vllm", lambda m: {}),
    # sglang model_runner.init_cuda_graphs: capturing the decode graphs after the KV pool took its share
    (_SGLANG_GRAPH, "sglang_cuda_graph_oom", "sglang", lambda m: {"allocation_gib": _gib(m[1], m[2])}),
    (_SGLANG, "sglang_no_kv_cache", "sglang", lambda m: {}),
)


def _engines(text: str, phase: str | None, frames: list[str]) -> OomEvent | None:
    for pattern, kind, engine, numbers in _ENGINE_EVENTS:
        m = pattern.search(text)
        if m:
            where = (phase or "rollout") if pattern is _CUMEM else "rollout"
            return OomEvent(
                kind=kind,
                engine=engine,
                phase=where,
                frames=frames,
                message=_line_of(text, m.start()),
                **numbers(m),  # type: ignore[arg-type]
            )
    return None


def _ray(text: str, phase: str | None, frames: list[str]) -> OomEvent | None:
    m = _RAY.search(text)
    if not m:
        k = _RAY_SIGKILL.search(text)
        if k is None:
            return None
        return OomEvent(
            kind="host_oom_suspected",
            engine="ray",
            phase=phase or "host",
            frames=frames,
            message=_line_of(text, k.start()),
        )
    u = _RAY_USAGE.search(text, m.end())
    return OomEvent(
        kind="host_oom",
        engine="ray",
        phase=phase or "host",
        frames=frames,
        allocation_gib=float(u[1]) if u else None,
        total_gib=float(u[2]) if u else None,
        required_gib=float(u[2]) * float(u[4]) if u else None,
        message=_line_of(text, m.start()),
    )


def parse_oom(text: str, what: str = "traceback") -> OomEvent:
    """The OOM event in a pasted traceback / log excerpt. Raises :class:`InputError` when none is recognised."""
    if len(text) > MAX_TRACEBACK_BYTES:
        raise InputError(f"{what}: larger than {size_text(MAX_TRACEBACK_BYTES)}")
    phase, frames = _phase(text)
    event = _ray(text, phase, frames) or _engines(text, phase, frames) or _torch(text, phase, frames)
    if event is None:
        raise InputError(
            f"{what}: no out-of-memory message recognised (expected PyTorch's 'CUDA out of memory. Tried to allocate "
            "...', vLLM's 'Free memory on device ...' / 'No available memory for the cache blocks' / 'To serve at "
            "least one request ...', SGLang's 'Not enough memory ...' or Ray's 'Task was killed due to the node "
            "running low on memory')"
        )
    return event
