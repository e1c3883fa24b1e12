"""verl launch-script overrides <-> scenario fields (DESIGN.md 6.1).

The scenario mirrors verl 0.9.1's config tree with ``actor_rollout_ref.`` dropped, so most keys map by
prefix; the renames are listed in ``RENAMES``. Values that still contain an unresolved shell
variable are ignored with a warning; unknown keys are warnings, never fatal.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from pydantic import BaseModel

from calculator.errors import InputError
from calculator.scenario import Scenario

# verl key -> native key, checked before the prefix rules.
RENAMES: dict[str, str] = {
    "actor_rollout_ref.model.path": "model.path",
    "actor_rollout_ref.actor.use_fused_kernels": "model.use_fused_kernels",
    "actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_dtype": "rollout.kv_cache_dtype",
    "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes": "rollout.update_weights_bucket_megabytes",
    "actor_rollout_ref.ref.megatron.param_offload": "ref.megatron_param_offload",
    "algorithm.kl_ctrl.kl_coef": "algorithm.kl_coef",
    "critic.model.path": "critic.model_path",
    "critic.model.enable_gradient_checkpointing": "critic.enable_gradient_checkpointing",
    "reward.reward_model.model_path": "reward_model.model_path",
    "reward_model.model.path": "reward_model.model_path",
    "reward.reward_model.enable": "reward_model.enable",
    "reward_model.enable": "reward_model.enable",
    "reward.reward_model.enable_resource_pool": "reward_model.enable_resource_pool",
    "trainer.n_gpus_per_node": "hardware.gpus_per_node",
}

PREFIXES: tuple[tuple[str, str], ...] = (
    ("actor_rollout_ref.actor.", "actor."),
    ("actor_rollout_ref.rollout.", "rollout."),
    ("actor_rollout_ref.ref.", "ref."),
    ("actor_rollout_ref.model.", "model."),
    ("critic.model.fsdp_config.", "critic.fsdp."),
    ("critic.", "critic."),
    ("reward.reward_model.rollout.", "reward_model.rollout."),
    ("reward_model.rollout.", "reward_model.rollout."),
    ("data.", "data."),
    ("algorithm.", "algorithm."),
)

# Keys verl has that do not change memory or time: accepted silently.
IGNORED_PREFIXES: tuple[str, ...] = (
    "data.train_files",
    "data.val_files",
    "data.prompt_key",
    "data.reward_fn_key",
    "data.return_raw_chat",
    "data.filter_overlong_prompts",
    "data.truncation",
    "data.shuffle",
    "data.dataloader_num_workers",
    "data.tokenizer",
    "data.image_key",
    "data.trust_remote_code",
    "data.val_batch_size",
    "data.seed",
    "trainer.project_name",
    "trainer.experiment_name",
    "trainer.logger",
    "trainer.save_freq",
    "trainer.test_freq",
    "trainer.total_epochs",
    "trainer.total_training_steps",
    "trainer.val_before_train",
    "trainer.default_local_dir",
    "trainer.resume_mode",
    "trainer.critic_warmup",
    "trainer.log_val_generations",
    "trainer.balance_batch",
    "trainer.device",
    "trainer.use_v1",
    "trainer.v1.",
    "trainer.max_actor_ckpt_to_keep",
    "trainer.val_only",
    "actor_rollout_ref.actor.optim.lr_warmup",
    "actor_rollout_ref.actor.optim.warmup_style",
    "actor_rollout_ref.actor.optim.weight_decay",
    "actor_rollout_ref.actor.optim.clip_grad",
    "actor_rollout_ref.actor.optim.min_lr_ratio",
    "actor_rollout_ref.actor.optim.lr_scheduler_type",
    "actor_rollout_ref.actor.clip_ratio",
    "actor_rollout_ref.actor.clip_ratio_low",
    "actor_rollout_ref.actor.clip_ratio_c",
    "actor_rollout_ref.actor.loss_agg_mode",
    "actor_rollout_ref.actor.kl_loss_type",
    "actor_rollout_ref.actor.policy_loss",
    "actor_rollout_ref.actor.grad_clip",
    "actor_rollout_ref.actor.shuffle",
    "actor_rollout_ref.actor.checkpoint",
    "actor_rollout_ref.actor.use_torch_compile",
    "actor_rollout_ref.actor.fsdp_config.forward_prefetch",
    "actor_rollout_ref.actor.fsdp_config.wrap_policy",
    "actor_rollout_ref.actor.fsdp_config.use_orig_params",
    "actor_rollout_ref.model.trust_remote_code",
    "actor_rollout_ref.model.external_lib",
    "actor_rollout_ref.model.use_shm",
    "actor_rollout_ref.model.override_config",
    "actor_rollout_ref.rollout.mode",
    "actor_rollout_ref.rollout.top_p",
    "actor_rollout_ref.rollout.top_k",
    "actor_rollout_ref.rollout.do_sample",
    "actor_rollout_ref.rollout.val_kwargs",
    "actor_rollout_ref.rollout.load_format",
    "actor_rollout_ref.rollout.enable_prefix_caching",
    "actor_rollout_ref.rollout.agent",
    "actor_rollout_ref.rollout.multi_turn",
    "actor_rollout_ref.rollout.calculate_log_probs",
    "actor_rollout_ref.rollout.layered_summon",
    "actor_rollout_ref.rollout.prompt_length",
    "actor_rollout_ref.rollout.response_length",
    "actor_rollout_ref.hybrid_engine",
    "algorithm.gamma",
    "algorithm.lam",
    "algorithm.kl_penalty",
    "algorithm.kl_ctrl.type",
    "algorithm.norm_adv_by_std_in_grpo",
    "algorithm.filter_groups",
    "critic.optim.lr",
    "critic.optim.",
    "critic.cliprange_value",
    "critic.model.trust_remote_code",
    "custom_reward_function.",
    "reward.reward_manager",
    "reward_model.reward_manager",
    "ray_init.",
    "ray_kwargs.",
)

_SHELL_VAR = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")


def native_field_exists(key: str) -> bool:
    """Whether ``a.b.c`` names a field of the Scenario tree (dict-typed fields accept any sub-key)."""
    model: type[BaseModel] | None = Scenario
    for part in key.split("."):
        if model is None:
            return False
        field = model.model_fields.get(part)
        if field is None:
            return False
        ann = field.annotation
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return model is None


def verl_to_native(key: str) -> str | None:
    """Native dotted field for a verl key, or None when it is not modelled."""
    key = key.lstrip("+")
    if key in RENAMES:
        return RENAMES[key]
    for verl_prefix, native_prefix in PREFIXES:
        if key.startswith(verl_prefix):
            native = native_prefix + key[len(verl_prefix) :]
            if native.startswith("actor.fsdp_config.strategy"):
                return "actor.strategy"
            if native.startswith("critic.fsdp_config."):
                native = "critic.fsdp." + native[len("critic.fsdp_config.") :]
            return native if native_field_exists(native) else None
    return None


def tokenize_overrides(text: str) -> list[str]:
    """``key=value`` tokens of a launch script: backslash-newlines joined, comments dropped, words
    without ``=`` (``python3 -m verl.trainer.main_ppo``) skipped."""
    joined = re.sub(r"\\\r?\n", " ", text)
    tokens: list[str] = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            words = line.split()
        tokens += [w for w in words if "=" in w and not w.startswith("-")]
    return tokens


def _coerce(value: str) -> Any:
    from calculator.api import parse_value

    return parse_value(value)


def _model_id_from_path(path: str) -> str | None:
    from calculator.presets import model_presets

    presets = model_presets()
    base = path.rstrip("/").split("/")[-1].lower()
    repo = "/".join(path.rstrip("/").split("/")[-2:]).lower()
    for m in presets.values():
        if m.hf_repo.lower() == repo or m.id == base or m.hf_repo.split("/")[-1].lower() == base:
            return m.id
    stripped = re.sub(r"-(instruct|chat|base|hf|it)$", "", base)
    for m in presets.values():
        if m.id == stripped or m.hf_repo.split("/")[-1].lower() in (stripped, stripped + "-hf"):
            return m.id
    return None


def apply_verl_overrides(data: dict[str, Any], overrides: list[str] | str) -> list[str]:
    """Apply verl overrides onto a scenario mapping in place; return warnings."""
    from calculator.api import set_dotted

    tokens = (
        tokenize_overrides(overrides)
        if isinstance(overrides, str)
        else [t for o in overrides for t in tokenize_overrides(o)]
    )
    notes: list[str] = []
    unknown: list[str] = []
    nodes = n_per_node = None
    for tok in tokens:
        key, _, raw = tok.partition("=")
        key = key.strip().lstrip("+")
        if _SHELL_VAR.search(raw):
            notes.append(f"verl override {key}: value {raw!r} has an unresolved shell variable; ignored")
            continue
        if key == "model_engine":
            if raw.strip() == "megatron":
                set_dotted(data, "actor.strategy", "megatron")
            continue
        if key == "trainer.nnodes":
            nodes = int(_coerce(raw))
            continue
        if key == "trainer.n_gpus_per_node":
            n_per_node = int(_coerce(raw))
        if key == "actor_rollout_ref.model.path":
            mid = _model_id_from_path(raw)
            if mid is None:
                notes.append(
                    f"verl override {key}={raw}: not a model preset; pass --model with a preset id or config.json"
                )
            else:
                set_dotted(data, "model.path", mid)
            continue
        native = verl_to_native(key)
        if native is None:
            if not any(key.startswith(p) for p in IGNORED_PREFIXES):
                unknown.append(key)
            continue
        value = _coerce(raw)
        if native in ("critic.model_path", "reward_model.model_path") and isinstance(value, str):
            mid = _model_id_from_path(value)
            if mid is None:
                notes.append(f"verl override {key}={raw}: not a model preset; the actor's model is used")
                continue
            value = mid
        set_dotted(data, native, value)
    if n_per_node is not None or nodes is not None:
        hw = data.setdefault("hardware", {})
        per = n_per_node or hw.get("gpus_per_node", 8)
        hw["num_gpus"] = per * (nodes or 1)
    if unknown:
        notes.append("verl overrides not modelled (ignored): " + ", ".join(unknown))
    return notes


def read_verl_file(path: str) -> str:
    from pathlib import Path

    p = Path(path)
    try:
        if p.stat().st_size > 2 * 2**20:
            raise InputError(f"--verl {path}: larger than 2 MiB")
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"--verl {path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--verl {path}: cannot read ({exc.__class__.__name__})") from None
