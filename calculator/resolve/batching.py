"""Batch arithmetic: how many sequences and tokens each GPU handles in each pass of a step.

verl facts used (0.9.1):
- A step generates ``gen_batch_size`` (default ``train_batch_size``) prompts x ``rollout.n`` responses;
  ReMax also decodes one greedy baseline per prompt (``verl/trainer/ppo`` remax branch).
- Training data-parallel size = GPUs / Ulysses SP size (FSDP) or GPUs / (TP x PP x CP) (Megatron); ``ppo_mini_batch_size`` counts prompts, so a
  mini-batch holds ``ppo_mini_batch_size x n`` sequences split over the DP ranks.
- Fixed micro-batches: ``*_micro_batch_size_per_gpu`` sequences; with ``use_remove_padding`` the
  tokens are the real (packed) ones, otherwise every sequence is padded to prompt + response max.
- Dynamic batch (``use_dynamic_bsz``): ``verl/utils/seqlen_balancing.py`` ``rearrange_micro_batches``
  takes ``min(num_seqs, ceil(tokens_on_rank / (budget x sp)))`` micro-batches and balances sequences
  across them, so each holds about ``tokens_on_rank / count`` tokens (never less than one whole
  sequence). The worst case is a micro-batch filled to the budget (or one longest sequence).
- Ulysses SP splits each micro-batch's tokens over ``sp`` GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.inputs.scenario import Scenario
from calculator.units import ceil_div


@dataclass(frozen=True)
class Lengths:
    """Prompt and response tokens per sequence for one case (expected or worst)."""

    prompt: int
    response: int

    @property
    def sequence(self) -> int:
        return self.prompt + self.response


def lengths(s: Scenario, worst: bool) -> Lengths:
    """Expected lengths (the means; default the max) or worst case (every sequence at max)."""
    d = s.data
    if worst:
        return Lengths(d.max_prompt_length, d.max_response_length)
    return Lengths(d.mean_prompt_length or d.max_prompt_length, d.mean_response_length or d.max_response_length)


def num_prompts_generated(s: Scenario) -> int:
    return s.data.gen_batch_size or s.data.train_batch_size


def num_sequences_generated(s: Scenario) -> int:
    """Sequences the rollout decodes per step (ReMax adds a greedy baseline per prompt)."""
    prompts = num_prompts_generated(s)
    extra = prompts if s.algorithm.adv_estimator == "remax" else 0
    return prompts * s.rollout.n + extra


def num_sequences_trained(s: Scenario) -> int:
    """Sequences that enter log-prob and update passes: train_batch_size x n."""
    return s.data.train_batch_size * s.rollout.n


@dataclass(frozen=True)
class PassBatch:
    """Tokens one GPU holds in one micro-batch of a pass, and how many micro-batches it runs."""

    tokens_per_gpu: int  # tokens in one micro-batch on one GPU (after SP split)
    num_micro_batches: int  # micro-batches per GPU per pass over its share of the batch
    sequences_per_gpu: int  # sequences this GPU's DP rank processes in the pass
    description: str  # how the micro-batch was sized, for the formula text


def pass_batch(
    *,
    num_sequences: int,
    micro_batch_size_per_gpu: int,
    use_dynamic_bsz: bool,
    max_token_len_per_gpu: int,
    sp: int,
    dp: int,
    seq_len: int,
    max_seq_len: int,
    worst: bool,
) -> PassBatch:
    """Size of one micro-batch on one GPU for a pass over ``num_sequences`` sequences spread over ``dp``
    data-parallel ranks; ``seq_len`` is the tokens one sequence occupies (real or padded), ``max_seq_len``
    the longest possible sequence (prompt + response max)."""
    seqs_per_rank = ceil_div(num_sequences, dp)
    if use_dynamic_bsz:
        budget = max_token_len_per_gpu * sp
        tokens_on_rank = seqs_per_rank * seq_len
        count = max(1, ceil_div(tokens_on_rank, budget))
        count = min(count, seqs_per_rank) if seqs_per_rank else 1
        per_micro = max(seq_len, ceil_div(tokens_on_rank, count)) if seqs_per_rank else 0
        if worst:
            # Upper bound: verl raises the micro-batch count until every balanced partition fits the budget,
            # so a micro-batch can hold up to the budget, and never less than one whole longest sequence.
            per_micro = max(max_seq_len, min(budget, seqs_per_rank * max_seq_len))
        desc = (
            f"dynamic batch: {seqs_per_rank} seqs x {seq_len} tok on a DP rank = {tokens_on_rank} tok, "
            f"split into ceil({tokens_on_rank} / ({max_token_len_per_gpu} x sp {sp})) = {count} micro-batches"
        )
        return PassBatch(ceil_div(per_micro, sp), count, seqs_per_rank, desc)
    micro = min(micro_batch_size_per_gpu, max(1, seqs_per_rank))
    count = max(1, ceil_div(seqs_per_rank, micro))
    desc = f"{micro} seqs x {seq_len} tok per micro-batch" + (f" / sp {sp}" if sp > 1 else "")
    return PassBatch(ceil_div(micro * seq_len, sp), count, seqs_per_rank, desc)


# verl 0.9.1's V1 trainer builds the critic engine with EngineConfig.use_dynamic_bsz = True and only
# critic.ppo_infer_max_token_len_per_gpu (dataclass default 32768) as its budget; the critic's micro-batch and
# ppo_max_token_len settings are validated but unused (verl/trainer/ppo/v1/trainer_base.py _setup).
CRITIC_V1_TOKEN_BUDGET = 32768


def rollout_replicas(s: Scenario) -> int:
    """vLLM/SGLang replicas: GPUs / (TP x DP) (verl agent_loop / rollout replica layout)."""
    return max(1, s.hardware.num_gpus // (s.rollout.tensor_model_parallel_size * s.rollout.data_parallel_size))


def sequences_per_replica(s: Scenario) -> int:
    return ceil_div(num_sequences_generated(s), rollout_replicas(s))
