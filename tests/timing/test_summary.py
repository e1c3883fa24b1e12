"""calculator/timing/summary.py: the report's time section from per-phase seconds."""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator.memory.context import build_context
from calculator.resolve.resolved import resolve
from calculator.timing.summary import time_report


def test_step_is_the_sum_and_throughput_counts_every_trained_token():
    ctx = build_context(resolve(load_scenario("qwen2.5-7b-grpo-8xh100")))
    t = time_report(ctx, {"rollout": 1.0, "update_actor": 3.0}, num_gpus=8, update=None, update_gpus=8, details={},
                    terms_s={})  # fmt: skip
    tokens = ctx.r.num_sequences_trained * ctx.r.lengths.sequence
    assert t.step_s == 4.0 and t.update_mfu == 0.0 and t.term_formulas == {}
    assert t.tokens_per_s == pytest.approx(tokens / 4.0) and t.tokens_per_s_per_gpu == pytest.approx(tokens / 32.0)
    # a split step passes its own step (the phases are its critical path)
    assert time_report(ctx, {"x": 1.0}, num_gpus=8, update=None, update_gpus=8, details={}, terms_s={},
                       step_s=5.0).step_s == 5.0  # fmt: skip
