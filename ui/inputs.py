"""The scenario inputs (sidebar): one keyed widget per field, help text from the field's description.

Widgets take their values from session state (set by the preset callback or the URL), never from a
``value=`` argument, so a preset can rewrite all of them. Problems from the calculator are shown under
the widgets they name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

import streamlit as st

from calculator import ALGORITHMS, model_families
from ui import field_values, keys, profiles, state, text
from ui.fields import FieldSpec, coerce, encode_value, field, widget_fields
from ui.i18n import field_help, field_label, tr, tr_or
from ui.options import gpu_ids, gpu_label, model_ids, model_label
from ui.placement import PLACEMENT_FIELDS, placement_inputs

PERSIST = "session"  # the non-field widgets keep their values over page switches (fields: ui.field_values)
MAX_TEXT_CHARS = state.MAX_TEXT_CHARS  # one-line text inputs (checked again by state.sanitize_widgets)

# Where each field appears; every other widget field goes to "More verl settings", grouped by section.
SECTIONS: dict[str, tuple[str, ...]] = {
    "hardware": (
        "hardware.gpu",
        "hardware.num_gpus",
        "hardware.gpus_per_node",
        *PLACEMENT_FIELDS,  # ui/placement.py
    ),
    "algorithm": (
        "actor.use_kl_loss",
        "algorithm.use_kl_in_reward",
        "reward_model.enable",
        "reward_model.model_path",
        "actor.entropy_coeff",
        "actor.clip_ratio_high",
    ),
    "batch": (
        "data.train_batch_size",
        "data.gen_batch_size",
        "rollout.n",
        "actor.ppo_mini_batch_size",
        "actor.ppo_epochs",
        "actor.use_dynamic_bsz",
        "actor.ppo_micro_batch_size_per_gpu",
        "actor.ppo_max_token_len_per_gpu",
        "rollout.log_prob_micro_batch_size_per_gpu",
        "ref.log_prob_micro_batch_size_per_gpu",
    ),
    "lengths": (
        "data.max_prompt_length",
        "data.max_response_length",
        "data.mean_prompt_length",
        "data.mean_response_length",
        "data.response_clip_ratio",
        "data.response_length_histogram",
    ),
    "rollout": (
        "rollout.name",
        "rollout.tensor_model_parallel_size",
        "rollout.gpu_memory_utilization",
        "rollout.free_cache_engine",
        "rollout.enforce_eager",
        "rollout.kv_cache_dtype",
        "rollout.quantization",
        "rollout.max_num_seqs",
        "rollout.max_num_batched_tokens",
    ),
    "optim": (
        "model.enable_gradient_checkpointing",
        "model.enable_activation_offload",
        "actor.fsdp_config.param_offload",
        "actor.fsdp_config.optimizer_offload",
        "critic.fsdp.param_offload",
        "critic.fsdp.optimizer_offload",
        "model.use_fused_kernels",
        "actor.entropy_from_logits_with_chunking",
        "model.use_remove_padding",
        "actor.ulysses_sequence_parallel_size",
        "actor.fsdp_config.fsdp_size",
        "actor.fsdp_config.model_dtype",
        "model.lora_rank",
        "model.use_dora",
        "actor.strategy",
        "actor.fsdp_config.offload_policy",
        "actor.megatron.tensor_model_parallel_size",
        "actor.megatron.pipeline_model_parallel_size",
        "actor.megatron.expert_model_parallel_size",
        "actor.megatron.context_parallel_size",
    ),
}
ADVANCED_SECTIONS = ("overheads", "efficiency")
TWO_COLUMN_SECTIONS = ("batch", "lengths", "rollout")


def _placed() -> set[str]:
    return {p for paths in SECTIONS.values() for p in paths}


def problems_by_field(problems: Iterable[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Attach each 'field: message' problem to the widget it names: its own field, else the first field
    its text mentions (cross-field rules name several). Problems naming no widget field stay general."""
    known = set(widget_fields()) | {"model.path", "model.config", "algorithm.adv_estimator"}
    attached: dict[str, list[str]] = {}
    general: list[str] = []
    for problem in problems:
        head, _, msg = problem.partition(": ")
        if head in known:
            attached.setdefault(head, []).append(msg)
            continue
        mentioned = [p for p in re.findall(r"[a-z_]+(?:\.[a-z_]+)+", problem) if p in known]
        if mentioned:
            attached.setdefault(mentioned[0], []).append(msg or problem)
        else:
            general.append(problem)
    return attached, general


