"""verl: export the current scenario as launch-script overrides; import a launch script into the inputs."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from calculator import MAX_INPUT_BYTES, InputError, Scenario, format_overrides, load_scenario_with_warnings
from ui import inputs, keys, linkcodec, render, state
from ui.fields import encode_value, scenario_flat, settings_diff
from ui.i18n import tr
from ui.text import md, md_lines

EXPORT_STYLES = ("command", "overrides")
MAX_NOTES = 50  # import notes shown (a pasted file can hold thousands of unknown keys)


def export_texts(s: Scenario) -> dict[str, str]:
    """The launch command and the bare overrides (calculator.verl.format_overrides)."""
    return {style: format_overrides(s, style=style) for style in EXPORT_STYLES}


@st.cache_data(show_spinner=False, max_entries=32)
def import_script(base: Scenario, text: str) -> tuple[Scenario | None, list[str], list[str]]:
    """(scenario, notes, problems) of a pasted launch script or verl YAML on top of ``base``. Cached: the
    text stays in its box and the page reruns on every widget change; parsing 2 MiB takes about a second."""
    try:
        imported, notes = load_scenario_with_warnings(base, verl_overrides=text)
    except InputError as err:
        return None, [], list(err.problems)
    except Exception as exc:  # a parser failure must not take the page down: say what, never a traceback
        return None, [], [f"{type(exc).__name__}: {exc}"]
    return imported, notes, []


def apply_imported(s: Scenario, n: int) -> None:
    state.apply_scenario(s)
    st.toast(tr(state.lang(), "verl.import_applied", n=n), icon=":material/check_circle:")


def script_from_link() -> None:
    """A launch script shared in the link (``script``, packed by ui/linkcodec.py) goes into the paste box once."""
    code = (st.session_state.get(keys.LINK_PACKED) or {}).pop("script", None)
    if not code:
        return
    text = linkcodec.unpack_text(code)
    if text is None:
        st.session_state[keys.URL_PROBLEMS] = [
            *(st.session_state.get(keys.URL_PROBLEMS) or []),
            tr(L, "url.bad_script"),
        ]
    else:
        st.session_state[keys.VERL_IMPORT_TEXT] = text[:MAX_INPUT_BYTES]


def script_link_param() -> tuple[dict[str, str], bool]:
    """({"script": packed} or {}, whether a pasted script was too long for the link)."""
    text = st.session_state.get(keys.VERL_IMPORT_TEXT) or ""
    if not text.strip() or len(text) > MAX_INPUT_BYTES:
        return {}, False
    code = linkcodec.pack_text(text)
    return ({"script": code}, False) if code else ({}, True)


L = state.lang()
script_from_link()
built = state.build_scenario()
inputs.render_sidebar(built)
link_extra, script_too_long = script_link_param()
state.sync_url(built, link_extra)

st.markdown(f"#### {tr(L, 'verl.title')}")
render.notices()
if built.scenario is None:
    render.problems(built)
    st.stop()
scenario = built.scenario

left, right = st.columns(2, gap="large")
with left:
    st.markdown(f"**{tr(L, 'verl.export')}**")
    st.caption(tr(L, "verl.export_caption"))
    try:
        texts = export_texts(scenario)
    except Exception as exc:  # the calculator raised on a valid scenario: say so, never a traceback
        st.error(md(tr(L, "verl.export_failed", why=f"{type(exc).__name__}: {exc}")))
    else:
        tabs = st.tabs([tr(L, f"verl.style.{k}") for k in texts])
        for tab, text in zip(tabs, texts.values(), strict=True):
            with tab:
                st.code(text, language="bash", wrap_lines=False)
        st.download_button(
            tr(L, "verl.dl"),
            data=texts["command"],
            file_name="verl-launch.sh",
            mime="text/x-shellscript",
            key=keys.VERL_DL_OVERRIDES,
            on_click="ignore",
            icon=":material/download:",
        )

with right:
    st.markdown(f"**{tr(L, 'verl.import')}**")
    st.caption(tr(L, "verl.import_caption"))
    text = st.text_area(
        tr(L, "verl.import_text"),
        key=keys.VERL_IMPORT_TEXT,
        height=220,
        max_chars=MAX_INPUT_BYTES + 1,  # one more than is read: a longer paste gets the size message
        placeholder="python3 -m verl.trainer.main_ppo \\\n  algorithm.adv_estimator=grpo \\\n  actor_rollout_ref.rollout.n=8 \\\n  trainer.n_gpus_per_node=8",
    )
    # The text is only parsed (calculator.verl never runs a shell): $(...) and backticks stay unresolved.
    if script_too_long:
        st.caption(tr(L, "verl.link_too_long", kib=linkcodec.MAX_LINK_PARAM_CHARS // 1024))
    if len(text) > MAX_INPUT_BYTES:  # max_chars stops the browser one character later
        st.error(tr(L, "err.text_too_large", mib=MAX_INPUT_BYTES // 2**20), icon=":material/block:")
    elif text.strip():
        imported, notes, problems = import_script(scenario, text)
        if imported is None:
            st.error("**" + tr(L, "verl.import_problems") + "**\n\n" + md_lines(problems))
        else:
            if notes:
                with st.expander(tr(L, "verl.import_notes"), expanded=True):
                    for n in notes[:MAX_NOTES]:
                        st.caption(md(n, limit=1000))
                    if len(notes) > MAX_NOTES:
                        st.caption(tr(L, "verl.more_notes", n=len(notes) - MAX_NOTES))
            before, after = scenario_flat(scenario), scenario_flat(imported)
            changed = [k for k in settings_diff([before, after]) if k not in ("name", "description")]
            if changed:
                st.markdown(f"**{tr(L, 'verl.import_changes')}**")
                st.dataframe(
                    pd.DataFrame(
                        {"→": [encode_value(before.get(k)) + " → " + encode_value(after.get(k)) for k in changed]},
                        index=changed,
                    ),
                    width="stretch",
                )
                st.button(
                    tr(L, "verl.import_apply"),
                    key=keys.VERL_IMPORT_APPLY,
                    on_click=apply_imported,
                    args=(imported, len(changed)),
                    type="primary",
                    icon=":material/input:",
                )
            else:
                st.info(tr(L, "verl.import_nochange"))
