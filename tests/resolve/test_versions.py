"""The verl version table (calculator/resolve/versions.py): one row per release read from its wheel, the
aliases, and the resolve / memory consumers of the flags."""

from __future__ import annotations

import pytest

from calculator import estimate, load_scenario
from calculator.inputs.scenario import VERL_VERSIONS
from calculator.names import Phase
from calculator.report.estimate import build_context
from calculator.resolve.engines import max_model_len
from calculator.resolve.resolved import resolve
from calculator.resolve.versions import VERL_VERSIONS as RELEASES
from calculator.resolve.versions import VERSION_ALIASES, VERSION_BEHAVIOUR, behaviour

PRESET = "qwen2.5-7b-grpo-8xh100"


def test_every_scenario_version_has_a_row_with_sources():
    assert set(RELEASES) == set(VERSION_BEHAVIOUR)
    assert set(VERL_VERSIONS) == set(VERSION_BEHAVIOUR) | set(VERSION_ALIASES)
    for v, row in VERSION_BEHAVIOUR.items():
        assert row.version == v and row.sources and row.notes


def test_aliases_are_the_newest_patch_release():
    assert behaviour("0.9") is VERSION_BEHAVIOUR["0.9.1"]
    assert behaviour("0.7") is VERSION_BEHAVIOUR["0.7.1"]


def test_facts_that_hold_in_every_version():
    for row in VERSION_BEHAVIOUR.values():
        assert not row.ref_on_gpu_bf16  # FSDP ref is CPU-offloaded since verl 0.2
        assert not row.logits_fp32
        assert row.vllm_util_semantics == "total"
        assert row.old_log_prob_entropy
        assert row.ref_forward_streams_weights  # forced CPUOffload: streamed every pass (legacy and engine)


def test_cells_read_in_the_wheels():
    b = VERSION_BEHAVIOUR
    # worker: legacy through 0.7.1; the 0.8.0 wheel has no workers/fsdp_workers.py
    assert [b[v].worker_impl for v in RELEASES] == ["legacy"] * 4 + ["engine"] * 3
    # vLLM process: SPMD / ZeroMQ in the trainer process until 0.7.0; 'mp' from 0.7.1
    assert [b[v].rollout_in_trainer_process for v in RELEASES] == [True, True, True, False, False, False, False]
    assert [b[v].weight_sync_bucket_mib for v in RELEASES] == [512, 512, 512, 2048, 2048, 2048, 2048]
    assert [b[v].max_num_seqs_default for v in RELEASES] == [1024] * 5 + [256] * 2  # 0.8.0 yaml :260 = 1024
    assert b["0.8"].critic_always_dynamic and b["0.8"].critic_update_budget_from_ppo
    assert not b["0.7.1"].critic_always_dynamic
    # 0.9.0 vs 0.9.1: deferred sync, logits copy at T = 1, graphs outside the budget with vLLM 0.18-0.20
    assert b["0.9.0"].always_defer_grad_sync and not b["0.9.1"].always_defer_grad_sync
    assert b["0.9.0"].temperature_copy_at_one and not b["0.9.1"].temperature_copy_at_one
    assert not b["0.9.0"].vllm_cudagraph_in_budget and b["0.9.1"].vllm_cudagraph_in_budget
    assert [b[v].max_model_len_rule for v in RELEASES] == [
        "set_or_prompt_response",
        "set_or_prompt_response",
        "forced_max_position",
        *["set_or_max_position"] * 4,
    ]


def test_expandable_segments_from_060():
    """verl switches expandable segments on for the trainer's passes from 0.6.0 (utils/device.py
    set_expandable_segments, verl PR #3020 2025-08-13 for FSDP, #3181 for Megatron); 0.5.0 has no such call."""
    b = VERSION_BEHAVIOUR
    assert [b[v].trainer_expandable_segments for v in RELEASES] == [False] + [True] * 6
    assert resolve(load_scenario(PRESET)).trainer_expandable_segments
    assert not resolve(load_scenario(PRESET, {"verl_version": "0.5"})).trainer_expandable_segments
    # Ascend: the switch reaches torch.npu from 0.8 only and needs torch-npu >= 2.9.0: not assumed
    ascend = load_scenario(PRESET, {"hardware.gpu": "ascend-910b-64gb"})
    assert resolve(ascend).gpu.vendor == "huawei" and not resolve(ascend).trainer_expandable_segments
    # the report names it among the values verl fixes, where it applies
    said = [x for x in estimate(load_scenario(PRESET)).decisions if x.startswith("PYTORCH_CUDA_ALLOC_CONF")]
    assert said == [
        "PYTORCH_CUDA_ALLOC_CONF = expandable_segments:True (fixed by verl: verl 0.9.1 switches it on through "
        "torch.cuda.memory._set_allocator_settings when the trainer leaves rollout mode and off for the weight sync "
        "(utils/device.py set_expandable_segments): no fragmentation term in the trainer's phases)"
    ]
    for s in (load_scenario(PRESET, {"verl_version": "0.5"}), ascend):
        assert not any(x.startswith("PYTORCH_CUDA_ALLOC_CONF") for x in estimate(s).decisions)


