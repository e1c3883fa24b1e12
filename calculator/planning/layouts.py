"""Megatron model-parallel layouts (TP, PP, EP): which ones Megatron-core and verl accept (one rule for the
advisor's ``megatron_parallel`` lever and the planner, :func:`layout_problem`) and the bounded list the planner
searches (:func:`candidate_layouts`).

**Rules** (megatron-core 0.13.0 and 0.16.1, the releases verl 0.5-0.9.1 run with; a layout breaking one raises at
start-up):

- attention heads % TP == 0 (``megatron/core/transformer/transformer_config.py`` ``__post_init__``, 0.16.1:924);
- KV heads (``num_query_groups``) % TP == 0 (0.13.0 transformer_config.py:661; 0.16.1:940 also accepts TP a
  multiple of the groups, which 0.13 rejects: not proposed);
- the layers split over PP as Megatron-core splits them (``transformer_block.py`` ``get_num_layers_to_build``,
  0.16.1:158): evenly, or with the scenario's ``num_layers_in_first/last_pipeline_stage`` or
  ``account_for_embedding/loss_in_pipeline_split`` (``calculator.model.megatron_activations.pipeline_stage_layers``); with
  the scenario's virtual pipeline size V, PP > 1 (``parallel_state.py`` ``initialize_model_parallel``, 0.16.1:745
  "pipeline-model-parallel size should be greater than 1 with interleaved schedule") and (layers / PP) % V == 0
  (transformer_config.py, "must be divisible by virtual pipeline parallel degree");
- EP: a MoE model's routed experts % EP == 0 (``transformer/moe/moe_layer.py``, 0.16.1:101); a dense model
  only EP 1 (transformer_config.py:1048 "num_moe_experts must be non None to use expert-parallel");
- the world: GPUs % (TP x PP x CP) == 0 and GPUs % (ETP x EP x PP) == 0, ETP null = TP
  (``parallel_state.py`` ``initialize_model_parallel``, 0.16.1:740 and :790; verl ``utils/config.py``
  ``validate_config`` checks the first for the actor);
- TP <= GPUs per node: the planner's bound, not Megatron-core's: TP all-reduces every layer's activations, and
  verl's Megatron examples keep TP inside a node (cross-node TP is not modelled by the time model).

**Bounds of the planner's list**: TP in 1, 2, 4, 8; PP in 1, 2, 4, 8, 16; EP a power of two from 1 up to the
expert count (MoE only; a dense model has EP 1); the scenario's CP, ETP and virtual pipeline size are
kept. Each must pass the rules above and fit in ``max_gpus`` (its smallest world, :meth:`Layout.min_world`).
The scenario's own layout comes first, then the others from least to most model parallelism
(:func:`parallelism_key`: TP x PP x EP, then less PP, then less TP: pipeline bubbles and per-layer all-reduces
cost more than the routed tokens' all-to-all). A model with 128 experts and 4 KV heads gets at most
3 x 5 x 8 = 120 layouts. A Megatron critic of the actor's model whose layout is the actor's (as in verl's
examples, which set both alike) moves with it (:func:`with_layout`); a critic with a layout or model of its own keeps
its ``critic.megatron``.

The reference policy follows the actor's layout in every release: verl >= 0.7 interpolates ``ref.megatron.*``
from the actor's (``trainer/config/ref/megatron_ref.yaml``: ``tensor_model_parallel_size:
${oc.select:actor_rollout_ref.actor.megatron.tensor_model_parallel_size,1}``), and 0.5 / 0.6 initialise Megatron's
process groups once per worker from ``config.actor.megatron`` (0.6.0 ``workers/megatron_workers.py:203-212``), so the
actor's keys are the only ones a planned layout sets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from calculator.model.megatron_activations import pipeline_stage_layers, stage_layers
from calculator.names import Strategy
from calculator.resolve.roles import critic_strategy, need_critic

if TYPE_CHECKING:
    from calculator.inputs.backends import MegatronSection
    from calculator.inputs.scenario import Scenario
    from calculator.model.architecture import Architecture

LAYOUT_TP_CHOICES = (1, 2, 4, 8)
LAYOUT_PP_CHOICES = (1, 2, 4, 8, 16)
# The verl keys of a layout (the ref follows the actor's: module docstring).
LAYOUT_FIELDS = (
    "tensor_model_parallel_size",
    "pipeline_model_parallel_size",
    "expert_model_parallel_size",
)


@dataclass(frozen=True)
class Layout:
    """One Megatron model-parallel layout of the actor; ``cp`` and ``etp`` (None = TP) are the scenario's."""

    tp: int
    pp: int
    ep: int
    cp: int = 1
    etp: int | None = None

    @property
    def expert_tp(self) -> int:
        return self.etp or self.tp

    @property
    def min_world(self) -> int:
        """The fewest GPUs Megatron-core accepts: divisible by TP x PP x CP and by ETP x EP x PP."""
        return math.lcm(self.tp * self.pp * self.cp, self.expert_tp * self.ep * self.pp)

    @property
    def label(self) -> str:
        return f"TP {self.tp} PP {self.pp} EP {self.ep}"


