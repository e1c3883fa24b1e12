"""Calibrate: a real run's log beside the prediction, the fitted efficiencies, team profiles, and an OOM explained.

The scenario is the sidebar's, with an optional pasted / uploaded launch script on top; the log is pasted or
uploaded (at most the server's upload limit, 2 MiB, and MAX_INPUT_BYTES for a paste); everything is parsed by the
calculator's bounded readers (calculator.calibration). Saving writes ``<profile id>.yaml`` into the team directory
(``$RLPLAN_PRESETS_DIR/calibrations``): the name is generated from the profile, never typed by the user.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from calculator import (
    MAX_INPUT_BYTES,
    Calibration,
    InputError,
    OomExplanation,
    Scenario,
    calibrate,
    explain_oom,
    load_scenario,
    load_scenario_with_warnings,
    make_profile,
    parse_log,
    profile_overrides,
    profile_yaml,
    save_team_profile,
    summarize,
    team_profile_exists,
    team_profiles,
)
from ui import inputs, keys, profiles, render, state
from ui.text import md

TEXT: dict[str, dict[str, str]] = {
    "en": {
        "title": "Calibrate from a real run",
        "caption": "Paste or upload the run's launch script (optional: applied on top of the sidebar) and its log "
        "(verl console output, the file logger's JSONL, or a wandb CSV export).",
        "script": "Launch script (optional)",
        "log": "Log",
        "upload": "or upload",
        "warmup": "Warm-up steps to drop (-1: automatic)",
        "too_large": "Larger than {mib} MiB: not read.",
        "chart": "Seconds per phase",
        "predicted": "predicted (defaults)",
        "measured": "measured (median)",
        "fitted": "predicted (fitted)",
        "fitted_values": "Fitted values",
        "refused": "Not fitted, and why",
        "memory": "Trainer memory: predicted allocated {pa:.2f} GiB vs logged {ma}; reserved {pr:.2f} vs {mr}",
        "host": "Host RAM per node: predicted {p} GiB vs logged {m} GiB ({note})",
        "save": "Save to the team directory",
        "name": "Profile name (optional)",
        "name_help": "Saved as <name>.yaml: letters and digits only (others become '-'), at most 40 characters. "
        "Empty: a name from the model, GPUs, date and values.",
        "exists": "{name} already exists in the team directory.",
        "overwrite": "Overwrite it",
        "saved": "Saved as {name}",
        "download": "Download profile (YAML)",
        "apply": "Apply the fitted values to the inputs",
        "applied": "Fitted values applied to the sidebar inputs",
        "goto": "Open with the profile applied:",
        "link_too_long": "The profile is too large for a link: save it to the team directory instead.",
        "team": "Team profiles",
        "team_none": "No team profiles (set RLPLAN_PRESETS_DIR and save one).",
        "team_apply": "Apply the selected profile",
        "oom": "Explain an out-of-memory error",
        "oom_caption": "Paste the error (PyTorch 'CUDA out of memory', vLLM / SGLang start-up failures, Ray's "
        "memory monitor).",
        "oom_text": "Error text",
        "fixes": "Ranked fixes (advisor)",
        "resident": "Predicted resident in {phase} (GiB)",
        "notes": "Notes",
    },
    "zh": {
        "title": "用真实运行校准",
        "caption": "粘贴或上传该运行的启动脚本（可选：叠加在侧栏设置之上）及其日志（verl 控制台输出、文件日志 JSONL 或 wandb CSV 导出）。",
        "script": "启动脚本（可选）",
        "log": "日志",
        "upload": "或上传",
        "warmup": "丢弃的预热步数（-1：自动）",
        "too_large": "超过 {mib} MiB：未读取。",
        "chart": "各阶段秒数",
        "predicted": "预测（默认值）",
        "measured": "实测（中位数）",
        "fitted": "预测（拟合后）",
        "fitted_values": "拟合值",
        "refused": "未拟合的字段及原因",
        "memory": "训练进程显存：预测已分配 {pa:.2f} GiB，日志 {ma}；预留 {pr:.2f}，日志 {mr}",
        "host": "每节点主机内存：预测 {p} GiB，日志 {m} GiB（{note}）",
        "save": "保存到团队目录",
        "name": "配置档名称（可选）",
        "name_help": "保存为 <名称>.yaml：仅字母和数字（其他字符变为 '-'），最多 40 个字符。留空：由模型、GPU、日期和数值生成。",
        "exists": "团队目录中已有 {name}。",
        "overwrite": "覆盖",
        "saved": "已保存为 {name}",
        "download": "下载配置档（YAML）",
        "apply": "把拟合值应用到输入",
        "applied": "拟合值已应用到侧栏输入",
        "goto": "应用配置档后打开：",
        "link_too_long": "配置档太大，无法放入链接：请保存到团队目录。",
        "team": "团队配置档",
        "team_none": "没有团队配置档（设置 RLPLAN_PRESETS_DIR 并保存一个）。",
        "team_apply": "应用所选配置档",
        "oom": "解释显存溢出（OOM）错误",
        "oom_caption": "粘贴错误信息（PyTorch 'CUDA out of memory'、vLLM / SGLang 启动失败、Ray 内存监控）。",
        "oom_text": "错误文本",
        "fixes": "按优先级排列的修复（顾问）",
        "resident": "{phase} 阶段预测常驻显存（GiB）",
        "notes": "说明",
    },
}


MAX_PROFILE_NAME_CHARS = 60


def t(key: str, **values: object) -> str:
    text = TEXT.get(state.lang(), TEXT["en"]).get(key) or TEXT["en"][key]
    return text.format(**values) if values else text


def text_input(label: str, area_key: str, upload_key: str, height: int) -> str:
    """Pasted text, or the uploaded file's (UTF-8, at most MAX_INPUT_BYTES); an error shown for anything else."""
    text = st.text_area(label, key=area_key, height=height, max_chars=MAX_INPUT_BYTES + 1)
    upload = st.file_uploader(t("upload"), key=upload_key, label_visibility="collapsed")
    if upload is not None:
        if upload.size > MAX_INPUT_BYTES:
            st.error(t("too_large", mib=MAX_INPUT_BYTES // 2**20), icon=":material/block:")
            return ""
        try:
            return upload.getvalue().decode("utf-8-sig")
        except UnicodeDecodeError:
            st.error(md(f"{upload.name}: not UTF-8 text"), icon=":material/block:")
            return ""
    if len(text) > MAX_INPUT_BYTES:
        st.error(t("too_large", mib=MAX_INPUT_BYTES // 2**20), icon=":material/block:")
        return ""
    return text


@st.cache_data(show_spinner=False, max_entries=16)
def run_calibration(base: Scenario, script: str, log: str, warmup: int) -> tuple[Any, list[str]]:
    """(scenario, calibration) or (None, problems); cached because the page reruns on every widget change."""
    try:
        scenario = load_scenario_with_warnings(base, verl_overrides=script)[0] if script.strip() else base
        c = calibrate(scenario, summarize(parse_log(log, "log"), None if warmup < 0 else warmup))
    except InputError as err:
        return None, list(err.problems)
    return (scenario, c), []


def phase_figure(c: Calibration) -> go.Figure:
    names = [p.name for p in c.phases]
    fig = go.Figure()
    series = (
        (t("predicted"), [p.predicted_s for p in c.phases], "#90a4ae"),
        (t("measured"), [p.measured_s for p in c.phases], "#1565c0"),
        (t("fitted"), [p.fitted_s for p in c.phases], "#ef6c00"),
    )
    for label, values, colour in series:
        fig.add_trace(go.Bar(name=label, x=names, y=values, marker_color=colour))
    fig.update_layout(barmode="group", height=360, margin={"l": 10, "r": 10, "t": 30, "b": 10}, yaxis_title="s")
    return fig


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def apply_profile(scenario: Scenario, overrides: dict[str, float], label: str, linked: bool) -> None:
    """Set the profile's values in the inputs and show it as the sidebar selector's choice."""
    state.apply_scenario(load_scenario(scenario, overrides))
    profiles.remember(label, overrides, linked=linked)
    st.toast(t("applied"), icon=":material/check_circle:")


def show_calibration(scenario: Scenario, c: Calibration) -> None:
    st.markdown(f"**{t('chart')}**")
    st.plotly_chart(phase_figure(c), width="stretch", key="cal_chart")
    rows = {
        p.name: {
            "predicted s": p.predicted_s,
            "measured s": p.measured_s,
            "ratio": p.ratio,
            "fitted s": p.fitted_s,
            "residual": c.residuals.get(p.name),  # measured / fitted - 1
            "gap": p.explanation,
        }
        for p in c.phases
    }
    st.dataframe(pd.DataFrame(rows).T, width="stretch")
    m = c.memory
    st.caption(
        md(
            t(
                "memory",
                pa=m.predicted_gib,
                ma=fmt(m.measured_gib),
                pr=m.predicted_reserved_gib,
                mr=fmt(m.measured_reserved_gib),
            ),
            limit=500,
        )
    )
    h = c.host
    st.caption(md(t("host", p=fmt(h.predicted_gib), m=fmt(h.measured_gib), note=h.note), limit=500))
    left, right = st.columns(2)
    with left:
        st.markdown(f"**{t('fitted_values')}**")
        detail = {d.field: {"value": d.value, "±": d.uncertainty, "default": d.default} for d in c.fitted_detail}
        for k, v in c.fitted.items():
            detail.setdefault(k, {"value": v, "±": None, "default": None})
        st.dataframe(pd.DataFrame(detail).T, width="stretch")
    with right:
        st.markdown(f"**{t('refused')}**")
        for k, why in c.refused.items():
            st.caption(md(f"{k}: {why}", limit=400))
    name = st.text_input(t("name"), key=keys.CAL_NAME, max_chars=MAX_PROFILE_NAME_CHARS, help=t("name_help"))
    profile = make_profile(scenario, c, name=name)
    b1, b2, b3 = st.columns(3)
    if b1.button(t("save"), key=keys.CAL_SAVE, icon=":material/save:"):
        save(profile, overwrite=False)
    if st.session_state.get(keys.CAL_PENDING) == profile.id:  # the file exists: overwrite only when confirmed
        st.warning(md(t("exists", name=f"{profile.id}.yaml")), icon=":material/warning:")
        if st.button(t("overwrite"), key=keys.CAL_OVERWRITE):
            save(profile, overwrite=True)
    b2.download_button(
        t("download"),
        data=profile_yaml(profile),
        file_name=f"{profile.id}.yaml",
        mime="application/yaml",
        key=keys.CAL_DOWNLOAD,
        on_click="ignore",
    )
    b3.button(
        t("apply"),
        key=keys.CAL_APPLY,
        on_click=apply_profile,
        args=(scenario, profile_overrides(profile), profile.id + profiles.FROM_LINK, True),
        type="primary",
    )
    page_links(profile.id, profile.fitted)


def save(profile: Any, *, overwrite: bool) -> None:
    """Save into the team directory; an existing file asks for confirmation first (``CAL_PENDING``)."""
    ss = st.session_state
    if not overwrite and team_profile_exists(profile.id):
        ss[keys.CAL_PENDING] = profile.id
        return
    try:
        path = save_team_profile(profile, overwrite=overwrite)
    except InputError as err:
        st.error(md("; ".join(err.problems)), icon=":material/block:")
        return
    ss[keys.CAL_PENDING] = ""
    profiles.team_fitted.clear()  # the sidebar selector lists it from the next rerun
    st.success(md(t("saved", name=path.name)))


def page_links(profile_id: str, fitted: dict[str, float]) -> None:
    """Links to Estimate and Planner that apply the profile there (the ``cal`` parameter, ui/profiles.py)."""
    code = profiles.link_code(profile_id, fitted)
    if code is None:  # cannot happen for the fields a profile holds; said rather than hidden
        st.caption(t("link_too_long"))
        return
    st.caption(t("goto"))
    c1, c2 = st.columns(2)
    query = {profiles.PARAM: code}
    c1.page_link("ui/pages/estimate.py", label="Estimate", icon=":material/memory:", query_params=query)
    c2.page_link("ui/pages/planner.py", label="Planner", icon=":material/dns:", query_params=query)


def team_panel(scenario: Scenario) -> None:
    st.markdown(f"**{t('team')}**")
    team, problems = team_profiles()
    for p in problems[:10]:
        st.caption(md(p))
    if not team:
        st.caption(t("team_none"))
        return
    pid = st.selectbox(t("team"), sorted(team), key=keys.CAL_PROFILE, label_visibility="collapsed")
    chosen = team[pid]
    st.caption(md(f"{chosen.name}: " + ", ".join(f"{k}={v:g}" for k, v in chosen.fitted.items()), limit=500))
    st.button(
        t("team_apply"),
        key=keys.CAL_PROFILE_APPLY,
        on_click=apply_profile,
        args=(scenario, profile_overrides(chosen), chosen.id, False),
    )
    page_links(chosen.id, dict(chosen.fitted))


def show_explanation(e: OomExplanation) -> None:
    st.warning(md(e.summary, limit=600), icon=":material/memory:")
    c1, c2, c3 = st.columns(3)
    c1.metric("phase", e.phase)
    c2.metric("failed allocation", "-" if e.allocation_gib is None else f"{e.allocation_gib:.2f} GiB")
    c3.metric("matched (predicted)", "-" if e.matched_gib is None else f"{e.matched_gib:.2f} GiB", help=e.component)
    if e.resident_gib:
        st.caption(
            md(
                t("resident", phase=e.phase) + ": " + ", ".join(f"{k} {v:.2f}" for k, v in e.resident_gib.items()),
                limit=800,
            )
        )
    if e.fixes:
        st.markdown(f"**{t('fixes')}**")
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "fix": f.title,
                        "fits": f.fits,
                        "phase GiB after": f.phase_gib_after,
                        "verl overrides": " ".join(f.verl_overrides),
                    }
                    for f in e.fixes
                ],
                index=[f.rank for f in e.fixes],
            ),
            width="stretch",
        )
    for n in e.notes:
        st.caption(md(n, limit=500))


