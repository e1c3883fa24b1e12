"""Which parameters each Megatron pipeline rank holds, and which rank an estimate describes.

**What a rank builds** (megatron-core 0.16.1):

- **Decoder layers.** Its own layers only. ``transformer/transformer_block.py`` ``get_num_layers_to_build`` gives
  the count (``calculator.model.megatron_activations.stage_layers``). ``transformer/transformer_layer.py``
  ``get_transformer_layer_offset`` gives where they start. With virtual pipelining (an even split), chunk ``j``
  of rank ``r`` holds layers ``j·L/v + r·L/(PP·v)`` onwards.
- **Embedding and output layer.** The word embedding is on the first stage; the final norm and the output layer
  (the LM head, or a critic's value head) are on the last (``models/gpt/gpt_model.py`` ``pre_process`` /
  ``post_process``).
- **Tied embeddings.** With PP > 1 the last stage keeps its own copy of the embedding as its output weight
  (``models/common/language_module/language_module.py`` ``setup_embeddings_and_output_layer``: "we need to
  maintain duplicated embedding weights in post processing stage").

**Why it matters.** Dense and MoE layers differ in size, and the ends carry the vocabulary. So the ranks do not
hold equal shares of the model. verl's DeepSeek-V3 script (61 layers on PP 12, six on the last stage) puts 1.25x
the mean on its last rank and 0.46x on its first (three of its five layers are dense). Qwen2.5-32B on PP 4 puts
1.05x on its first and last ranks.

**The rank described.** An estimate describes one GPU: the pipeline rank whose update holds the most. That is
its params, grads and optimizer shards (``calculator.memory.training.megatron_state``) plus its 1F1B activations
(``calculator.memory.transients``) and, on the last rank only, the loss's logits. Every phase of the report is of
that rank, and so is the engine's budget beside it. The ref and the critic are taken on the same GPU, the same
rank of their own layout (their mean share when their PP differs). ``calculator.memory.context.described_rank``
makes the choice.

**Against a measurement.** verl's DeepSeek-V3 run on 96 H20 (``docs/perf/dpsk.md``: 66 GB of GPU memory, 1500 GB of
host RAM per node; ``tests/reference/test_memory_fidelity_reference.py``) is described by its last rank. The
estimate moves from 58.5 to 59.0 GiB, and its host RAM from 1,106 to 1,367 GiB per node (1,468 GB).

**Left out.**
- The rank is chosen by its update. Where another phase is a run's peak (a weight sync, the rollout), the rank
  holding the most parameters can be higher there, by its extra parameters' bytes (Qwen3-235B's middle ranks hold
  1.07x the first rank's).
- An uneven split with virtual pipelining is taken as contiguous layers per rank.
- The time model paces 1F1B's compute by the fullest stage's layer count (``calculator.timing.backend``), not by
  the sizes of those layers.
- Host RAM per node counts the described rank's CPU optimizer on every GPU of the node.

**The rank that paces the step's parameter work.** A rank's optimizer step (on the GPU, or on the node's CPUs with
Megatron's CPU optimizer), its data-parallel gradient reduce-scatter and parameter all-gather, and its offload copies
scale with its own parameters. Every rank does them at the same point of the step, and the step goes on (the weight
sync) only when the last one is done, so the rank with the most parameters per GPU paces them (``pacing_rank``; the
time model, ``calculator.timing.backend.TrainingEngine``). That is DeepSeek-V3's last rank (1.25x the mean) and one
of Qwen3-235B's middle ranks, not its first.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from calculator.inputs.scenario import MegatronSection
from calculator.model.architecture import Architecture
from calculator.model.megatron_activations import stage_layers
from calculator.model.roles import RoleModel


@dataclass(frozen=True, slots=True)
class RankParams:
    """The parameters pipeline rank ``rank`` of ``num_ranks`` builds, before TP / EP sharding."""

    rank: int
    num_ranks: int
    num_layers: int  # decoder layers it builds (all its virtual chunks)
    dense: int  # parameters outside the routed experts (sharded over TP): its layers', plus embedding / output layer
    expert: int  # routed-expert parameters (sharded over EP x ETP)

    @property
    def text(self) -> str:
        ends = (" + embedding" if self.rank == 0 else "") + (
            " + output layer" if self.rank == self.num_ranks - 1 else ""
        )
        return f"PP rank {self.rank} of {self.num_ranks} ({self.num_layers} layers{ends})"


def rank_layers(num_layers: int, m: MegatronSection) -> tuple[tuple[int, ...], ...] | None:
    """Decoder-layer indices each pipeline rank builds; None for a split Megatron-core refuses (a verl check
    error: estimated with the even share)."""
    counts = stage_layers(num_layers, m)
    if isinstance(counts, str):
        return None
    pp, v = len(counts), m.virtual_pipeline_model_parallel_size or 1
    if v > 1 and len(set(counts)) == 1 and num_layers % (pp * v) == 0:
        size = num_layers // (pp * v)
        return tuple(
            tuple(i for j in range(v) for i in range((j * pp + r) * size, (j * pp + r + 1) * size)) for r in range(pp)
        )
    out, start = [], 0
    for n in counts:
        out.append(tuple(range(start, start + n)))
        start += n
    return tuple(out)


@functools.lru_cache(maxsize=256)
def _layer_sums(arch: Architecture, layers: tuple[int, ...]) -> tuple[int, int]:
    """(all params, routed-expert params) of decoder layers ``layers`` (memoised: frozen, hashable arguments)."""
    routed = arch.num_experts * arch.expert_params()
    moe = arch.moe_layers
    total = sum(arch.layer_params(i) for i in layers)
    return total, sum(routed for i in layers if moe and moe[i])


def rank_params(role: RoleModel, m: MegatronSection) -> tuple[RankParams, ...] | None:
    """:class:`RankParams` of every pipeline rank of ``role`` under ``m`` (module docstring); None for a refused
    split. Their sum is ``role.num_params``, plus the output layer's copy of a tied embedding when PP > 1."""
    a = role.arch
    layers = rank_layers(a.num_layers, m)
    if layers is None:
        return None
    pp = len(layers)
    embedding = a.embedding_params()
    tail = role.root_params - embedding  # final norm + output layer (LM head, or a value head)
    if pp > 1 and role.lm_head_vocab and a.tie_word_embeddings:
        tail += embedding  # the last stage's own copy of the tied weight
    out = []
    for r, idx in enumerate(layers):
        total, expert = _layer_sums(a, idx)
        dense = total - expert + (embedding if r == 0 else 0) + (tail if r == pp - 1 else 0)
        out.append(RankParams(r, pp, len(idx), dense, expert))
    return tuple(out)


def pacing_rank(role: RoleModel, m: MegatronSection) -> RankParams | None:
    """The pipeline rank with the most parameters per GPU (dense / TP + routed experts / (EP x ETP)), the first of
    equals (module docstring); None without pipeline parallelism or for a split Megatron-core refuses."""
    if m.pipeline_model_parallel_size <= 1:
        return None
    ranks = rank_params(role, m)
    if ranks is None:
        return None
    tp, ep = m.tensor_model_parallel_size, m.expert_model_parallel_size
    etp = m.expert_tensor_parallel_size or tp
    # Compared exactly: dense x EP x ETP + expert x TP is the per-GPU count times TP x EP x ETP.
    return max(ranks, key=lambda rk: rk.dense * ep * etp + rk.expert * tp)


__all__ = ["RankParams", "pacing_rank", "rank_layers", "rank_params"]
