"""Issue 14 mechanisms 1-5: each with hand-checked bytes (the arithmetic is in the comments)."""

from __future__ import annotations

import pytest

from calculator import estimate, load_scenario
from calculator.inputs.presets import model_presets
from calculator.inputs.scenario import MegatronSection
from calculator.memory.training import megatron_optimizer_bytes
from calculator.report.estimate import build_context
from calculator.units import GIB_BYTES

BASE = "qwen2.5-7b-grpo-8xh100"  # Qwen2.5-7B, GRPO, 8 x H100, FSDP1, vLLM TP 2, verl 0.9
P7 = 7_615_616_512
V, H = 152_064, 3584
ROOT7 = 2 * V * H + H  # embedding + lm_head (untied) + final norm = 1,089,998,336
LAYER7 = 233_057_792  # one Qwen2.5-7B decoder layer


def phase(r, name):
    return next(p for p in r.phases if p.name == name)


def comp(r, phase_name, name):
    return next((c.bytes for c in phase(r, phase_name).details if c.name == name), 0)


def run(**overrides):
    return estimate(load_scenario(BASE, overrides=overrides), with_time=False)


# ---- 1. Megatron optimizer -------------------------------------------------------------------

MEG = {"actor.strategy": "megatron", "actor.megatron.tensor_model_parallel_size": 2}
Q7 = P7 // 8  # DP-sharded params per GPU: P / (TP 2 x PP 1 x DP 4) = 951,952,064


@pytest.mark.parametrize(
    ("fields", "gpu_b", "init_b", "host_b"),
    [
        ({}, 12, 4, 0),  # fp32 master 4 (built with the optimizer) + Adam 8
        ({"use_precision_aware_optimizer": True}, 2 + 8, 0, 0),  # int16 master remainders + fp32 moments, lazily
        ({"use_precision_aware_optimizer": True, "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16"}, 2 + 4, 0, 0),
        # CPU optimizer, whole fraction, precision-aware: nothing on the GPU; host 4 master + 8 Adam + 4 pinned grad
        (
            {"optimizer_cpu_offload": True, "optimizer_offload_fraction": 1.0, "use_precision_aware_optimizer": True},
            0,
            0,
            16,
        ),
        # half on CPU without precision-aware: the distributed optimizer's fp32 shards stay (4) + half the Adam (4)
        ({"optimizer_cpu_offload": True, "optimizer_offload_fraction": 0.5}, 4 + 4, 4, 8),
        # half on CPU, precision-aware: GPU half keeps an fp32 clone + Adam: 0.5 x 12
        (
            {"optimizer_cpu_offload": True, "optimizer_offload_fraction": 0.5, "use_precision_aware_optimizer": True},
            6,
            2,
            8,
        ),
    ],
)
def test_megatron_optimizer_bytes_per_param(fields, gpu_b, init_b, host_b):
    gpu, init, host, _, _ = megatron_optimizer_bytes("adam", MegatronSection(**fields))
    assert (gpu, init, host) == (gpu_b, init_b, host_b)


def test_megatron_cpu_optimizer_in_the_update_and_on_the_host():
    f = {
        "actor.megatron.optimizer_cpu_offload": True,
        "actor.megatron.optimizer_offload_fraction": 1.0,
        "actor.megatron.use_precision_aware_optimizer": True,
    }
    r = run(**MEG, **f)
    assert comp(r, "update_actor", "actor_optimizer") == 0
    assert comp(r, "update_actor", "actor_params") == P7 * 2 // 2  # bf16 / TP 2
    # host: 8 GPUs x Q7 x 16 B
    assert r.host.components["actor_cpu_optimizer"] * GIB_BYTES == pytest.approx(8 * Q7 * 16, rel=1e-9)
    plain = run(**MEG)
    assert comp(plain, "update_actor", "actor_optimizer") == Q7 * 12
    assert "actor_cpu_optimizer" not in plain.host.components


def test_megatron_master_shards_count_at_engine_start():
    """The fp32 main shards exist when vLLM starts (built in initialize()): 4 B x Q7 beside the actor's bf16
    params (P / TP 2 x 2 B), its fp32 grad buffer (x 4 B) and the KL reference's bf16 params (P / 2 x 2 B)."""
    ctx = build_context(load_scenario(BASE, overrides=MEG))
    assert ctx.startup_trainer_bytes == P7 * 2 // 2 + P7 * 4 // 2 + Q7 * 4 + P7 * 2 // 2
    off = build_context(load_scenario(BASE, overrides={**MEG, "actor.megatron.optimizer_offload": True}))
    assert off.startup_trainer_bytes == P7 * 2 // 2 + P7 * 4 // 2 + P7 * 2 // 2


