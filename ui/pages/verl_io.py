"""verl: export the current scenario as launch-script overrides; import a launch script into the inputs."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from calculator.api import load_scenario_with_warnings
from calculator.errors import InputError
from calculator.scenario import Scenario
from ui import inputs, keys, render, state
from ui.fields import encode_value, scenario_flat, settings_diff
from ui.i18n import tr


def export_texts(s: Scenario, exporter: tuple | None, formatter: tuple | None) -> dict[str, str]:
    """The launch command and the bare overrides, from whichever exporter calculator.verl offers."""
    if formatter is not None:
        return {style: formatter[0](s, style=style) for style in ("command", "overrides")}
    result = exporter[0](s)
    if isinstance(result, str):
        return {"overrides": result}
    return {"overrides": "\n".join(f"{k}={encode_value(v)}" for k, v in result) + "\n"}


def apply_imported(s: Scenario, n: int) -> None:
    state.apply_scenario(s)
    st.toast(tr(state.lang(), "verl.import_applied", n=n), icon=":material/check_circle:")


L = state.lang()
built = state.build_scenario()
inputs.render_sidebar(built)
state.sync_url(built)

st.markdown(f"#### {tr(L, 'verl.title')}")
render.url_problems()
if built.scenario is None:
    render.problems(built)
    st.stop()
scenario = built.scenario

left, right = st.columns(2, gap="large")
with left:
    st.markdown(f"**{tr(L, 'verl.export')}**")
    st.caption(tr(L, "verl.export_caption"))
    exporter = render.optional("calculator.verl", "export_overrides")
    formatter = render.optional("calculator.verl", "format_overrides")
    if exporter is None and formatter is None:
        st.info(tr(L, "verl.export_unavailable", why="calculator.verl.export_overrides"), icon=":material/info:")
    else:
        try:
            texts = export_texts(scenario, exporter, formatter)
        except Exception as exc:  # never a traceback
            st.error(tr(L, "verl.export_failed", why=f"{type(exc).__name__}: {exc}"))
        else:
            tabs = st.tabs([tr(L, f"verl.style.{k}") for k in texts])
            for tab, text in zip(tabs, texts.values(), strict=True):
                with tab:
                    st.code(text, language="bash", wrap_lines=False)
            st.download_button(
                tr(L, "verl.dl"),
                data=texts.get("command") or next(iter(texts.values())),
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
        placeholder="python3 -m verl.trainer.main_ppo \\\n  algorithm.adv_estimator=grpo \\\n  actor_rollout_ref.rollout.n=8 \\\n  trainer.n_gpus_per_node=8",
    )
    if text.strip():
        try:
            imported, notes = load_scenario_with_warnings(scenario, verl_overrides=text)
        except InputError as err:
            st.error("**" + tr(L, "verl.import_problems") + "**\n\n" + "\n".join(f"- {p}" for p in err.problems))
        except Exception as exc:  # never a traceback
            st.error(f"{type(exc).__name__}: {exc}")
        else:
            if notes:
                with st.expander(tr(L, "verl.import_notes"), expanded=True):
                    for n in notes:
                        st.caption(n)
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
