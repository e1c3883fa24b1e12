"""The CLI's verdict lines come from ``peak.reasons`` (issue 13 item 5): the reason and its fix are printed, never a
bare "DOES NOT FIT (headroom 29.28 GiB)"; a step that cannot run prints no time; ``advise`` says why a "no" is no."""

from __future__ import annotations

from calculator import estimate, load_scenario
from tests.golden.capture import run_cli

BASE = "qwen2.5-7b-grpo-8xh100"
ITEM5 = ["--model", "llama3.1-70b", "--gpu", "h200-141gb", "--num-gpus", "32"]


def test_item5_prints_the_kv_reason_and_no_step_time():
    code, out, _ = run_cli(["estimate", BASE, *ITEM5])
    assert code == 0
    lines = out.splitlines()
    verdict = next(x for x in lines if x.startswith("peak: "))
    # 114.43 GiB of 139.8 usable: memory headroom 25.37 GiB, but two criteria fail (the KV cache, verl's micro-batch)
    assert verdict.startswith("peak: 114.43 GiB in rollout (memory headroom 25.37 GiB) -> DOES NOT FIT (2 reasons)")
    why = [x for x in lines if x.startswith("why: ")]
    assert why[0] == (
        "why: KV cache holds 107,648 tokens per replica < max_model_len 131,072: vLLM refuses to start. Fix: set "
        "rollout.max_model_len=1536 (prompt + response), raise rollout.gpu_memory_utilization or "
        "rollout.tensor_model_parallel_size."
    )
    assert why[1].startswith("why: verl rejects the config: data size must be divisible")
    assert "step: no step time, the step cannot run (the rollout engine cannot start; see why:)" in lines
    assert not any("free at startup" in x for x in why)


def test_why_lines_are_the_report_reasons():
    r = estimate(load_scenario("seed003-qwen2-7b-ppo-tuned"))
    _, out, _ = run_cli(["estimate", "seed003-qwen2-7b-ppo-tuned"])
    assert [x[len("why: ") :] for x in out.splitlines() if x.startswith("why: ")] == r.peak.reasons


def test_check_exit_code_follows_the_reasons():
    assert run_cli(["estimate", BASE, *ITEM5, "--check"])[0] == 1
    assert run_cli(["estimate", BASE, "--check"])[0] == 0


def test_fits_at_mean_but_not_at_max_lengths_says_so():
    _, out, _ = run_cli(["estimate", BASE, "--set", "data.max_response_length=8192"])
    lines = out.splitlines()
    assert any(x.startswith("peak: 62.20 GiB in rollout -> fits (headroom 17.02 GiB)") for x in lines)
    assert any(
        x.startswith("at max lengths it does not fit: worst case (every sequence at max length) 138.78 GiB")
        for x in lines
    )


def test_advise_says_why_a_no_does_not_fit():
    _, out, _ = run_cli(["advise", BASE, "--gpu", "a100-40gb"])
    lines = out.splitlines()
    rows = [i for i, x in enumerate(lines) if x[:3].strip().isdigit() and " no " in x[:12]]
    assert rows, "a100-40gb has options that do not fit"
    for i in rows:
        assert lines[i + 1].strip().startswith("why not: ")
