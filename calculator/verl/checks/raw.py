"""Rules on the raw verl keys of an imported launch script (the import path).

A Scenario only has the ``*_per_gpu`` micro-batch sizes; the deprecated global ones
(``ppo_micro_batch_size``, ``log_prob_micro_batch_size``) exist only in the launch script. verl 0.9.1
rejects both set at once (``workers/config/actor.py`` ``ActorConfig.__post_init__``,
``utils/config.py`` ``validate_config``, ``workers/config/critic.py`` ``CriticConfig.__post_init__``),
and its engine reads only the ``*_per_gpu`` one (``workers/engine_workers.py`` ``init_model``).
"""

from __future__ import annotations

from typing import Any

from calculator.resolve.versions import behaviour
from calculator.verl.checks.problem import SRC_ACTOR_POST, SRC_CRITIC_POST, SRC_INIT, SRC_VALIDATE, ConfigProblem, _p


def check_raw_config(given: dict[str, Any], resolver: Any, engine: str, version: str = "0.9") -> list[ConfigProblem]:
    """The deprecated global micro-batch sizes (a Scenario only has the ``*_per_gpu`` ones); ``resolver.value``
    resolves a verl key. Engine releases (0.8.0+) reject a global key alone; legacy ones convert it (verl.legacy)."""
    engine_release = behaviour(version).worker_impl == "engine"

    def rv(key: str, default: Any = None) -> Any:
        try:
            return resolver.value(key)
        except Exception:
            return default

    a = "actor_rollout_ref.actor"
    actor_dyn = bool(rv(f"{a}.use_dynamic_bsz", False))
    use_ref = bool(rv("algorithm.use_kl_in_reward", False)) or bool(rv(f"{a}.use_kl_loss", False))
    enable = rv("critic.enable")
    use_critic = bool(enable) if enable is not None else rv("algorithm.adv_estimator", "gae") == "gae"
    critic_dyn = bool(rv("critic.use_dynamic_bsz", actor_dyn))
    out: list[ConfigProblem] = []
    cases = [
        ("actor", f"{a}.ppo_micro_batch_size", f"{a}.ppo_micro_batch_size_per_gpu", not actor_dyn, SRC_ACTOR_POST),
        (
            "actor_rollout_ref.rollout",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
            not actor_dyn,
            SRC_VALIDATE,
        ),
        (
            "actor_rollout_ref.ref",
            "actor_rollout_ref.ref.log_prob_micro_batch_size",
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
            use_ref and not actor_dyn,
            SRC_VALIDATE,
        ),
        (
            "critic",
            "critic.ppo_micro_batch_size",
            "critic.ppo_micro_batch_size_per_gpu",
            use_critic and not critic_dyn,
            SRC_CRITIC_POST,
        ),
    ]
    for name, old, new, relevant, src in cases:
        if not relevant:
            continue
        old_v, new_v = rv(old), rv(new)
        short_old, short_new = (old.split(".")[-1], new.split(".")[-1])
        if name == "actor":
            q_old, q_new = f"actor.{short_old}", f"actor.{short_new}"
        elif name == "critic":
            q_old, q_new, short_old = "critic.micro_batch_size", "critic.micro_batch_size_per_gpu", "micro_batch_size"
        else:
            q_old, q_new = old, new
        if old_v is not None and new_v is not None:
            note = (
                " (critic.ppo_micro_batch_size_per_gpu defaults to ${oc.select:.ppo_micro_batch_size,null}, so setting "
                "critic.ppo_micro_batch_size alone sets both)"
                if name == "critic" and new not in given
                else ""
            )
            out.append(
                _p(
                    "micro_batch_given_twice",
                    "error",
                    f"[{name}] You have set both '{q_old}' AND '{q_new}'. Please remove '{q_old}' because only "
                    f"'*_{short_old}_per_gpu' is supported (the former is deprecated).{note}",
                    src,
                )
            )
        elif old_v is not None and engine_release and name in ("actor", "actor_rollout_ref.rollout"):
            out.append(
                _p(
                    "micro_batch_deprecated",
                    "error",
                    f"{old} (the deprecated global micro-batch) passes validate_config, but verl {version}'s engine reads "
                    f"only {new}: init_model fails on `assert ... {short_new} is not None`. Set {new} instead.",
                    SRC_INIT,
                )
            )
    return out + _layered_summon_rule(rv, engine)


SRC_LAYERED = "verl/utils/fsdp_utils.py:collect_lora_params"


def _positive(value: Any) -> bool:
    """A positive number, whatever else a script may have written there (a list, a string)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _layered_summon_rule(rv: Any, engine: str) -> list[ConfigProblem]:
    """LoRA with ``rollout.layered_summon`` on FSDP needs vLLM to start from the real base weights: the first
    sync asks for the base model with ``base_sync_done = "dummy" not in rollout.load_format`` False, and
    ``collect_lora_params`` raises (0.9.1 ``utils/fsdp_utils.py`` 725-730, ``workers/engine_workers.py`` 673,
    793-799; the same test since 0.5.0 ``sharding_manager/fsdp_vllm.py`` 122-142). ``model.lora.merge`` sends
    merged weights instead and never asks for the base alone."""
    m = "actor_rollout_ref.model"
    lora = any(_positive(rv(k, 0)) for k in (f"{m}.lora_rank", f"{m}.lora.rank"))
    if engine == "megatron" or not lora or not rv("actor_rollout_ref.rollout.layered_summon", False):
        return []
    fmt = str(rv("actor_rollout_ref.rollout.load_format", None) or "dummy")
    if rv(f"{m}.lora.merge", False) or "dummy" not in fmt:
        return []
    return [
        _p(
            "layered_summon_dummy_load",
            "error",
            "ValueError: To use layered_summon, you must make sure base-model is preloaded in vllm, e.g. let "
            f"rollout.load_format=safetensors (rollout.load_format is {fmt!r}: the first weight sync fails). Set "
            "actor_rollout_ref.rollout.load_format=safetensors.",
            SRC_LAYERED,
        )
    ]