def layout_of(s: Scenario) -> Layout:
    """The actor's layout in ``s``."""
    return section_layout(s.actor.megatron)


def section_layout(m: MegatronSection) -> Layout:
    """The layout of one role's ``megatron`` section."""
    return Layout(
        m.tensor_model_parallel_size,
        m.pipeline_model_parallel_size,
        m.expert_model_parallel_size,
        m.context_parallel_size,
        m.expert_tensor_parallel_size,
    )


def layout_problem(
    lay: Layout,
    arch: Architecture,
    gpus_per_node: int,
    meg: MegatronSection | None = None,
    num_gpus: int | None = None,
) -> str | None:
    """Why Megatron-core / verl reject ``lay`` for ``arch`` (on ``num_gpus`` GPUs when given), or None (module
    docstring: the rules and their sources). ``meg``: the section whose virtual pipeline size and uneven pipeline
    split (``calculator.model.megatron_activations.pipeline_stage_layers``) the layout keeps."""
    vpp = meg.virtual_pipeline_model_parallel_size if meg is not None else None
    if lay.tp > gpus_per_node:
        return f"TP {lay.tp} > {gpus_per_node} GPUs per node"
    if arch.num_attention_heads % lay.tp or arch.num_kv_heads % lay.tp:
        return f"TP {lay.tp} does not divide the {arch.num_attention_heads} attention / {arch.num_kv_heads} KV heads"
    split = stage_layers(arch.num_layers, meg, pp=lay.pp) if meg else pipeline_stage_layers(arch.num_layers, lay.pp)
    if isinstance(split, str):
        return f"PP {lay.pp} does not split the {arch.num_layers} layers ({split})"
    if vpp is not None and (lay.pp == 1 or (arch.num_layers // lay.pp) % vpp):
        return f"virtual pipeline {vpp} needs PP > 1 and layers per stage divisible by it (PP {lay.pp})"
    if lay.ep > 1 and (not arch.is_moe or arch.num_experts % lay.ep):
        return f"EP {lay.ep} does not divide the model's {arch.num_experts} routed experts"
    if num_gpus is not None and num_gpus % lay.min_world:
        return (
            f"{num_gpus} GPUs are not divisible by TP x PP x CP ({lay.tp * lay.pp * lay.cp}) and "
            f"ETP x EP x PP ({lay.expert_tp * lay.ep * lay.pp})"
        )
    return None


def parallelism_key(lay: Layout) -> tuple[int, int, int, int]:
    """Less model parallelism first: TP x PP x EP, then PP, then TP (module docstring)."""
    return (lay.tp * lay.pp * lay.ep, lay.pp, lay.tp, lay.ep)


def _ep_choices(arch: Architecture) -> list[int]:
    if not arch.is_moe:
        return [1]
    out, x = [], 1
    while x <= arch.num_experts:
        out.append(x)
        x *= 2
    return out


def candidate_layouts(s: Scenario, arch: Architecture, max_gpus: int) -> list[Layout]:
    """The layouts the planner searches for ``s`` (module docstring): the scenario's first, then every other
    valid one within the bounds whose smallest world fits in ``max_gpus``, least model parallelism first."""
    own = layout_of(s)
    m: MegatronSection = s.actor.megatron
    per_node = s.hardware.gpus_per_node
    others = {
        Layout(tp, pp, ep, own.cp, own.etp)
        for tp in LAYOUT_TP_CHOICES
        for pp in LAYOUT_PP_CHOICES
        for ep in _ep_choices(arch)
    }
    valid = [
        lay for lay in others - {own} if lay.min_world <= max_gpus and layout_problem(lay, arch, per_node, m) is None
    ]
    return [own, *sorted(valid, key=parallelism_key)]


def _moved(m: MegatronSection, lay: Layout) -> MegatronSection:
    return m.model_copy(update=dict(zip(LAYOUT_FIELDS, (lay.tp, lay.pp, lay.ep), strict=True)))


def critic_follows_actor(s: Scenario) -> bool:
    """A Megatron critic of the actor's model with the actor's layout: a planned layout moves it too (module
    docstring)."""
    return (
        need_critic(s)
        and critic_strategy(s) is Strategy.MEGATRON
        and s.critic.model_path in (None, s.model.path)
        and section_layout(s.critic.megatron) == layout_of(s)
    )


def with_layout(s: Scenario, lay: Layout) -> Scenario:
    """``s`` with the actor's TP / PP / EP set to ``lay``'s (the ref follows the actor's; CP and ETP unchanged), and
    the critic's too when it follows the actor (:func:`critic_follows_actor`)."""
    update = {"actor": s.actor.model_copy(update={"megatron": _moved(s.actor.megatron, lay)})}
    if critic_follows_actor(s):
        update["critic"] = s.critic.model_copy(update={"megatron": _moved(s.critic.megatron, lay)})
    return s.model_copy(update=update)


__all__ = [
    "LAYOUT_FIELDS",
    "LAYOUT_PP_CHOICES",
    "LAYOUT_TP_CHOICES",
    "Layout",
    "candidate_layouts",
    "critic_follows_actor",
    "layout_of",
    "layout_problem",
    "parallelism_key",
    "section_layout",
    "with_layout",
]