def oom_panel(scenario: Scenario) -> None:
    st.markdown(f"#### {t('oom')}")
    st.caption(t("oom_caption"))
    text = text_input(t("oom_text"), keys.CAL_OOM_TEXT, keys.CAL_OOM_UPLOAD, 160)
    if text.strip():
        try:
            show_explanation(explain_oom(scenario, text))
        except InputError as err:
            st.error(md("; ".join(err.problems), limit=600), icon=":material/help:")


built = state.build_scenario()
inputs.render_sidebar(built)
state.sync_url(built)
st.markdown(f"#### {t('title')}")
render.notices()
if built.scenario is None:
    render.problems(built)
    st.stop()
base = built.scenario
st.caption(t("caption"))
col_script, col_log = st.columns(2, gap="large")
with col_script:
    script = text_input(t("script"), keys.CAL_SCRIPT_TEXT, keys.CAL_SCRIPT_UPLOAD, 160)
with col_log:
    log = text_input(t("log"), keys.CAL_LOG_TEXT, keys.CAL_LOG_UPLOAD, 160)
warmup = int(st.number_input(t("warmup"), min_value=-1, max_value=1000, value=-1, step=1, key=keys.CAL_WARMUP))
if log.strip():
    result, problems = run_calibration(base, script, log, warmup)
    if result is None:
        st.error(md("; ".join(problems), limit=800), icon=":material/help:")
    else:
        show_calibration(*result)
team_panel(base)
st.divider()
oom_panel(base)
