"""What an imported launch script means for the release it was written for (``Scenario.verl_version``).

* The deprecated global micro-batch keys (``actor.ppo_micro_batch_size``, ``rollout.log_prob_micro_batch_size``,
  ``ref.log_prob_micro_batch_size``, ``critic.ppo_micro_batch_size``): the legacy workers (verl <= 0.7.1,
  ``VersionBehaviour.worker_impl == "legacy"``) normalise them into the per-GPU ones by dividing by the
  data-parallel ranks, ``world_size // ulysses_sequence_parallel_size`` (0.7.1 ``workers/fsdp_workers.py``
  :256-260 actor, :273-277 rollout, :280-281 ref, :1340-1347 critic). The mini-batch is multiplied by
  ``rollout.n`` first (:249, :1338); the micro-batch is **not** (it already counts sequences). The engine
  workers (0.8.0+) read only the ``*_per_gpu`` keys: ``init_model`` asserts them (0.8.0
  ``workers/engine_workers.py``:577-578, 0.9.1 :636-637), so the global key is rejected there
  (``calculator.verl.checks.raw``).
* ``rollout.max_num_seqs`` left unset takes the release's default (1024 up to 0.8.0, 256 from 0.9.0).
* Means that were inherited: a script that sets ``data.max_*_length`` but no mean resets the base
  scenario's mean to null (= the max, DESIGN.md 6.3), and says so.

Under Megatron the legacy worker divides by Megatron's data-parallel size, world // (TP x PP x CP)
(0.7.1 ``workers/megatron_workers.py``:356-368).
"""

from __future__ import annotations

from typing import Any

from calculator.resolve.versions import behaviour
from calculator.verl.keys import _A, _F, _R

# (global key, per-GPU native field, the role's Ulysses SP key) in the legacy workers.
LEGACY_MICRO: tuple[tuple[str, str, str], ...] = (
    (f"{_A}.ppo_micro_batch_size", "actor.ppo_micro_batch_size_per_gpu", f"{_A}.ulysses_sequence_parallel_size"),
    (
        f"{_R}.log_prob_micro_batch_size",
        "rollout.log_prob_micro_batch_size_per_gpu",
        f"{_A}.ulysses_sequence_parallel_size",
    ),
    (
        f"{_F}.log_prob_micro_batch_size",
        "ref.log_prob_micro_batch_size_per_gpu",
        f"{_A}.ulysses_sequence_parallel_size",
    ),
    ("critic.ppo_micro_batch_size", "critic.ppo_micro_batch_size_per_gpu", "critic.ulysses_sequence_parallel_size"),
)
_SRC = "verl <= 0.7.1 workers/fsdp_workers.py (0.7.1 :256-281, :1340-1347)"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _data_parallel(natives: dict[str, Any], role: str, gpus: int, sp: int) -> tuple[int, str]:
    """Data-parallel ranks the legacy worker divides by: FSDP world // Ulysses SP; Megatron
    mpu.get_data_parallel_world_size() = world // (TP x PP x CP) (0.7.1 megatron_workers.py:358-368, :1056)."""
    section = "critic" if role == "critic" else "actor"
    strategy = natives.get(f"{section}.strategy") or natives.get("actor.strategy")
    if strategy != "megatron":
        return max(1, gpus // sp), f"world size {gpus} // Ulysses SP {sp}"
    sizes = [
        _int(natives.get(f"{section}.megatron.{k}_parallel_size")) or 1
        for k in ("tensor_model", "pipeline_model", "context")
    ]
    model_parallel = sizes[0] * sizes[1] * sizes[2]
    return max(1, gpus // model_parallel), f"Megatron DP = world size {gpus} // (TP x PP x CP {model_parallel})"


def convert_global_micro(
    given: dict[str, Any], value_of: Any, natives: dict[str, Any], version: str, num_gpus: int
) -> list[str]:
    """Legacy releases: set each per-GPU micro-batch from its deprecated global key (``value_of(key)`` resolves
    a verl key, None when unresolved). Returns the warnings naming the converted values."""
    if behaviour(version).worker_impl != "legacy":
        return []
    gpus = _int(natives.get("hardware.num_gpus")) or num_gpus
    notes: list[str] = []
    for old, native, sp_key in LEGACY_MICRO:
        glob = _int(value_of(old)) if old in given else None
        per_gpu_key = old + "_per_gpu"
        if glob is None or (per_gpu_key in given and value_of(per_gpu_key) is not None):
            continue  # not given, or both given (verl's "set both" error, calculator.verl.checks.raw)
        dp, how = _data_parallel(natives, native.split(".")[0], gpus, _int(value_of(sp_key)) or 1)
        per_gpu = glob // dp
        natives[native] = per_gpu
        warn = "" if per_gpu > 0 else " (0: verl's later asserts fail; raise the global value)"
        notes.append(
            f"{old}={glob} (deprecated global micro-batch) converted the way verl {version}'s legacy worker does: "
            f"{glob} // ({how}) = {per_gpu} sequences per GPU -> {native}{warn}; "
            f"unlike the mini-batch, it is not multiplied by rollout.n [{_SRC}]"
        )
    return notes


def release_defaults(given: dict[str, Any], natives: dict[str, Any], version: str) -> list[str]:
    """Settings the script leaves to its release whose default differs from verl 0.9.1's (the Scenario's)."""
    row = behaviour(version)
    if f"{_R}.max_num_seqs" in given or "rollout.max_num_seqs" in natives or row.max_num_seqs_default == 256:
        return []
    natives["rollout.max_num_seqs"] = row.max_num_seqs_default
    return [
        f"rollout.max_num_seqs not set: verl {version}'s default {row.max_num_seqs_default} is used "
        "(verl 0.9.1's is 256; the release's _generated_ppo_trainer.yaml)"
    ]


def reset_inherited_means(data: dict[str, Any], natives: dict[str, Any]) -> list[str]:
    """A script that changes ``data.max_{prompt,response}_length`` without a mean: the base scenario's mean
    was set for another max, so it goes back to null (= the max, DESIGN.md 6.3). Returns what was reset."""
    section = data.get("data") if isinstance(data.get("data"), dict) else {}
    notes: list[str] = []
    for kind in ("prompt", "response"):
        max_key, mean_key = f"max_{kind}_length", f"mean_{kind}_length"
        new_max = natives.get(f"data.{max_key}")
        old_mean = section.get(mean_key)
        if new_max is None or old_mean is None or f"data.{mean_key}" in natives:
            continue
        if new_max == section.get(max_key):
            continue  # same max as the base: its mean still applies
        natives[f"data.{mean_key}"] = None
        notes.append(
            f"data.{mean_key} reset from {old_mean} to null (= data.{max_key} {new_max}): the script sets "
            f"data.{max_key}={new_max} and no mean, so the previous scenario's mean no longer applies. Set it "
            f"with --set data.{mean_key}=N or a '# rlplan: data.{mean_key}=N' line"
        )
    return notes
