"""Formula text says the arithmetic that made the number: for the components whose formula is a plain product,
the numbers in the text multiply (and divide) to exactly the component's bytes, on every preset and on the golden
variants (FSDP, FSDP2, Megatron, LoRA, SGLang, old releases, fp8). A formula retyped beside the arithmetic would
drift and fail here (it did: with chunked prefill off the profile forward said 8192 tokens while the bytes used
max_model_len)."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

import pytest

from calculator import estimate, load_scenario, scenario_presets
from calculator.memory.engine import (
    LOG_SOFTMAX_BYTES_PER_LOGIT,
    SAMPLER_BYTES_PER_LOGIT,
    SAMPLER_NOISE_BYTES_PER_LOGIT,
)
from calculator.resolve.resolved import resolve
from tests.golden.capture import VARIANTS

NUM = r"([\d,]+)"
_TIMES_OVER: Callable[[list[int]], int] = lambda n: n[0] * n[1] // n[2]  # noqa: E731
_TIMES: Callable[[list[int]], int] = lambda n: n[0] * n[1]  # noqa: E731

# (component-name pattern, formula regex, how its numbers make the bytes)
PRODUCTS: list[tuple[str, re.Pattern[str], Callable[[list[int]], int]]] = [
    (
        r"(actor|critic)_params",
        re.compile(rf"^{NUM} params x (\d) B \((?:fp32|bf16) master\) / (\d+) GPUs"),
        _TIMES_OVER,
    ),
    (r"(actor|critic)_grads", re.compile(rf"^{NUM} params x (\d) B / (\d+) GPUs \(sharded grads\)"), _TIMES_OVER),
    (r"(actor|critic)_optimizer", re.compile(rf"^AdamW: {NUM} params x (\d) B / (\d+) GPUs"), _TIMES_OVER),
    (r"(actor|ref)_logits", re.compile(rf"^{NUM} tokens x vocab (\d+) x 2 B \(bf16\)$"), lambda n: n[0] * n[1] * 2),
    (
        r"(actor|ref)_logits",
        re.compile(rf"^{NUM} tokens x vocab (\d+) x 2 B \(bf16\) x 2 \("),
        lambda n: n[0] * n[1] * 2 * 2,
    ),
    (
        r"(actor|ref)_logits",
        re.compile(rf"^Megatron vocab-parallel cross entropy: {NUM} tokens x vocab (\d+) / TP (\d+) x \(2 B"),
        lambda n: n[0] * -(-n[1] // n[2]) * 6,
    ),
    (
        r"(actor|ref)_entropy",
        re.compile(rf"^Megatron vocab-parallel entropy: {NUM} tokens x vocab (\d+) / TP (\d+) x (\d) B \("),
        lambda n: n[0] * -(-n[1] // n[2]) * n[3],
    ),
    (r"(rollout_weights|reward_params)", re.compile(rf"^{NUM} params x (\d) B / TP (\d+)"), _TIMES_OVER),
    (r"sync_full_tensor", re.compile(rf"^largest parameter {NUM} gathered whole \(full_tensor\) x (\d) B"), _TIMES),
    (
        r"(actor|critic|ref)_activations",
        re.compile(rf"^forward only: live set of one layer {NUM} B/token x {NUM} tokens$"),
        _TIMES,
    ),
]


@cache
def _reports() -> list:
    scenarios = [load_scenario(p) for p in sorted(scenario_presets())]
    scenarios += [load_scenario(base, overrides=o) for base, o in VARIANTS.values()]
    return [estimate(s) for s in scenarios]


def _ints(match: re.Match[str]) -> list[int]:
    return [int(g.replace(",", "")) for g in match.groups()]


def test_product_formulas_multiply_to_their_bytes() -> None:
    checked = 0
    for report in _reports():
        for phase in report.phases + report.worst_case_phases:
            for c in phase.details:
                for name, rx, rule in PRODUCTS:
                    m = rx.search(c.formula)
                    if not re.fullmatch(name, c.name) or not m:
                        continue
                    expected = rule(_ints(m))
                    assert expected == c.bytes, (
                        f"{phase.name} {c.name}: {c.formula!r} gives {expected}, bytes {c.bytes}"
                    )
                    checked += 1
    assert checked > 200  # the patterns still match the texts (a reworded formula must update this test)


@pytest.mark.parametrize("chunked", [True, False])
def test_profile_formula_names_the_tokens_it_counts(chunked: bool) -> None:
    s = load_scenario("qwen2.5-7b-grpo-8xh100", overrides={"rollout.enable_chunked_prefill": chunked})
    r = estimate(s)
    text = r.rollout.formulas["rollout_activations"]
    m = re.match(
        rf"max\(forward over {NUM} tokens.* x {NUM} B/token, hidden {NUM} x {NUM} B \+ sampler {NUM} reqs x vocab "
        rf"{NUM} x (\d+) B\)",
        text,
    )
    assert m, text
    tokens, per_token, hidden_tokens, hidden_b, reqs, vocab, sampler_b = _ints(m)
    # verl 0.9: processed_logprobs (log_softmax) and the exponential noise of random_sample
    assert sampler_b == SAMPLER_BYTES_PER_LOGIT + SAMPLER_NOISE_BYTES_PER_LOGIT + LOG_SOFTMAX_BYTES_PER_LOGIT
    peak = max(tokens * per_token, hidden_tokens * hidden_b + reqs * vocab * sampler_b)
    assert peak == round(r.rollout.activation_gib_per_gpu * 2**30)
    max_model_len = resolve(s).rollout.max_model_len  # the model's max_position_embeddings here
    assert tokens == (
        s.rollout.max_num_batched_tokens if chunked else max(s.rollout.max_num_batched_tokens, max_model_len)
    )
