from calculator.memory.context import build_context
from calculator.memory.pools import CHECKPOINT_ENGINE_BUFFER_MIB, rollout_pool, trainer_pool
from calculator.names import Comp, Phase, Process, Role
from calculator.resolve.placement import resolve_placement
from calculator.resolve.resolved import resolve
from calculator.units import GIB_BYTES, MIB_BYTES
from tests.support.placement import split_scenario

# Qwen2.5-7B's largest tensor: the embedding (untied), 152,064 x 3,584 = 544,997,376 params
EMBED = 152_064 * 3_584


def _plan(mode="one_step_off", **kw):
    plan = resolve_placement(split_scenario(mode, **kw))
    assert plan is not None
    return plan


def test_rollout_pool_holds_the_engine_only():
    pool = rollout_pool(_plan())
    assert [p.name for p in pool.expected] == [Phase.ROLLOUT, Phase.WEIGHT_SYNC]
    for pm in pool.expected:
        assert not [c for c in pm.components if c.role in (Role.ACTOR, Role.CRITIC, Role.REF)]
        assert pm.component(Comp.KV_CACHE) is not None  # awake in every phase
    ctx_bytes = pool.expected[0].component(Comp.CUDA_CONTEXT).bytes
    assert ctx_bytes == int(1 * 0.5 * GIB_BYTES)  # one process (the engine) x 0.5 GiB
    assert pool.starts


def test_one_step_off_receive_buffer_is_the_largest_tensor():
    sync = rollout_pool(_plan()).expected[1]
    # per-tensor broadcast into torch.empty(shape, fp32 master dtype): 544,997,376 x 4 B = 2,179,989,504 B
    assert sync.component(Comp.SYNC_FULL_TENSOR).bytes == EMBED * 4 == 2_179_989_504


def test_vllm_budget_does_not_depend_on_the_trainer():
    # vLLM's KV = util x total - weights - activations - non-torch - graphs: the same with or without a trainer
    plan = _plan()
    colocated = build_context(resolve(plan.rollout.scenario))
    assert rollout_pool(plan).ctx.rollout.kv_cache_bytes == colocated.rollout.kv_cache_bytes


def test_trainer_pool_has_no_engine():
    pool = trainer_pool(_plan())
    names = [p.name for p in pool.expected]
    assert Phase.ROLLOUT not in names and names[-1] == Phase.WEIGHT_SYNC and Phase.OLD_LOG_PROB in names
    for pm in pool.expected:
        assert not [c for c in pm.components if c.process == Process.ROLLOUT]
        # trainer + nothing else: (processes - 1 rollout) x 0.5 GiB
        assert pm.component(Comp.CUDA_CONTEXT).bytes == int(1 * 0.5 * GIB_BYTES)


def test_fully_async_checkpoint_engine_buckets_and_no_old_log_prob():
    pool = trainer_pool(_plan("fully_async"))
    assert Phase.OLD_LOG_PROB not in [p.name for p in pool.expected]
    sync = pool.expected[-1]
    # trainer rank: 2 x max(4096 MiB, 2.18 GB embedding) = 8 GiB
    assert sync.component(Comp.SYNC_BUCKET).bytes == 2 * CHECKPOINT_ENGINE_BUFFER_MIB * MIB_BYTES == 8 * GIB_BYTES
    roll_sync = rollout_pool(_plan("fully_async")).expected[1]
    assert roll_sync.component(Comp.SYNC_BUCKET).bytes == 4 * GIB_BYTES


def test_components_add_up():
    for pool in (rollout_pool(_plan()), trainer_pool(_plan())):
        for pm in pool.expected + pool.worst:
            assert pm.total_bytes == sum(c.bytes for c in pm.components) > 0