def _step_format(spec: FieldSpec) -> tuple[Any, str | None]:
    if spec.kind == "int":
        return 1, None
    default = spec.default if isinstance(spec.default, int | float) else 0
    if abs(default) >= 1e4:
        return 10 ** int(math.log10(abs(default))), "%g"
    if spec.leaf == "lr":
        return 1e-7, "%.2e"
    if spec.leaf.endswith("coef") or spec.leaf.endswith("coeff"):
        return 0.001, "%.4f"
    if spec.max_value == 1 or spec.leaf.endswith("_fraction") or spec.leaf.endswith("efficiency"):
        return 0.05, "%.2f"
    return 0.1, "%.2f"


def field_widget(path: str, errors: dict[str, list[str]], *, disabled: bool = False) -> None:
    """One keyed widget for one scenario field (skipped when the calculator no longer has the field)."""
    spec = field(path)
    if spec is None:
        return
    L = state.lang()
    # The widget's key holds the session's value of the field (``ui.field_values``; the field's default for a field
    # added after the session started).
    key = field_values.widget_key(path, coerce(spec, spec.default))
    label = field_label(L, path)
    help_text = f"{field_help(L, path)}\n\n`{path}`"
    auto = tr(L, "input.auto")
    common: dict[str, Any] = dict(key=key, help=help_text, disabled=disabled)
    if path == "hardware.gpu":
        st.selectbox(label, gpu_ids(), format_func=gpu_label, **common)
    elif path in ("critic.model_path", "reward_model.model_path"):
        # None (= the actor's model) is the empty selection, shown as the placeholder.
        st.selectbox(
            label, model_ids(), format_func=model_label, index=None, placeholder=tr(L, "input.same_as_actor"), **common
        )
    elif spec.kind == "bool" and not spec.nullable:
        st.toggle(label, **common)
    elif spec.kind == "bool":
        st.selectbox(
            label,
            [True, False],
            format_func=lambda v: tr(L, "input.on") if v else tr(L, "input.off"),
            index=None,
            placeholder=auto,
            **common,
        )
    elif spec.kind == "choice":
        if spec.nullable:
            st.selectbox(label, list(spec.choices), index=None, placeholder=auto, **common)
        else:
            st.selectbox(label, list(spec.choices), **common)
    elif spec.kind in ("int", "float"):
        step, fmt = _step_format(spec)
        cast = int if spec.kind == "int" else float
        st.number_input(
            label,
            min_value=None if spec.min_value is None else cast(spec.min_value),
            max_value=None if spec.max_value is None else cast(spec.max_value),
            step=cast(step),
            format=fmt,
            placeholder=auto if spec.nullable else None,
            **common,
        )
    elif spec.kind == "str":
        st.text_input(label, max_chars=MAX_TEXT_CHARS, **common)
    for msg in errors.get(path, []):  # the message quotes the value: escaped for the HTML snippet
        st.markdown(
            f"<div style='color:#c0392b;font-size:0.8rem;margin-top:-0.6rem'>{text.html(msg)}</div>",
            unsafe_allow_html=True,
        )


def _fields(paths: Iterable[str], errors: dict[str, list[str]], columns: int = 1) -> None:
    """Toggles one per line (their labels need the width), other widgets in a grid of ``columns``."""
    specs = [field(p) for p in paths]
    toggles = [s.path for s in specs if s is not None and s.kind == "bool" and not s.nullable]
    others = [s.path for s in specs if s is not None and s.path not in toggles]
    for p in toggles:
        field_widget(p, errors)
    if columns == 1:
        for p in others:
            field_widget(p, errors)
        return
    for row in range(0, len(others), columns):
        cols = st.columns(columns)
        for col, p in zip(cols, others[row : row + columns], strict=False):
            with col:
                field_widget(p, errors)


