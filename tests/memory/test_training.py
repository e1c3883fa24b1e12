"""Training-side state per GPU (calculator/memory/training.py), hand-checked on Qwen2.5-7B over 8 GPUs: FSDP's fp32
master shard, sharded grads and AdamW moments, the bf16 units gathered for compute (FSDP1 root unit vs FSDP2 lm_head
unit), HSDP shard groups, LoRA, forward-only engines, and Megatron's TP/PP/DP split with the distributed optimizer."""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator.memory.training import fsdp_state, megatron_state, optimizer_bytes_per_param, shard_size
from calculator.model.roles import lora_params
from calculator.report.estimate import build_context

BASE = "qwen2.5-7b-grpo-8xh100"
P7, V, H, INTER, KV = 7_615_616_512, 152_064, 3584, 18944, 512
# One Qwen2.5-7B decoder layer: q (+bias), k, v (+bias), o, gate/up/down, two RMSNorms.
LAYER = (H * H + H) + 2 * (H * KV + KV) + H * H + 3 * H * INTER + 2 * H
ROOT = 2 * V * H + H  # embedding + untied lm_head + final norm


def _state(overrides: dict | None = None, trained: bool = True):
    s = load_scenario(BASE, overrides=overrides or {})
    role = build_context(s).actor
    return s, fsdp_state(s, role, s.actor.fsdp_config, s.actor.strategy, trained)


def test_role_sizes():
    role = build_context(load_scenario(BASE)).actor
    assert (role.num_params, role.largest_layer_params, role.root_params) == (P7, LAYER, ROOT)
    assert LAYER == 233_057_792


def test_fsdp_adamw_by_hand():
    """fp32 master 4 B/param, fp32 grads 4 B/param, AdamW 2 x 4 B/param, each over the 8-GPU shard group."""
    _, st = _state()
    assert st.params.bytes == P7 * 4 // 8
    assert st.grads.bytes == P7 * 4 // 8
    assert st.optimizer.bytes == P7 * 8 // 8
    assert st.gathered.bytes == 2 * (2 * LAYER + ROOT)  # two layers in flight (prefetch) + FSDP1 root unit, bf16
    assert st.extra_transient.bytes == 0
    assert "8 GPUs" in st.params.formula


def test_fsdp2_gathers_only_the_lm_head_beside_the_layers():
    _, st = _state({"actor.strategy": "fsdp2"})
    assert st.gathered.bytes == 2 * (2 * LAYER + V * H)


def test_bf16_master_and_unsharded_no_sync_grads():
    _, st = _state(
        {"actor.fsdp_config.model_dtype": "bf16", "actor.fsdp_config.use_no_sync_for_gradient_accumulation": True}
    )
    assert st.params.bytes == P7 * 2 // 8
    assert st.grads.bytes == P7 * 2  # unsharded
    assert st.optimizer.bytes == P7 * 4 // 8  # moments in the param dtype


@pytest.mark.parametrize(("fsdp_size", "num_gpus", "n"), [(-1, 16, 16), (8, 16, 8), (16, 16, 16), (32, 16, 16)])
def test_shard_group(fsdp_size: int, num_gpus: int, n: int):
    s = load_scenario(BASE, overrides={"actor.fsdp_config.fsdp_size": fsdp_size, "hardware.num_gpus": num_gpus})
    assert shard_size(s.actor.fsdp_config, num_gpus) == n


def test_hsdp_shards_over_the_group_not_the_world():
    _, st = _state({"hardware.num_gpus": 16, "actor.fsdp_config.fsdp_size": 8})
    assert st.params.bytes == P7 * 4 // 8


@pytest.mark.parametrize(("optimizer", "per_param"), [("AdamW", 8), ("adam", 8), ("SGD", 0), ("Adafactor", 0)])
def test_optimizer_bytes_per_param(optimizer: str, per_param: float):
    assert optimizer_bytes_per_param(optimizer, 4) == per_param
    _, st = _state({"actor.optim.optimizer": optimizer})
    assert st.optimizer.bytes == P7 * per_param // 8