def test_megatron_grads_not_loaded_outside_the_update_with_param_offload():
    """load_megatron_model_to_gpu(load_grad=False) in eval passes and the sync; the update loads the buffer."""
    r = run(**MEG, **{"actor.megatron.param_offload": True})
    grads = P7 * 4 // 2  # fp32 grad buffer / TP 2
    assert comp(r, "update_actor", "actor_grads") == grads
    assert comp(r, "old_log_prob", "actor_grads") == 0 and comp(r, "weight_sync", "actor_grads") == 0
    kept = run(**MEG)  # without param_offload the buffer is never freed
    assert comp(kept, "old_log_prob", "actor_grads") == grads and comp(kept, "rollout", "actor_grads") == grads


def test_megatron_largest_tensor_is_the_embedding():
    """DeepSeek-V3: a fused expert block (256 x 2 x 2048 x 7168 = 7,516,192,768) is an HF-checkpoint tensor;
    Megatron exports per-expert tensors, so the largest is the embedding 129,280 x 7,168 = 926,679,040."""
    a = model_presets()["deepseek-v3"].architecture
    assert a.largest_tensor_params() == 256 * 2 * 2048 * 7168
    assert a.largest_tensor_params(per_expert=True) == 129_280 * 7168


# ---- 2. LoRA weight sync ---------------------------------------------------------------------


def test_lora_fsdp1_summons_the_whole_model_in_fp32():
    r = run(**{"model.lora_rank": 32})
    assert comp(r, "weight_sync", "sync_lora_gather") == P7 * 4  # whole model, fp32 master, on every GPU
    assert comp(r, "weight_sync", "sync_full_tensor") == 0  # views of the summoned params
    layered = run(**{"model.lora_rank": 32, "rollout.layered_summon": True})
    assert comp(layered, "weight_sync", "sync_lora_gather") == ROOT7 * 4  # the root unit is the largest unit
    fsdp2 = run(**{"model.lora_rank": 32, "actor.strategy": "fsdp2"})
    assert comp(fsdp2, "weight_sync", "sync_lora_gather") == 0
    one = {"model.lora_rank": 32, "hardware.num_gpus": 1, "rollout.tensor_model_parallel_size": 1}
    assert comp(run(**one), "weight_sync", "sync_lora_gather") == 0  # one GPU: nothing to gather


