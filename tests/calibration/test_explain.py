"""explain-oom on real messages (fixtures cite their public issues): one per engine and per phase found."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from calculator import estimate, load_scenario
from calculator.calibration.explain import explain_oom
from calculator.calibration.oom_parse import parse_oom
from calculator.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_every_fixture_cites_a_public_source() -> None:
    for f in FIXTURES.glob("*.txt"):
        assert "https://github.com/" in f.read_text().splitlines()[0] + f.read_text().splitlines()[1], f.name


@pytest.mark.parametrize(
    ("name", "kind", "engine", "phase", "alloc"),
    [
        ("torch_old_log_prob_entropy.txt", "cuda_oom", "torch", "old_log_prob", 13.91),
        ("vllm_startup_free_memory.txt", "vllm_startup_free_memory", "vllm", "rollout", 125.75),
        ("vllm_max_seq_len.txt", "vllm_kv_below_max_model_len", "vllm", "rollout", 16.0),
        ("vllm_no_cache_blocks.txt", "vllm_no_kv_cache", "vllm", "rollout", None),
        ("vllm_wake_up_rollout.txt", "vllm_wake_up_oom", "vllm", "rollout", None),
        ("sglang_not_enough_memory.txt", "sglang_no_kv_cache", "sglang", "rollout", None),
        ("ray_host_oom_update_actor.txt", "host_oom", "ray", "update_actor", 59.49),
        ("torch_update_actor_backward.txt", "cuda_oom", "torch", "update_actor", 2.12),
        ("sglang_cuda_graph_capture.txt", "sglang_cuda_graph_oom", "sglang", "rollout", 448 / 1024),
        ("ray_worker_sigkill_init.txt", "host_oom_suspected", "ray", "host", None),
    ],
)
def test_parse_fixtures(name: str, kind: str, engine: str, phase: str, alloc: float | None) -> None:
    e = parse_oom(fixture(name))
    assert (e.kind, e.engine, e.phase, e.allocation_gib) == (kind, engine, phase, alloc)


def test_torch_message_fields() -> None:
    e = parse_oom(fixture("torch_old_log_prob_entropy.txt"))
    assert (e.total_gib, e.free_gib, e.allocated_by_pytorch_gib, e.reserved_unallocated_gib) == (
        79.11,
        8.85,
        60.49,
        6.77,
    )
    assert e.logits_function == "entropy_from_logits"


def test_old_torch_format() -> None:
    text = (
        '  File "x.py", line 1, in update_policy\nRuntimeError: CUDA out of memory. Tried to allocate 158.25 MiB '
        "(GPU 0; 11.17 GiB total capacity; 10.56 GiB already allocated; 130.88 MiB free; 10.60 GiB reserved in total)"
    )
    e = parse_oom(text)
    assert e.phase == "update_actor" and e.allocation_gib == pytest.approx(158.25 / 1024)
    assert e.reserved_unallocated_gib == pytest.approx(0.04)


def test_ref_forward_is_ref_not_old_log_prob() -> None:
    text = "in compute_ref_log_prob\n  in compute_log_prob\nCUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which 1.00 GiB is free."
    assert parse_oom(text).phase == "ref_log_prob"


def test_entropy_oom_matches_the_fp32_logits_copy() -> None:
    # DESIGN.md 4.4: 13.91 GiB in entropy_from_logits is ~24.5k tokens x V 152,064 x 4 B. A Qwen2.5-7B GRPO run
    # whose log-prob micro-batch holds 24,576 tokens: bf16 logits 24,576 x 152,064 x 2 B = 6.96 GiB, fp32 copy 13.92.
    s = load_scenario(
        "qwen2.5-7b-grpo-8xh100",
        {"rollout.log_prob_use_dynamic_bsz": True, "rollout.log_prob_max_token_len_per_gpu": 24576},
    )
    e = explain_oom(s, fixture("torch_old_log_prob_entropy.txt"))
    assert e.phase == "old_log_prob" and e.allocation_gib == 13.91
    assert e.component.startswith("actor_logits (fp32 copy")
    assert e.matched_gib == pytest.approx(13.91, rel=0.05)
    assert e.fixes and all(f.phase_gib_after is not None for f in e.fixes)
    assert "actor_logits" in e.resident_gib


def test_engine_failures_match_engine_figures() -> None:
    s = load_scenario("qwen2.5-7b-grpo-8xh100")
    e = explain_oom(s, fixture("vllm_startup_free_memory.txt"))
    assert e.component.startswith("rollout_startup_required") and e.matched_gib and e.matched_gib > 40
    assert e.fixes[0].lever  # the advisor ranks them
    e = explain_oom(s, fixture("vllm_no_cache_blocks.txt"))
    assert e.component == "kv_cache"


def test_host_oom_has_no_gpu_fixes_and_says_why() -> None:
    e = explain_oom(load_scenario("qwen2.5-7b-grpo-8xh100"), fixture("ray_host_oom_update_actor.txt"))
    assert e.fixes == [] and any("host RAM" in n for n in e.notes)


def test_unrecognised_text_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="no out-of-memory message recognised"):
        parse_oom("Traceback: KeyError 'x'")


def test_a_phase_the_scenario_lacks_is_said() -> None:
    # a critic OOM explained against a GRPO scenario (no critic): the answer says the scenario does not match
    text = (
        "  in update_critic\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.11 GiB of which 1.00 GiB is free."
    )
    e = explain_oom(load_scenario("qwen2.5-7b-grpo-8xh100"), text)
    assert e.phase == "update_critic"
    assert any("has no update_critic phase" in n for n in e.notes)


def test_private_pools_format_and_wrapped_message() -> None:
    # torch >= 2.4 inserts ", with X allocated in private pools (e.g., CUDA Graphs)"; the issue wrapped "P\nyTorch"
    e = parse_oom(fixture("torch_update_actor_backward.txt"))
    assert (e.total_gib, e.free_gib, e.allocated_by_pytorch_gib, e.reserved_unallocated_gib) == (
        79.19,
        2.11,
        83.48,
        30.59,
    )


def test_sync_model_weights_frame_is_the_weight_sync() -> None:
    # frames of https://github.com/Qihoo360/Light-R1/issues/7 (verl's vLLM 0.6.3 weight loader); the stored excerpt
    # stops before the message, so the message below is PyTorch's format with made-up sizes (no fixture for it)
    text = (
        '  File "verl/third_party/vllm/vllm_v_0_6_3/worker.py", line 281, in sync_model_weights\n'
        '  File "verl/third_party/vllm/vllm_v_0_6_3/dtensor_weight_loaders.py", line 368, in load_dtensor_weights\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of "
        "79.11 GiB of which 0.50 GiB is free."
    )
    assert parse_oom(text).phase == "weight_sync"


# What every fixture's answer holds (issue 16): the phase, the matched component with both numbers, what else the
# model says was resident, and ranked fixes with their verl overrides (a host kill of a scenario without offloads has
# none: the note says what else lowers host RAM).
EXPLAINED = [
    ("torch_old_log_prob_entropy.txt", "old_log_prob", "actor_logits"),
    ("torch_update_actor_backward.txt", "update_actor", "actor_"),
    ("vllm_startup_free_memory.txt", "rollout", "rollout_startup_required"),
    ("vllm_max_seq_len.txt", "rollout", "kv_cache"),
    ("vllm_no_cache_blocks.txt", "rollout", "kv_cache"),
    ("vllm_wake_up_rollout.txt", "rollout", "rollout_weights + kv_cache"),
    ("sglang_not_enough_memory.txt", "rollout", "kv_cache"),
    ("sglang_cuda_graph_capture.txt", "rollout", "cuda_graphs"),
    ("ray_host_oom_update_actor.txt", "update_actor", "host_ram_used_per_node"),
    ("ray_worker_sigkill_init.txt", "host", "host_ram_used_per_node"),
]


@pytest.mark.parametrize(("name", "phase", "component"), EXPLAINED)
def test_every_fixture_is_explained(name: str, phase: str, component: str) -> None:
    s = load_scenario("qwen2.5-7b-grpo-8xh100")
    e = explain_oom(s, fixture(name))
    assert e.phase == phase
    assert e.component.startswith(component)
    assert e.matched_gib is not None and e.matched_gib > 0
    assert e.resident_gib and all(v > 0 for v in e.resident_gib.values())
    if e.event.kind in ("host_oom", "host_oom_suspected"):
        assert e.fixes == [] and any("host RAM" in n for n in e.notes)
    else:
        assert e.fixes and [f.rank for f in e.fixes] == list(range(1, len(e.fixes) + 1))
        assert all(f.verl_overrides and all("=" in line for line in f.verl_overrides) for f in e.fixes)


def test_update_actor_oom_matches_a_transient_actor_tensor() -> None:
    # A failed allocation is a tensor the step allocates anew: in update_actor one of the actor's activations,
    # logits, gradients or gathered parameters, never the resident optimizer state nor another role's tensors.
    s = load_scenario("qwen2.5-7b-grpo-8xh100")
    e = explain_oom(s, fixture("torch_update_actor_backward.txt"))
    phase = next(p for p in estimate(s).phases if p.name == "update_actor")
    own = {k: v for k, v in phase.components.items() if k.startswith("actor_") and k != "actor_optimizer" and v > 0}
    own = {k: v for k, v in own.items() if k not in ("actor_params",)}
    best = min(own, key=lambda k: abs(math.log(own[k] / 2.12)))
    assert e.component == best and e.matched_gib == pytest.approx(own[best])
    assert all((f.phase_gib_after or 0) < phase.total_gib for f in e.fixes)  # each fix lowers update_actor


def test_kv_shortage_fixes_give_the_engine_more_memory_first() -> None:
    # vLLM: "Try increasing `gpu_memory_utilization`": a fix that lowers it would shrink the KV cache further
    s = load_scenario("qwen2.5-7b-grpo-8xh100")
    e = explain_oom(s, fixture("vllm_no_cache_blocks.txt"))
    assert e.fixes[0].verl_overrides == ["actor_rollout_ref.rollout.gpu_memory_utilization=0.7"]  # 0.6 + 0.1
    kv_before = estimate(s).rollout.kv_cache_gib_per_gpu
    assert e.fixes[0].phase_gib_after is not None and e.fixes[0].phase_gib_after > kv_before
    lowered = [
        f
        for f in e.fixes
        if any(x.startswith("actor_rollout_ref.rollout.gpu_memory_utilization=0.5") for x in f.verl_overrides)
    ]
    assert lowered == []


def test_host_oom_matches_the_predicted_use_not_the_capacity() -> None:
    s = load_scenario("qwen2.5-7b-grpo-8xh100")
    e = explain_oom(s, fixture("ray_host_oom_update_actor.txt"))
    host = estimate(s).host
    assert e.matched_gib == pytest.approx(host.total_gib_per_node)
    assert sum(e.resident_gib.values()) == pytest.approx(host.total_gib_per_node, abs=0.01)


def test_host_oom_fixes_turn_off_the_offloads_that_fill_the_node() -> None:
    s = load_scenario(
        "qwen2.5-7b-grpo-8xh100",
        {"actor.fsdp_config.param_offload": True, "actor.fsdp_config.optimizer_offload": True},
    )
    e = explain_oom(s, fixture("ray_host_oom_update_actor.txt"))
    before = estimate(s).host.total_gib_per_node
    assert [f.verl_overrides for f in e.fixes] == [
        ["actor_rollout_ref.actor.fsdp_config.optimizer_offload=false"],  # the larger saving first
        ["actor_rollout_ref.actor.fsdp_config.param_offload=false"],
    ]
    assert all(f.phase_gib_after is not None and f.phase_gib_after < before for f in e.fixes)
    assert e.fixes[0].phase_gib_after < e.fixes[1].phase_gib_after