def test_lora_trains_only_the_adapters():
    s, st = _state({"model.lora_rank": 32})
    adapters = lora_params(build_context(s).actor.arch, 32, "all-linear")
    assert st.params.bytes == (P7 + adapters) * 4 // 8  # frozen base + adapters, fp32
    assert st.grads.bytes == adapters * 4 // 8
    assert st.optimizer.bytes == adapters * 8 // 8


def test_forward_only_engine_holds_nothing():
    _, st = _state(trained=False)
    assert (st.params.bytes, st.grads.bytes, st.optimizer.bytes) == (0, 0, 0)
    assert st.gathered.bytes == 2 * (2 * LAYER + ROOT)  # units are still streamed in for compute


def _megatron(overrides: dict, trained: bool = True):
    s = load_scenario(BASE, overrides={"actor.strategy": "megatron", **overrides})
    return megatron_state(s, build_context(s).actor, s.actor.megatron, trained)


def test_megatron_by_hand():
    """TP 2, PP 2 on 8 GPUs: DP 2. bf16 params and fp32 grads split by TP x PP = 4; the distributed optimizer's
    fp32 master + Adam (12 B/param) also over DP."""
    st = _megatron({"actor.megatron.tensor_model_parallel_size": 2, "actor.megatron.pipeline_model_parallel_size": 2})
    assert st.params.bytes == int(P7 / 4 * 2)
    assert st.grads.bytes == int(P7 / 4 * 4)
    assert st.optimizer.bytes == int(P7 / 8 * 12)
    assert st.gathered.bytes == 0


def test_megatron_without_distributed_optimizer_and_forward_only():
    st = _megatron({"actor.megatron.tensor_model_parallel_size": 2, "actor.megatron.use_distributed_optimizer": False})
    assert st.optimizer.bytes == int(P7 / 2 * 12)
    ref = _megatron({"actor.megatron.tensor_model_parallel_size": 2}, trained=False)
    assert ref.params.bytes == int(P7 / 2 * 2) and ref.grads.bytes == 0 and ref.optimizer.bytes == 0


def test_megatron_lora_trains_only_the_adapters():
    """verl >= 0.7 Megatron LoRA (model.lora.rank) on Qwen3-30B-A3B, 8 GPUs, TP 1, EP 8, rank 32: adapters
    20,447,232 dense (all on every GPU) + 1,258,291,200 on experts (/ EP 8 = 157,286,400) = 177,733,632 local.
    Grad buffer for the adapters only, fp32: x 4 = 710,934,528 B. Distributed optimizer over DP: dense / DP 8 +
    experts / (EP 8 x expert-DP 1) = 2,555,904 + 157,286,400 = 159,842,304 params x (fp32 master 4 + Adam 8) =
    1,918,107,648 B. Full fine-tuning of the same layout holds ~5x the grads and ~20x the optimizer."""
    from calculator import load_scenario
    from calculator.report.estimate import build_context

    ov = {"model.path": "qwen3-30b-a3b", "actor.strategy": "megatron", "actor.megatron.expert_model_parallel_size": 8}
    lora = build_context(load_scenario("qwen2.5-7b-grpo-8xh100", overrides={**ov, "model.lora_rank": 32}))
    full = build_context(load_scenario("qwen2.5-7b-grpo-8xh100", overrides=ov))
    assert lora.actor_state.grads.bytes == 710_934_528
    assert lora.actor_state.optimizer.bytes == 1_918_107_648
    assert lora.actor_state.grads.bytes * 5 < full.actor_state.grads.bytes
    assert lora.actor_state.optimizer.bytes * 20 < full.actor_state.optimizer.bytes
    assert lora.actor_state.params.bytes > full.actor_state.params.bytes  # frozen base + the adapters