def test_lora_level1_sleep_backs_rollout_weights_up_on_the_host():
    r = run(**{"model.lora_rank": 32})
    assert r.host.components["rollout_weight_backup"] * GIB_BYTES == pytest.approx(8 * P7 * 2 // 2, rel=1e-9)
    assert "rollout_weight_backup" not in run().host.components  # level 2 discards them


# ---- 3. entropy in the update ------------------------------------------------------------------


def test_entropy_bonus_adds_the_log_prob_gradient():
    """inplace_backward=False with entropy: saved logits + the CE gradient, both T x V x 2 B (+ compiled
    entropy's gradient 2 B: 6 B per logit in all)."""
    on = run(**{"actor.entropy_coeff": 0.001})
    off = run()
    logits_on, logits_off = comp(on, "update_actor", "actor_logits"), comp(off, "update_actor", "actor_logits")
    assert logits_on == 2 * logits_off
    assert comp(on, "update_actor", "actor_entropy") == logits_off  # compiled entropy gradient, 2 B/logit
    assert comp(on, "old_log_prob", "actor_logits") == comp(off, "old_log_prob", "actor_logits")  # forward only


# ---- 4. transients ---------------------------------------------------------------------------


def test_adamw_step_temporary_beyond_the_backward():
    """foreach sqrt(exp_avg_sq): P x 4 B / 8 = 3,807,808,256 B; counts what exceeds the backward's transients
    (FSDP2: its lm_head unit is small, so the backward's transients stay below the temporary)."""
    short = {"data.max_response_length": 128, "data.mean_response_length": 128, "data.max_prompt_length": 64}
    r = run(**{"actor.ppo_micro_batch_size_per_gpu": 1, "actor.strategy": "fsdp2", **short})
    backward = sum(
        comp(r, "update_actor", n)
        for n in ("actor_unsharded_params", "actor_activations", "actor_logits", "actor_entropy", "actor_head_grad")
    )
    assert backward < P7 * 4 // 8
    assert comp(r, "update_actor", "actor_optimizer_step") == P7 * 4 // 8 - backward
    sgd = run(**{"actor.optim.optimizer": "SGD"})
    assert comp(sgd, "update_actor", "actor_optimizer_step") == 0


def test_fsdp1_holds_the_head_gradient_through_backward():
    """FSDP1's root unit is one FlatParameter read through split views: the LM head's bf16 weight gradient waits in
    the split's backward for the embedding's, through the whole backward: 152,064 x 3,584 x 2 B = 1,089,994,752 B
    (Qwen2.5-7B). Not under FSDP2 (the head is its own unit), not for a LoRA base, not in forward-only passes."""
    r = run()
    assert comp(r, "update_actor", "actor_head_grad") == V * H * 2 == 1_089_994_752
    assert comp(r, "old_log_prob", "actor_head_grad") == 0
    assert comp(run(**{"actor.strategy": "fsdp2"}), "update_actor", "actor_head_grad") == 0
    assert comp(run(**{"model.lora_rank": 32}), "update_actor", "actor_head_grad") == 0
    ppo = estimate(load_scenario("qwen2.5-7b-ppo-8xh100"), with_time=False)
    assert comp(ppo, "update_critic", "critic_head_grad") == 0  # a value head: hidden + 1 values, left out


def test_fsdp1_sync_clones_the_local_shard():
    r = run()
    assert comp(r, "weight_sync", "sync_shard_clone") == P7 * 4 // 8
    assert comp(run(**{"actor.strategy": "fsdp2"}), "weight_sync", "sync_shard_clone") == 0


def test_fsdp1_root_lingers_after_forward_only_passes_in_the_engine():
    """0.8+ engine, fsdp_size -1: the ref's root (bf16) stays gathered in every phase; the actor's from
    old_log_prob to its next backward. The legacy workers (0.6) and fsdp_size > 1 reshard it."""
    kl = {"actor.use_kl_loss": True}
    r = run(**kl)
    assert comp(r, "rollout", "ref_unsharded_params") == ROOT7 * 2
    assert comp(r, "ref_log_prob", "actor_unsharded_params") == ROOT7 * 2
    assert comp(run(**kl, verl_version="0.6"), "rollout", "ref_unsharded_params") == 0
    hsdp = run(**kl, **{"ref.fsdp_config.fsdp_size": 4, "actor.fsdp_config.fsdp_size": 4})
    assert comp(hsdp, "rollout", "ref_unsharded_params") == 0


def test_reshard_after_forward_false_keeps_every_unit_gathered():
    r = run(**{"actor.fsdp_config.reshard_after_forward": False})
    assert comp(r, "update_actor", "actor_unsharded_params") == P7 * 2
    assert comp(run(), "update_actor", "actor_unsharded_params") == 2 * (2 * LAYER7 + ROOT7)
    # forward-only passes never reshard SHARD_GRAD_OP units: after old_log_prob all 7.6e9 params stay gathered
    # (bf16, 2 x 7,615,616,512 = 15.2e9 B) through ref_log_prob until update_actor, in every release
    kl = {"actor.use_kl_loss": True, "actor.fsdp_config.reshard_after_forward": False}
    for version in ("0.9.1", "0.6"):
        assert comp(run(**kl, verl_version=version), "ref_log_prob", "actor_unsharded_params") == P7 * 2
    assert comp(run(**kl), "rollout", "actor_unsharded_params") == 0  # the update's backward resharded them
    assert comp(run(**kl), "rollout", "ref_unsharded_params") == ROOT7 * 2  # the ref's root still lingers
    one_gpu = {**kl, "hardware.num_gpus": 1, "rollout.tensor_model_parallel_size": 1}
    assert comp(run(**one_gpu), "ref_log_prob", "actor_unsharded_params") == 0  # NO_SHARD: nothing gathered


# ---- 5. vLLM ---------------------------------------------------------------------------------


def test_fp8_rollout_keeps_embedding_and_lm_head_in_bf16():
    r = run(**{"rollout.quantization": "fp8"})
    emb = V * H  # embedding and the untied lm_head, each
    assert comp(r, "rollout", "rollout_weights") == ((P7 - 2 * emb) * 1 + 2 * emb * 2) // 2


def test_rollout_expert_parallelism_splits_experts_over_tp_x_dp():
    """Qwen3-30B-A3B, rollout TP 2 x DP 2 with EP 4: experts 28,991,029,248 x 2 B / 4, the rest x 2 B / 2."""
    o = {"rollout.tensor_model_parallel_size": 2, "rollout.data_parallel_size": 2, "rollout.expert_parallel_size": 4}
    r = estimate(load_scenario("qwen3-30b-a3b-grpo-16xh100", overrides=o), with_time=False)
    experts, total = 28_991_029_248, 30_532_122_624
    assert comp(r, "rollout", "rollout_weights") == (total - experts) * 2 // 2 + experts * 2 // 4


def test_sampler_log_softmax_by_verl_release():
    """verl >= 0.7 sets logprobs_mode=processed_logprobs: +4 B per logit over 256 requests x V."""
    new, old = run(), run(verl_version="0.6", **{"rollout.max_num_seqs": 256})
    # 2 + 4 + 4 + 4 (noise) B per logit, + 4 for the log_softmax (calculator/memory/vllm_profile.py)
    assert f"sampler 256 reqs x vocab {V} x 18 B)" in new.rollout.formulas["rollout_activations"]
    assert f"sampler 256 reqs x vocab {V} x 14 B)" in old.rollout.formulas["rollout_activations"]