def _model_inputs(errors: dict[str, list[str]], model_note: str) -> None:
    L = state.lang()
    ss = st.session_state
    st.radio(
        tr(L, "input.model_source"),
        ["preset", "size", "config"],
        format_func=lambda v: tr(L, f"input.model_source.{v}"),
        key=keys.MODEL_SOURCE,
        horizontal=True,
        persist_state=PERSIST,
        help=tr(L, "input.model_source_help"),
    )
    source = ss.get(keys.MODEL_SOURCE, "preset")
    if source == "preset":
        st.selectbox(
            tr(L, "input.model"),
            model_ids(),
            format_func=model_label,
            key=keys.MODEL_PATH,
            persist_state=PERSIST,
            help=field_help(L, "model.path") + "\n\n`model.path`",
        )
    elif source == "size":
        c1, c2 = st.columns([3, 2])
        c1.text_input(
            tr(L, "input.model_size"),
            key=keys.MODEL_SIZE,
            placeholder="7B dense · 30B-A3B MoE",
            max_chars=MAX_TEXT_CHARS,
            persist_state=PERSIST,
            help=tr(L, "input.model_size_help"),
        )
        moe = (
            "a" in str(ss.get(keys.MODEL_SIZE, "")).lower().replace("dense", "")
            or "moe" in str(ss.get(keys.MODEL_SIZE, "")).lower()
        )
        fams = model_families(moe) or model_families(False)
        if ss.get(keys.MODEL_SIZE_FAMILY) not in fams:
            ss[keys.MODEL_SIZE_FAMILY] = fams[0]
        c2.selectbox(tr(L, "input.model_family"), fams, key=keys.MODEL_SIZE_FAMILY, persist_state=PERSIST)
    else:
        st.file_uploader(
            tr(L, "input.config_upload"),
            type=["json"],
            key=keys.CONFIG_UPLOAD,
            on_change=state.on_upload,
            help=tr(L, "input.config_upload_help"),
        )
        st.text_area(
            tr(L, "input.config_paste"),
            key=keys.CONFIG_PASTE,
            on_change=state.on_paste,
            height=90,
            placeholder='{"model_type": "qwen2", "hidden_size": 3584, ...}',
            max_chars=state.MAX_CONFIG_BYTES + 1,  # one more than is read: a longer paste gets the size message
            persist_state=PERSIST,
        )
        if ss.get(keys.CONFIG_ERROR):
            st.error(text.md(tr(L, "err.config_rejected", why=ss[keys.CONFIG_ERROR])), icon=":material/warning:")
        cfg = ss.get(keys.CUSTOM_CONFIG)
        if cfg and not state.fits_in_link(encode_value(cfg)):
            st.caption(tr(L, "model.config_not_in_link", kib=state.MAX_LINK_CONFIG_CHARS // 1024))
    if model_note:
        st.caption(text.md(model_note))
    for msg in errors.get("model.config", []) + errors.get("model.path", []):
        st.error(text.md(msg))


def section_of(path: str) -> str:
    """The sidebar section a field is shown in."""
    for name, paths in SECTIONS.items():
        if path in paths:
            return name
    if path.split(".")[0] in ADVANCED_SECTIONS:
        return "advanced"
    return "more"


def group_label(lang: str, group: str) -> str:
    """'actor.megatron' -> 'Actor · Megatron': the section and sub-section a field lives in."""
    parts = group.split(".")
    labels = [tr_or(lang, f"group.{parts[0]}", parts[0])]
    labels += [tr_or(lang, f"group.{part}", part) for part in parts[1:]]
    return " · ".join(labels)


def _lazy(name: str, label: str) -> Any:
    """A keyed expander that reruns on open/close, so its widgets are built only while it is open."""
    return st.expander(label, key=keys.section_key(name), on_change="rerun")


def render_sidebar(built: state.Built) -> None:
    """All scenario inputs in the sidebar, with the calculator's problems under the widgets they concern.

    Sections other than model, hardware and algorithm build their widgets only while open (Streamlit's
    cost per widget grows with the number of keys); a section holding a field with a problem is opened.
    Values of closed sections persist in the session's field values (``ui.field_values``).
    """
    L = state.lang()
    ss = st.session_state
    errors, general = problems_by_field(built.problems)
    for path in errors:
        section = section_of(path)
        if section in keys.LAZY_SECTIONS:
            ss[keys.section_key(section)] = True
    with st.sidebar:
        ids = state.preset_ids()
        st.selectbox(
            tr(L, "input.preset"),
            ids,
            format_func=state.preset_name,
            key=keys.PRESET,
            on_change=state.on_preset_change,
            persist_state=PERSIST,
            help=tr(L, "input.preset_help"),
        )
        profiles.render_selector()  # calibration profiles (ui/profiles.py)
        if general:
            st.error("\n\n".join(text.md(g) for g in general), icon=":material/warning:")
        with st.expander(tr(L, "section.model"), expanded=True):
            _model_inputs(errors, built.model_note)
        with st.expander(tr(L, "section.hardware"), expanded=True):
            _hardware_inputs(errors)
        with st.expander(tr(L, "section.algorithm"), expanded=True):
            _algorithm_inputs(errors)
        for name, render in _LAZY_SECTION_INPUTS.items():
            with (ex := _lazy(name, tr(L, f"section.{name}"))):
                if ex.open:
                    render(errors)


def _hardware_inputs(errors: dict[str, list[str]]) -> None:
    field_widget("hardware.gpu", errors)
    c1, c2 = st.columns(2)
    with c1:
        field_widget("hardware.num_gpus", errors)
    with c2:
        field_widget("hardware.gpus_per_node", errors)
    placement_inputs(errors, field_widget)


def _algorithm_inputs(errors: dict[str, list[str]]) -> None:
    L = state.lang()
    st.selectbox(
        tr(L, "input.algorithm"),
        [a.label for a in ALGORITHMS],
        format_func=lambda v: tr_or(L, f"algo.{v}", v),
        key=keys.ALGO,
        on_change=state.on_algo_change,
        persist_state=PERSIST,
        help=tr(L, "input.algorithm_help"),
    )
    for msg in errors.get("algorithm.adv_estimator", []):
        st.error(text.md(msg))
    field_widget("actor.use_kl_loss", errors)
    field_widget("algorithm.use_kl_in_reward", errors)
    field_widget("reward_model.enable", errors)
    if field_values.get("reward_model.enable"):
        field_widget("reward_model.model_path", errors)
    c1, c2 = st.columns(2)
    with c1:
        field_widget("actor.entropy_coeff", errors)
    with c2:
        field_widget("actor.clip_ratio_high", errors)


def _batch_inputs(errors: dict[str, list[str]]) -> None:
    dynamic = bool(field_values.get("actor.use_dynamic_bsz"))
    paths = [
        p
        for p in SECTIONS["batch"]
        if not (p == "actor.ppo_micro_batch_size_per_gpu" and dynamic)
        and not (p == "actor.ppo_max_token_len_per_gpu" and not dynamic)
        and p != "actor.use_dynamic_bsz"
    ]
    field_widget("actor.use_dynamic_bsz", errors)
    _fields(paths, errors, columns=2)


def _length_inputs(errors: dict[str, list[str]]) -> None:
    _fields(SECTIONS["lengths"], errors, columns=2)


def _rollout_inputs(errors: dict[str, list[str]]) -> None:
    _fields(SECTIONS["rollout"][:3], errors, columns=1)
    _fields(SECTIONS["rollout"][3:], errors, columns=2)


def _advanced_inputs(errors: dict[str, list[str]]) -> None:
    L = state.lang()
    st.caption(tr(L, "section.advanced_caption"))
    for section in ADVANCED_SECTIONS:
        st.markdown(f"**{tr_or(L, f'section.{section}', section)}**")
        _fields([p for p in widget_fields() if p.startswith(section + ".")], errors)


def _more_inputs(errors: dict[str, list[str]]) -> None:
    """Every other widget field, grouped by the section it lives in."""
    L = state.lang()
    st.caption(tr(L, "section.more_caption"))
    placed = _placed()
    rest = [p for p in widget_fields() if p not in placed and p.split(".")[0] not in ADVANCED_SECTIONS]
    groups: dict[str, list[str]] = {}
    for p in rest:
        groups.setdefault(p.rsplit(".", 1)[0] if "." in p else "scenario", []).append(p)
    for group, paths in groups.items():
        st.markdown(f"**{group_label(L, group)}**")
        _fields(paths, errors)


def _optimization_inputs(errors: dict[str, list[str]]) -> None:
    ss = st.session_state
    strategy = field_values.get("actor.strategy", "fsdp")
    has_critic = ss.get(keys.ALGO) == "PPO" or bool(field_values.get("critic.enable"))
    toggles = [
        "model.enable_gradient_checkpointing",
        "model.enable_activation_offload",
        "actor.fsdp_config.param_offload",
        "actor.fsdp_config.optimizer_offload",
    ]
    if has_critic:
        toggles += ["critic.fsdp.param_offload", "critic.fsdp.optimizer_offload"]
    toggles += ["model.use_fused_kernels", "actor.entropy_from_logits_with_chunking", "model.use_remove_padding"]
    _fields(toggles, errors)
    field_widget("actor.strategy", errors)
    if strategy == "megatron":
        _fields([p for p in SECTIONS["optim"] if p.startswith("actor.megatron.")], errors, columns=2)
    else:
        if strategy == "fsdp2":
            field_widget("actor.fsdp_config.offload_policy", errors)
        _fields(["actor.fsdp_config.fsdp_size", "actor.ulysses_sequence_parallel_size"], errors, columns=2)
        field_widget("actor.fsdp_config.model_dtype", errors)
    c1, c2 = st.columns(2)
    with c1:
        field_widget("model.lora_rank", errors)
    with c2:
        field_widget("model.use_dora", errors)


# The sections built only while open, in sidebar order (``keys.LAZY_SECTIONS``).
_LAZY_SECTION_INPUTS: dict[str, Callable[[dict[str, list[str]]], None]] = {
    "batch": _batch_inputs,
    "lengths": _length_inputs,
    "rollout": _rollout_inputs,
    "optim": _optimization_inputs,
    "advanced": _advanced_inputs,
    "more": _more_inputs,
}
