"""``peak.reasons`` and the null step time (calculator/report/verdict.py, DESIGN.md 6.5, issue 13 items 5-6):
one line per failed fit criterion with its numbers and a fix, empty exactly when the run fits."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from calculator import Scenario, estimate, load_scenario
from calculator.inputs.presets import scenario_presets
from calculator.memory import phases as memory
from calculator.report.estimate import build_context
from calculator.report.models import Component, PhaseMemory
from calculator.report.verdict import _megatron_activation_fix, memory_fix
from calculator.resolve.resolved import resolve
from tests.support.strategies import scenario_dicts

BASE = "qwen2.5-7b-grpo-8xh100"
# Issue 13 item 5: 70B on 32 x H200 from the 7B preset. Memory fits (110.52 of 139.8 GiB) but the KV cache holds
# 104,848 tokens < max_model_len 131,072 (Llama-3.1's max_position_embeddings): vLLM refuses to start.
ITEM5 = {"model.path": "llama3.1-70b", "hardware.num_gpus": 32, "hardware.gpu": "h200-141gb"}


def _invariants(r) -> None:
    assert r.peak.fits == (r.peak.reasons == [])
    assert r.peak.worst_case_fits == (r.peak.worst_case_reasons == [])
    assert (r.time.step_s is None) == (not r.rollout.starts)
    assert (r.time.reason is None) == r.rollout.starts
    assert (r.rollout.start_reasons == []) == r.rollout.starts
    assert all(x in r.peak.reasons and x in r.peak.worst_case_reasons for x in r.rollout.start_reasons)
    if r.time.step_s is not None:
        assert r.time.step_s == pytest.approx(sum(r.time.phases_s.values()), rel=1e-12)


@pytest.mark.parametrize("preset", sorted(scenario_presets()))
def test_fits_exactly_when_no_reason_for_every_preset(preset):
    _invariants(estimate(load_scenario(preset)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario_dicts())
def test_fits_exactly_when_no_reason_for_any_scenario(d):
    _invariants(estimate(Scenario(**d)))


def test_item5_names_the_kv_cache_not_the_startup_memory():
    r = estimate(load_scenario(BASE, overrides=ITEM5))
    assert r.peak.gib_per_gpu < r.peak.usable_memory_gib  # memory alone would fit (headroom 29.28 GiB)
    assert r.rollout.startup_free_gib >= r.rollout.startup_required_gib  # vLLM's free-memory check passes
    assert not r.peak.fits
    kv = [x for x in r.peak.reasons if x.startswith("KV cache holds")]
    assert kv == [
        "KV cache holds 107,648 tokens per replica < max_model_len 131,072: vLLM refuses to start. Fix: set "
        "rollout.max_model_len=1536 (prompt + response), raise rollout.gpu_memory_utilization or "
        "rollout.tensor_model_parallel_size."
    ]
    assert not any("free at startup" in x for x in r.peak.reasons)
    assert r.time.step_s is None and r.time.phases_s["rollout"] is None and r.time.reason == kv[0]
    assert "rollout" not in r.time.terms_s and r.time.tokens_per_s == 0.0


def test_no_kv_cache_is_a_reason_and_has_no_step_time():
    """Issue 13 item 6: a 70B model on 8 x H100 at util 0.6: the engine's budget cannot hold the weights."""
    r = estimate(load_scenario(BASE, overrides={"model.path": "llama3.1-70b"}))
    assert r.rollout.kv_cache_tokens_per_replica == 0
    assert any(x.startswith("the rollout engine has no memory for a KV cache") for x in r.peak.reasons)
    assert not any(x.startswith("KV cache holds") for x in r.peak.reasons)  # one line for the KV criterion
    assert r.time.step_s is None and r.time.phases_s["rollout"] is None
    js = r.model_dump(mode="json")["time"]
    assert js["step_s"] is None and js["phases_s"]["rollout"] is None and js["reason"]


def test_startup_memory_reason_quotes_both_numbers():
    r = estimate(load_scenario(BASE, overrides={"rollout.gpu_memory_utilization": 0.95}))
    line = next(x for x in r.peak.reasons if x.startswith("the rollout engine cannot start"))
    assert f"{r.rollout.startup_free_gib:.2f} GiB free at startup < " in line
    assert f"= {r.rollout.startup_required_gib:.2f} GiB required" in line
    assert "Fix: lower rollout.gpu_memory_utilization" in line


