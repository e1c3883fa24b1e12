"""explain-oom on real messages (fixtures cite their public issues): one per engine and per phase found."""

from __future__ import annotations

from pathlib import Path

import pytest

from calculator import load_scenario
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
