"""Compare: two to four scenarios side by side on one memory axis, and the settings that differ."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from calculator import (
    MAX_INPUT_BYTES,
    InputError,
    Report,
    Scenario,
    load_scenario,
    load_scenario_with_warnings,
    role_settings,
)
from ui import cache, figures, keys, linkcodec, render, state, summary
from ui.export import plain_text
from ui.fields import decode_value, encode_value, field, scenario_flat, settings_diff
from ui.i18n import tr
from ui.text import md, md_lines

CURRENT = "__current__"
PERSIST = "session"
MAX_SCENARIOS = 4
MAX_LABEL_CHARS = 60
QUICK: dict[str, list[tuple[str, str, str]]] = {
    # quick comparison -> [(base, overrides, label)]
    "ppo_grpo": [
        (CURRENT, "algorithm.adv_estimator=gae", "PPO"),
        (CURRENT, "algorithm.adv_estimator=grpo", "GRPO"),
    ],
    "offload": [
        (CURRENT, "actor.fsdp_config.param_offload=false\nactor.fsdp_config.optimizer_offload=false", "offload off"),
        (CURRENT, "actor.fsdp_config.param_offload=true\nactor.fsdp_config.optimizer_offload=true", "offload on"),
    ],
    "seed001": [
        ("seed001-grpo-basic", "", "basic"),
        ("seed001-grpo-optimized", "", "optimized"),
        ("seed001-grpo-max-optimization", "", "max optimization"),
    ],
    "n": [(CURRENT, f"rollout.n={n}", f"n = {n}") for n in (4, 8, 16)],
    # issue 17: the same 8 GPUs colocated, or split 4 rollout + 4 trainer (verl's one_step_off recipe)
    "placement": [
        (CURRENT, "placement.mode=colocated\nhardware.num_gpus=8", "colocated 8"),
        (
            CURRENT,
            "placement.mode=one_step_off\nhardware.num_gpus=4\nplacement.rollout_nnodes=1\n"
            "placement.rollout_n_gpus_per_node=4",
            "one-step-off 4 + 4",
        ),
    ],
}


def quick_options() -> list[str]:
    ids = set(state.preset_ids())
    return [q for q, cols in QUICK.items() if all(b == CURRENT or b in ids for b, _, _ in cols)]


def apply_quick(name: str | None = None) -> None:
    name = name or st.session_state.get(keys.CMP_QUICK)
    if not name or name not in QUICK:
        return
    cols = QUICK[name]
    st.session_state[keys.CMP_COUNT] = len(cols)
    for i, (base, overrides, label) in enumerate(cols):
        st.session_state[keys.cmp_base(i)] = base
        st.session_state[keys.cmp_overrides(i)] = overrides
        st.session_state[keys.cmp_label(i)] = label


def parse_changes(text: str) -> tuple[dict, list[str], list[str]]:
    """Lines 'key=value': native dotted fields become overrides, anything else goes to the verl importer."""
    native: dict = {}
    verl: list[str] = []
    problems: list[str] = []
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key = key.strip().lstrip("+")
        spec = field(key)
        if sep and spec is not None:
            try:
                native[key] = decode_value(spec, value.strip())
            except ValueError as exc:
                problems.append(f"{key}: {exc}")
        else:
            verl.append(line)
    return native, verl, problems


def build_column(i: int, current: Scenario | None) -> tuple[Scenario | None, list[str], list[str]]:
    base_id = st.session_state.get(keys.cmp_base(i), CURRENT)
    native, verl, problems = parse_changes(st.session_state.get(keys.cmp_overrides(i), ""))
    if problems:
        return None, problems, []
    try:
        base = current if base_id == CURRENT else state.preset_scenario(base_id)
        if base is None:
            return None, [tr(L, "cmp.current") + ": " + tr(L, "err.invalid_inputs")], []
        s, notes = load_scenario_with_warnings(base, overrides=native, verl_overrides=verl or None)
        if "algorithm.adv_estimator" in native and role_settings(s):  # as the sidebar's algorithm switch does
            s = load_scenario(s, overrides=role_settings(s))
        return s, [], notes
    except InputError as err:
        return None, list(err.problems), []
    except Exception as exc:  # never a traceback
        return None, [f"{type(exc).__name__}: {exc}"], []


def link_columns(count: int) -> list[list[str]]:
    """The comparison as it travels in the link: [base, label, changes] per column."""
    ss = st.session_state
    return [
        [
            str(ss.get(keys.cmp_base(i), CURRENT)),
            str(ss.get(keys.cmp_label(i), "")),
            str(ss.get(keys.cmp_overrides(i), "")),
        ]
        for i in range(count)
    ]


def restore_from_link(data: object) -> bool:
    """Put a comparison read from the link into the column widgets; False (nothing set) unless it has the shape
    :func:`link_columns` writes. Bases that are no preset fall back to the current inputs; every text is cut to
    its widget's bound (and checked again by ui.widget_rules like anything typed)."""
    cols = data.get("c") if isinstance(data, dict) else None
    if not isinstance(cols, list) or not 2 <= len(cols) <= MAX_SCENARIOS:
        return False
    if not all(isinstance(c, list) and len(c) == 3 and all(isinstance(v, str) for v in c) for c in cols):
        return False
    presets = set(state.preset_ids())
    ss = st.session_state
    ss[keys.CMP_COUNT] = len(cols)
    for i, (base, label, overrides) in enumerate(cols):
        ss[keys.cmp_base(i)] = base if base in presets else CURRENT
        ss[keys.cmp_label(i)] = label[:MAX_LABEL_CHARS]
        ss[keys.cmp_overrides(i)] = overrides[:MAX_INPUT_BYTES]
    return True