def test_memory_reason_names_phase_numbers_and_fix():
    """seed003 (7B PPO on 8 x A100-40GB): rollout 51.37 GiB > 39.38 GiB usable, the KV cache largest (update_actor
    follows at 50.35 GiB: its activations, no fragmentation term under verl 0.9.1's expandable segments)."""
    r = estimate(load_scenario("seed003-qwen2-7b-ppo-tuned"))
    assert r.peak.reasons[0] == (
        "peak 51.37 GiB per GPU in rollout > usable 39.38 GiB (over by 11.99 GiB; largest component kv_cache). "
        "Fix: lower rollout.gpu_memory_utilization or raise rollout.tensor_model_parallel_size."
    )


def test_megatron_activation_fix_names_megatron_levers():
    """A Megatron role's activations get Megatron's levers (recompute, TP / CP), never FSDP's gradient checkpointing
    or Ulysses SP, which its config does not have. Found by running verl's examples/grpo_trainer/
    run_qwen3moe-30b_megatron_96gb.sh (verl main b178a3cd5) through the sweep: its fix named the FSDP keys."""
    overrides = {"actor.strategy": "megatron", "data.max_response_length": 8192}
    r = estimate(load_scenario(BASE, overrides=overrides))
    why = r.peak.worst_case_reasons[0]
    assert "largest component actor_activations" in why and "Ulysses" not in why and "checkpointing" not in why
    assert "activation recompute (actor.megatron.recompute_granularity=full, recompute_method=uniform)" in why
    recompute = {"actor.megatron.recompute_granularity": "full", "actor.megatron.recompute_method": "uniform"}
    s = load_scenario(BASE, overrides={**overrides, **recompute, "actor.megatron.recompute_num_layers": 1})
    fix = _megatron_activation_fix(resolve(s).actor)
    assert "activation recompute" not in fix and "actor.megatron.tensor_model_parallel_size" in fix  # already on


def test_reward_engine_fix_names_the_reward_model_keys():
    """The reward model's vLLM engine over the limit gets reward_model.rollout.* (before: actor_rollout_ref's
    rollout.gpu_memory_utilization, because "reward_kv_cache" also ends with "kv_cache"). Found by the sweep on
    verl's examples/ppo_trainer/run_qwen2-7b_rm_seq_balance.sh (verl main b178a3cd5)."""
    kv = Component("reward_kv_cache", "reward", 2 * 2**30, "x", process="reward")
    phase = PhaseMemory(name="reward", components=(kv, Component("reward_params", "reward", 1, "x", process="reward")))
    assert memory_fix(phase) == (
        "lower reward_model.rollout.gpu_memory_utilization or raise reward_model.rollout.tensor_model_parallel_size"
    )


def test_a_verl_error_check_is_a_reason():
    r = estimate(load_scenario(BASE, overrides=ITEM5))
    errors = [p.message for p in r.checks if p.severity == "error"]
    assert errors and [f"verl rejects the config: {m}" for m in errors] == [
        x for x in r.peak.reasons if x.startswith("verl rejects")
    ]


def test_fits_at_mean_but_not_at_max_lengths_keeps_fits():
    """Worst case is its own verdict: fits stays true (peak 62.20 GiB at the mean lengths), worst_case_reasons
    says why max lengths do not (max response 8192: update_actor 138.78 GiB > 79.22 GiB)."""
    r = estimate(load_scenario(BASE, overrides={"data.max_response_length": 8192}))
    assert r.peak.fits and r.peak.reasons == [] and not r.peak.worst_case_fits
    assert r.peak.worst_case_reasons == [
        "worst case (every sequence at max length) 138.78 GiB per GPU in update_actor > usable 79.22 GiB (over by "
        "59.56 GiB; largest component actor_activations). Fix: use smaller micro-batches / token budgets "
        "(ppo_micro_batch_size_per_gpu, ppo_max_token_len_per_gpu), gradient checkpointing or Ulysses sequence "
        "parallelism."
    ]


def test_memory_fix_follows_the_largest_component():
    ctx = build_context(load_scenario(BASE))
    rollout = next(p for p in memory.all_phases(ctx) if p.name == "rollout")
    assert "gpu_memory_utilization" in memory_fix(rollout)  # rollout_weights / kv_cache dominate