def test_unknown_version_falls_back_to_current():
    assert behaviour("1.0") is VERSION_BEHAVIOUR["0.9.1"]


def test_max_model_len_per_release():
    # Qwen2.5-7B preset: max_position_embeddings 131072 (presets/models).
    for version, set_len, expected in (
        ("0.6", None, "sequence"),  # 0.6.0 vllm_rollout_spmd.py:159: max_model_len or prompt + response
        ("0.6", 4096, 4096),
        ("0.7.0", 4096, 131072),  # 0.7.0 vllm_async_server.py:198: forced to max_position_embeddings
        ("0.7.1", None, 131072),  # 0.7.1 :114-115: null -> max_position_embeddings
        ("0.9.1", 4096, 4096),
    ):
        s = load_scenario(PRESET, overrides={"verl_version": version, "rollout.max_model_len": set_len})
        r = resolve(s)
        seq = s.data.max_prompt_length + s.data.max_response_length
        assert r.actor_arch.max_position_embeddings == 131072
        want = seq if expected == "sequence" else expected
        assert max_model_len(s, r.actor_arch) == r.rollout.max_model_len == want, version


def test_090_defers_gradient_sync_and_copies_logits_at_temperature_one():
    s91 = load_scenario(PRESET, overrides={"verl_version": "0.9.1", "rollout.temperature": 1.0})
    s90 = load_scenario(PRESET, overrides={"verl_version": "0.9.0", "rollout.temperature": 1.0})
    r90 = resolve(s90)
    assert r90.actor.fsdp.use_no_sync_for_gradient_accumulation  # forced by the release
    assert not resolve(s91).actor.fsdp.use_no_sync_for_gradient_accumulation
    assert any(d.key == "actor.fsdp_config.use_no_sync_for_gradient_accumulation" for d in r90.decisions)
    upd91 = next(p for p in estimate(s91).phases if p.name == Phase.UPDATE_ACTOR)
    upd90 = next(p for p in estimate(s90).phases if p.name == Phase.UPDATE_ACTOR)
    # 0.9.0 holds unsharded fp32 grads: 4 B x P on every GPU instead of 4 B x P / 8 (Qwen2.5-7B,
    # P = 7,615,616,512: 28.37 GiB vs 3.55 GiB), and a second logits copy at T = 1.
    assert upd90.total_gib > upd91.total_gib + 24


# 8 prompts x n 5 = 40 sequences, 5 per GPU on 8: one micro-batch per mini-batch in the worst case too
ONE_MICRO_BATCH = {
    "actor.use_dynamic_bsz": False,
    "actor.ppo_mini_batch_size": 8,
    "actor.ppo_micro_batch_size_per_gpu": 8,
}
KEY = "actor.fsdp_config.use_no_sync_for_gradient_accumulation"


@pytest.mark.parametrize(
    "overrides", [{"verl_version": "0.9.0"}, {"verl_version": "0.9.1", KEY: True}], ids=["0.9.0", "0.9.1-no-sync"]
)
def test_one_micro_batch_per_mini_batch_defers_no_gradient_sync(overrides):
    """verl syncs the last micro-batch whatever the setting (0.9.1 workers/engine/fsdp/transformer_impl.py
    _gradient_sync_context: ``if is_last_micro_batch or not defer_sync: yield``): with one per mini-batch nothing
    is deferred, so the grads are the sharded 4 B x 7,615,616,512 / 8 = 3,807,808,256 B of Qwen2.5-7B on 8 GPUs."""
    s = load_scenario(PRESET, overrides={**overrides, **ONE_MICRO_BATCH})
    r = resolve(s)
    assert r.passes[Phase.UPDATE_ACTOR].worst.num_micro_batches == 1
    assert not r.actor.fsdp.use_no_sync_for_gradient_accumulation
    assert r.passes[Phase.UPDATE_ACTOR].trainer is r.actor  # the pass runs the final plan
    assert build_context(s).actor_state.grads.bytes == 7_615_616_512 * 4 // 8
    decided = [d for d in r.decisions if d.key == KEY]
    if KEY in overrides:  # the user's setting, overruled with the reason
        assert len(decided) == 1 and decided[0].value is False and "one micro-batch" in decided[0].note
    else:  # 0.9.0 would defer, but there is nothing to defer
        assert not decided
    two = {**overrides, **ONE_MICRO_BATCH, "actor.ppo_micro_batch_size_per_gpu": 4}
    r2 = resolve(load_scenario(PRESET, overrides=two))
    assert r2.passes[Phase.UPDATE_ACTOR].worst.num_micro_batches == 2
    assert r2.actor.fsdp.use_no_sync_for_gradient_accumulation  # deferred: unsharded grads until the last