def write_link(built: state.Built, count: int) -> None:
    """The address bar carries the current inputs and the comparison (packed, bounded: ui/linkcodec.py)."""
    params = state.url_params(built)
    code = linkcodec.pack({"c": link_columns(count)})
    if code is None:
        st.caption(tr(L, "cmp.link_too_long", kib=linkcodec.MAX_LINK_PARAM_CHARS // 1024))
    else:
        params["cmp"] = code
    if {k: st.query_params.get(k) for k in st.query_params} != params:
        st.query_params.from_dict(params)


def time_metric(report: Report) -> None:
    """Step time and tokens/s of one column, or "—" with the reason when the step cannot run."""
    t = report.time
    step_s = getattr(t, "step_s", None)
    if t is None or step_s is None:
        why = getattr(t, "reason", None) or tr(L, "err.no_time")
        st.metric(tr(L, "metric.step_time"), "—", delta=why, delta_color="off", delta_arrow="off")
        return
    st.metric(
        tr(L, "metric.step_time"),
        f"{step_s:,.1f} s",
        delta=f"{t.tokens_per_s:,.0f} tok/s",
        delta_color="off",
        delta_arrow="off",
    )


def column_names(items: list[tuple[str, Scenario, Report]]) -> str:
    """Each column's label with the model and GPUs it runs (the comparison PNG names what it compares)."""
    return " · ".join(
        f"{i + 1}. {plain_text(label, limit=MAX_LABEL_CHARS)}: {plain_text(r.model.name)}, "
        f"{r.hardware.num_gpus} × {plain_text(r.hardware.gpu_name or r.hardware.gpu)}"
        for i, (label, _, r) in enumerate(items)
    )


L = state.lang()
ss = st.session_state
code = (ss.get(keys.LINK_PACKED) or {}).pop("cmp", None)  # the link's comparison, read once per session
if code:
    if not restore_from_link(linkcodec.unpack(code)):
        ss[keys.URL_PROBLEMS] = [*(ss.get(keys.URL_PROBLEMS) or []), tr(L, "url.bad_cmp")]
if keys.cmp_base(0) not in ss:
    apply_quick("ppo_grpo")

st.markdown(f"#### {tr(L, 'cmp.title')}")
st.caption(tr(L, "cmp.caption"))
render.notices()
top_l, top_r = st.columns([4, 1])
with top_l:
    st.pills(
        tr(L, "cmp.quick"),
        quick_options(),
        format_func=lambda q: tr(L, f"cmp.quick.{q}"),
        key=keys.CMP_QUICK,
        on_change=apply_quick,
    )
with top_r:
    count = int(
        st.number_input(
            tr(L, "cmp.count"), min_value=2, max_value=MAX_SCENARIOS, step=1, key=keys.CMP_COUNT, persist_state=PERSIST
        )
    )

built = state.build_scenario()
current = built.scenario
presets = state.preset_ids()
items: list[tuple[str, Scenario, Report]] = []
columns = st.columns(count, gap="small")
for i, col in enumerate(columns):
    ss.setdefault(keys.cmp_base(i), CURRENT)
    ss.setdefault(keys.cmp_overrides(i), "")
    ss.setdefault(keys.cmp_label(i), f"#{i + 1}")
    if ss[keys.cmp_base(i)] not in [CURRENT, *presets]:
        ss[keys.cmp_base(i)] = CURRENT
    with col, st.container(border=True):
        st.text_input(tr(L, "cmp.label"), key=keys.cmp_label(i), max_chars=MAX_LABEL_CHARS, persist_state=PERSIST)
        st.selectbox(
            tr(L, "cmp.base"),
            [CURRENT, *presets],
            format_func=lambda v: tr(L, "cmp.current") if v == CURRENT else state.preset_name(v),
            key=keys.cmp_base(i),
            persist_state=PERSIST,
        )
        st.text_area(
            tr(L, "cmp.overrides"),
            key=keys.cmp_overrides(i),
            height=90,
            placeholder="rollout.n=8",
            max_chars=MAX_INPUT_BYTES + 1,
            persist_state=PERSIST,
        )
        scenario, problems, notes = build_column(i, current)
        if scenario is None:
            st.error("**" + tr(L, "cmp.invalid") + "**\n\n" + md_lines(problems))
            continue
        try:
            report = cache.cached_estimate(scenario)  # shared with the Estimate page and the other sessions
        except Exception as exc:
            st.error(md(tr(L, "err.calculator", what=f"{type(exc).__name__}: {exc}")))
            continue
        label = ss.get(keys.cmp_label(i)) or f"#{i + 1}"
        items.append((label, scenario, report))
        p = report.peak
        st.metric(
            tr(L, "metric.peak"),
            f"{p.gib_per_gpu:.2f} GiB",
            delta=render.peak_delta(report),
            delta_color="normal" if p.fits or p.headroom_gib < 0 else "off",
        )
        render.column_verdict(report)
        st.caption(
            md(
                f"{report.model.name} · {report.hardware.num_gpus} × {report.hardware.gpu_name} · "
                f"{tr(L, 'metric.peak_phase')}: {p.phase} · {tr(L, 'metric.worst')}: {p.worst_case_gib_per_gpu:.2f} GiB"
            )
        )
        time_metric(report)
        if notes:
            with st.expander(tr(L, "cmp.notes")):
                for n in notes[:50]:
                    st.caption(md(n, limit=1000))

if len(items) >= 1:
    st.markdown(f"#### {tr(L, 'cmp.chart')}")
    # Cached by the columns' labels and scenarios (the figure is a function of them and the language; ui/cache.py);
    # their JSON is unambiguous whatever a label holds.
    fig_key = json.dumps([[label, cache.scenario_key(s)] for label, s, _ in items])
    fig = cache.cached_figure(
        "comparison", fig_key, lambda: figures.comparison_figure([(label, r) for label, _, r in items], lang=L), L
    )
    render.chart(fig, keys.CMP_CHART, "rlplan-comparison")

    t1, t2 = st.columns([2, 3], gap="medium")
    with t1:
        st.markdown(f"**{tr(L, 'cmp.phase_totals')}**")
        phase_names: list[str] = []
        for _, _, r in items:
            phase_names += [p.name for p in r.phases if p.name not in phase_names]
        table = {
            label: [next((p.total_gib for p in r.phases if p.name == ph), None) for ph in phase_names]
            for label, _, r in items
        }
        num = pd.DataFrame(table, index=phase_names, dtype=float)
        num.columns = [f"{i + 1}. {c}" for i, c in enumerate(num.columns)]
        text = num.map(lambda v: "—" if pd.isna(v) else f"{v:.2f}")
        peak_mask = num.eq(num.max(axis=0), axis=1)
        st.dataframe(
            text.style.apply(lambda col: ["background-color:#fdecea" if m else "" for m in peak_mask[col.name]]),
            width="stretch",
        )
    with t2:
        st.markdown(f"**{tr(L, 'cmp.diff')}**")
        flats = [scenario_flat(s) for _, s, _ in items]
        diff = [k for k in settings_diff(flats) if k not in ("name", "description")]
        if diff:
            rows = {
                f"{i + 1}. {label}": [
                    "(config.json)" if k == "model.config" and flats[i].get(k) else encode_value(flats[i].get(k))
                    for k in diff
                ]
                for i, (label, _, _) in enumerate(items)
            }
            st.dataframe(pd.DataFrame(rows, index=diff), width="stretch")
        else:
            st.info(tr(L, "cmp.no_diff"))

    c1, c2, _ = st.columns([1, 1, 3])
    with c1:
        st.download_button(
            tr(L, "cmp.dl_md"),
            data=summary.comparison_markdown(items, diff, L),
            file_name="rlplan-comparison.md",
            mime="text/markdown",
            key=keys.CMP_DL_MD,
            on_click="ignore",
            icon=":material/article:",
            width="stretch",
        )
    with c2:
        render.png_button(
            fig, keys.CMP_DL_PNG, "rlplan-comparison", tr(L, "cmp.dl_png"), tr(L, "cmp.png_title"), column_names(items)
        )

write_link(built, count)