def test_switching_to_ppo_fills_the_critic_micro_batch_verl_requires():
    """Issue 13 item 8: gae on the GRPO preset leaves critic.ppo_micro_batch_size_per_gpu unset and dynamic batching
    off, which verl's CriticConfig.__post_init__ rejects; role_settings gives it the actor's (16)."""
    from calculator import role_settings

    ppo = load_scenario(BASE, overrides={"algorithm.adv_estimator": "gae"})
    checks = estimate(ppo).checks
    # verl's CriticConfig check fires; the estimate assumed a critic micro-batch, so it is a warning, not a reason
    assert any(c.rule == "micro_batch_required" and "[critic]" in c.message for c in checks)
    assert not any(x.startswith("verl rejects the config: [critic]") for x in estimate(ppo).peak.reasons)
    assert role_settings(ppo) == {"critic.ppo_micro_batch_size_per_gpu": 16}
    filled = estimate(load_scenario(ppo, overrides=role_settings(ppo)))
    assert not any(x.startswith("verl rejects") for x in filled.peak.reasons)
    assert role_settings(load_scenario(BASE)) == {}  # GRPO: no critic
    assert role_settings(load_scenario("qwen2.5-7b-ppo-8xh100")) == {}  # dynamic batching: nothing missing


def _fix_for(top: str, phase: str, overrides: dict) -> str:
    """memory_fix of a one-component phase whose largest piece is ``top``, with the engine of ``overrides``."""
    from calculator.report.models import Component, PhaseMemory

    r = build_context(load_scenario(BASE, overrides=overrides)).r
    return memory_fix(PhaseMemory(name=phase, components=(Component(top, "actor", 1, "x"),)), r)


@pytest.mark.parametrize(
    ("top", "phase", "overrides", "fix"),
    [
        # params in a phase where the actor is idle: offloading them while idle helps
        (
            "actor_params",
            "rollout",
            {},
            "offload the params while the actor is idle (actor.fsdp_config.param_offload=true)",
        ),
        # the optimizer in the update: verl loads it back for the update, so offloading while idle does not help
        ("actor_optimizer", "update_actor", {"actor.strategy": "fsdp2"}, "actor.fsdp_config.offload_policy=true"),
        ("actor_optimizer", "update_actor", {"actor.strategy": "fsdp"}, "use more GPUs"),
        (
            "actor_optimizer",
            "update_actor",
            {"actor.strategy": "megatron", "actor.megatron.optimizer_offload": True},
            "step the optimizer on the CPU (actor.megatron.optimizer_cpu_offload=true)",
        ),
        (
            "actor_optimizer",
            "rollout",
            {"actor.strategy": "megatron"},
            "offload the optimizer while the actor is idle (actor.megatron.optimizer_offload=true)",
        ),
        # already offloaded and the actor computes in this phase: only more GPUs / model parallelism is left
        (
            "actor_params",
            "old_log_prob",
            {"actor.strategy": "megatron", "actor.megatron.param_offload": True},
            "use more GPUs or more model parallelism",
        ),
    ],
)
def test_memory_fix_names_the_roles_own_engine_keys_and_skips_what_is_on(top, phase, overrides, fix):
    """A Megatron actor is never told to set an FSDP key, nor to turn on an offload that is already on or that
    verl undoes in that phase (the optimizer is loaded back for the update)."""
    got = _fix_for(top, phase, overrides)
    assert got.startswith(fix) or fix in got, got
    if overrides.get("actor.strategy") == "megatron":
        assert "fsdp_config" not in got


def test_trainer_that_does_not_fit_at_init_is_named_not_negative_free_memory():
    """Megatron on 8 x A100-40GB keeps the bf16 params (2 B) and the full fp32 grad buffer (4 B) of Qwen2.5-7B on
    every DP rank: 6 x 7.616e9 B = 42.56 GiB alone > 39.38 GiB usable, so the trainer fails at init. The reason
    says so (with the Megatron keys), not "-22.91 GiB free at startup"."""
    r = estimate(load_scenario(BASE, overrides={"hardware.gpu": "a100-40gb", "actor.strategy": "megatron"}))
    (line,) = r.rollout.start_reasons
    assert line.startswith("the trainer does not fit before the rollout engine starts")
    assert "actor.megatron.param_offload=true" in line and "pipeline_model_parallel_size" in line
    assert "GiB free at startup" not in line
    assert not r.rollout.starts and r.time.step_s is None
