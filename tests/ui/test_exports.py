"""Exports describe themselves (issue 13 item 12): PNG headers and notes in the figure layout, the Markdown title,
the scenario YAML. The PNG bytes themselves are checked in tests/system/test_png_export.py."""

from __future__ import annotations

import re

import yaml

from calculator import estimate, load_scenario
from tests.support.paths import ROOT
from ui import export, figures, summary
from ui.figures_time import step_time_figure, step_time_page_figure
from ui.i18n import tr

PRESET = "qwen2.5-7b-grpo-8xh100"
BIG = {"model.path": "llama3.1-70b", "hardware.num_gpus": 32, "hardware.gpu": "h200-141gb"}


def test_memory_png_at_max_lengths_says_so() -> None:
    report = estimate(load_scenario(PRESET))
    fig = export.with_header(figures.memory_figure(report, worst=True), "Qwen · 8 × H100", tr("en", "png.case.worst"))
    text = fig.layout.title.text
    assert "<b>Qwen · 8 × H100</b>" in text and "max lengths" in text
    assert fig.layout.margin.t == 40 + 24 * 2  # two header lines


def test_header_is_plain_text() -> None:
    fig = export.with_header(figures.memory_figure(estimate(load_scenario(PRESET))), "<b style='x'>m</b>")
    assert "&lt;b style='x'&gt;m&lt;/b&gt;" in fig.layout.title.text


def test_step_time_png_keeps_the_total_and_the_page_copy_does_not_change_it() -> None:
    report = estimate(load_scenario(PRESET))
    fig = step_time_figure(report)
    page = step_time_page_figure(fig)
    assert page.layout.title.text is None
    total = f"{report.time.step_s:.1f} s"
    assert total in fig.layout.title.text  # the export's figure was not mutated by the page copy
    assert total in export.with_header(fig, "scenario").layout.title.text


def test_page_step_time_figure_is_tall_enough_for_its_legend() -> None:
    fig = step_time_figure(estimate(load_scenario(PRESET)))
    page = step_time_page_figure(fig)
    entries = [t for t in page.data if t.showlegend is not False]
    # two entries per row at ~22 px, the legend takes at most half the figure (plotly's cap before scrolling)
    assert page.layout.height - fig.layout.height >= 22 * len(entries) // 2
    assert page.layout.legend.entrywidthmode == "fraction" and page.layout.legend.entrywidth == 0.5


def test_markdown_title_follows_changes() -> None:
    base = load_scenario(PRESET)
    s = load_scenario(PRESET, overrides=BIG)
    report = estimate(s)
    md = summary.markdown_summary(s, report, base=base)
    first = md.splitlines()[0]
    assert "Llama-3.1-70B, 32 x H200-SXM-141GB (based on preset Qwen2.5-7B GRPO, 8 x H100)" in first
    assert summary.markdown_summary(base, estimate(base), base=base).splitlines()[0].endswith(base.name)


def test_scenario_yaml_always_writes_model_and_hardware() -> None:
    s = load_scenario(PRESET)
    data = yaml.safe_load(summary.scenario_yaml(s))
    assert data["model"]["path"] == "qwen2.5-7b"
    assert {k: data["hardware"][k] for k in ("gpu", "num_gpus", "gpus_per_node")} == {
        "gpu": "h100-80gb",
        "num_gpus": 8,
        "gpus_per_node": 8,
    }
    assert load_scenario(data) == s


def test_phase_ticks_are_horizontal_two_line_labels() -> None:
    report = estimate(load_scenario(PRESET, overrides={"algorithm.adv_estimator": "gae"}))
    fig = figures.memory_figure(report)
    assert fig.layout.xaxis.tickangle == 0
    assert "update_<br>actor" in fig.layout.xaxis.ticktext
    # "old_" + "log_prob" and "old_log_" + "prob" both have an 8-character longest line: the first cut wins
    assert figures.phase_tick("old_log_prob") == "old_<br>log_prob"
    assert figures.phase_tick("rollout") == "rollout"


def test_figures_name_the_cjk_font_the_image_installs() -> None:
    """Chinese in server-side PNGs: the Dockerfile installs a CJK font and the figures ask for it by family."""
    families = {"fonts-wqy-microhei": "WenQuanYi Micro Hei", "fonts-noto-cjk": "Noto Sans CJK SC"}
    dockerfile = (ROOT / "Dockerfile").read_text()
    installed = [fam for pkg, fam in families.items() if re.search(rf"\b{pkg}\b", dockerfile)]
    assert installed, "the Dockerfile installs no CJK font"
    for fam in installed:
        assert fam in export.CJK_FONT_FAMILIES
    assert figures.FONT["family"] == export.FONT_FAMILY
    assert export.FONT_FAMILY.index("WenQuanYi") < export.FONT_FAMILY.index("sans-serif")
