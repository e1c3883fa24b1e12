"""Text exports (pure): the scenario as YAML, a Markdown summary for planning documents, tables of a report."""

from __future__ import annotations

from typing import Any

from calculator import PhaseOut, Report, Scenario, dump_yaml, format_count, scenario_title
from ui.fields import all_fields, encode_value, scenario_flat
from ui.figures import component_formula, component_order
from ui.i18n import tr


def scenario_yaml(s: Scenario) -> str:
    """The scenario as YAML that ``load_scenario(path)`` / ``--set``-free CLI use reads back unchanged
    (only fields that differ from the model defaults)."""
    data = s.model_dump(mode="json", exclude_defaults=True)
    # The model and the GPUs are always written, even where they equal the field defaults: a reader of the file
    # must not have to know the defaults to see what run it describes.
    full = s.model_dump(mode="json")
    data["model"] = {"path": full["model"]["path"], **data.get("model", {})}
    data["hardware"] = full["hardware"]
    order = ["name", "description", "model", "hardware"]
    data = {k: data[k] for k in order if k in data} | {k: v for k, v in data.items() if k not in order}
    return dump_yaml(data, sort_keys=False, width=110)  # every string reads back (U+2028 / U+0085 escaped)


def non_default_settings(s: Scenario) -> dict[str, Any]:
    """Dotted fields whose value differs from the Scenario field default (what defines this run)."""
    flat = scenario_flat(s)
    specs = all_fields()
    return {
        k: v
        for k, v in flat.items()
        if k in specs and k not in ("name", "description") and encode_value(v) != encode_value(specs[k].default)
    }


def breakdown_rows(phase: PhaseOut, lang: str = "en") -> list[dict[str, Any]]:
    """One row per component of a phase, in stacking order (largest first is left to the table)."""
    rows = []
    for name in component_order([phase]):
        gib = phase.components[name]
        role = next((c.role for c in phase.details if c.name == name), "")
        rows.append(
            {
                tr(lang, "table.component"): name,
                tr(lang, "table.role"): role,
                tr(lang, "table.gib"): round(gib, 3),
                tr(lang, "table.share"): round(gib / phase.total_gib * 100, 1) if phase.total_gib else 0.0,
                tr(lang, "table.formula"): component_formula(phase, name),
            }
        )
    rows.sort(key=lambda r: -r[tr(lang, "table.gib")])
    return rows


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def title(s: Scenario, report: Report, base: Scenario | None) -> str:
    """The scenario's display name: the preset's name, or what is in use "(based on preset X)" once changed."""
    hw = report.hardware
    return scenario_title(s, base, model_name=report.model.name, num_gpus=hw.num_gpus, gpu_name=hw.gpu_name or hw.gpu)


def markdown_summary(
    s: Scenario, report: Report, lang: str = "en", algorithm: str | None = None, base: Scenario | None = None
) -> str:
    """A self-contained Markdown summary: settings, key figures, the peak phase's components, all phases.
    ``base``: the preset the inputs started from (the title says "based on preset X" once they differ)."""
    r = report
    t = lambda key, **kw: tr(lang, key, **kw)  # noqa: E731
    fits = t("md.fits") if r.peak.fits else f"**{t('md.does_not_fit')}** ({t('md.why')} ↓)"
    worst_fits = t("md.fits") if r.peak.worst_case_fits else t("md.does_not_fit")
    lines = [
        f"# {t('md.title')}: {_md_escape(title(s, r, base))}",
        "",
        f"_{s.description}_" if s.description else "",
        "",
        f"## {t('md.key_figures')}",
        "",
        "| | |\n|---|---|",
        f"| {t('md.model')} | {r.model.name} ({format_count(r.model.total_params)} {t('md.params')}"
        + (
            f", {format_count(r.model.active_params)} {t('md.active')}"
            if r.model.active_params != r.model.total_params
            else ""
        )
        + ") |",
        f"| {t('md.hardware')} | {r.hardware.num_gpus} × {r.hardware.gpu_name or r.hardware.gpu} "
        f"({r.hardware.usable_memory_gib:.2f} GiB {t('md.usable')}, {r.hardware.num_nodes} {t('md.nodes')}) |",
        f"| {t('md.algorithm')} | {algorithm or s.algorithm.adv_estimator} (`adv_estimator={s.algorithm.adv_estimator}`), "
        f"{t('md.roles')}: {', '.join(r.roles)} |",
        f"| {t('md.peak')} | **{r.peak.gib_per_gpu:.2f} GiB** {t('md.in_phase')} `{r.peak.phase}` — {fits}, "
        f"{t('md.headroom')} {r.peak.headroom_gib:.2f} GiB |",
        f"| {t('md.worst')} | {r.peak.worst_case_gib_per_gpu:.2f} GiB {t('md.in_phase')} `{r.peak.worst_case_phase}` — {worst_fits} |",
        f"| {t('md.rollout')} | {r.rollout.num_replicas} × {r.rollout.engine}, KV cache {r.rollout.kv_cache_gib_per_gpu:.2f} GiB/GPU, "
        f"{r.rollout.kv_cache_tokens_per_replica:,} {t('md.tokens_per_replica')}; "
        f"{t('md.concurrency')} {r.rollout.max_concurrent_sequences_per_replica} "
        f"({t('md.at_max_len')} {r.rollout.max_concurrent_sequences_per_replica_at_max_len}) / "
        f"{r.rollout.sequences_per_replica} {t('md.sequences_per_replica')} |",
    ]
    if r.time is not None and r.time.step_s is None:
        lines.append(f"| {t('md.step_time')} | {t('md.step_none')} |")
    elif r.time is not None:
        lines.append(
            f"| {t('md.step_time')} | {r.time.step_s:.1f} s ({r.time.tokens_per_s:,.0f} {t('md.tokens_per_s')}) |"
        )
    if r.host is not None:
        h = r.host
        lines.append(
            f"| {t('md.host')} | {h.total_gib_per_node:.1f} / {h.usable_ram_gib_per_node:.1f} GiB "
            f"({h.ram_gib_per_node:.0f} GiB) — {t('md.fits') if h.fits else t('md.does_not_fit')} |"
        )
    lines += _reason_lines(r, t)
    peak = next(p for p in r.phases if p.name == r.peak.phase)
    lines += ["", f"## {t('md.peak_breakdown', phase=peak.name)}", ""]
    lines += [
        f"| {t('table.component')} | {t('table.role')} | GiB | {t('table.share')} | {t('table.formula')} |",
        "|---|---|---:|---:|---|",
    ]
    for row in breakdown_rows(peak, lang):
        v = list(row.values())
        lines.append(f"| `{v[0]}` | {v[1]} | {v[2]:.2f} | {v[3]:.1f} | {_md_escape(v[4])} |")
    lines += [
        "",
        f"## {t('md.phases')}",
        "",
        f"| {t('md.phase')} | {t('md.total')} (GiB) | {t('md.largest')} |",
        "|---|---:|---|",
    ]
    for p in r.phases:
        top = sorted(p.components.items(), key=lambda kv: -kv[1])[:3]
        lines.append(f"| `{p.name}` | {p.total_gib:.2f} | " + ", ".join(f"{n} {g:.1f}" for n, g in top) + " |")
    if r.time is not None and r.time.phases_s:
        lines += ["", f"## {t('md.time_phases')}", "", f"| {t('md.phase')} | s |", "|---|---:|"]
        lines += [f"| `{k}` | {'—' if v is None else f'{v:.2f}'} |" for k, v in r.time.phases_s.items()]
    settings = non_default_settings(s)
    lines += ["", f"## {t('md.settings')}", "", f"| {t('md.field')} | {t('md.value')} |", "|---|---|"]
    for k, v in settings.items():
        value = "(config.json)" if k == "model.config" else encode_value(v)
        lines.append(f"| `{k}` | `{_md_escape(value)}` |")
    if r.warnings:
        lines += ["", f"## {t('md.warnings')}", ""] + [f"- {_md_escape(w)}" for w in r.warnings]
    lines += ["", f"_{t('md.footer', version=r.verl_version)}_", ""]
    return "\n".join(line for line in lines if line is not None)


def _reason_lines(r: Report, t: Any) -> list[str]:
    """The verdict's reasons (``peak.reasons``, else ``peak.worst_case_reasons``), one bullet each."""
    if r.peak.reasons:
        return ["", f"## {t('md.why')}", ""] + [f"- {_md_escape(x)}" for x in r.peak.reasons]
    if r.peak.worst_case_reasons:
        return ["", f"## {t('md.why_worst')}", ""] + [f"- {_md_escape(x)}" for x in r.peak.worst_case_reasons]
    return []


def comparison_markdown(items: list[tuple[str, Scenario, Report]], diff_keys: list[str], lang: str = "en") -> str:
    t = lambda key, **kw: tr(lang, key, **kw)  # noqa: E731
    head = "| | " + " | ".join(label for label, _, _ in items) + " |"
    sep = "|---|" + "---:|" * len(items)
    lines = [f"# {t('cmp.md_title')}", "", head, sep]
    lines.append(f"| {t('md.peak')} (GiB) | " + " | ".join(f"{r.peak.gib_per_gpu:.2f}" for _, _, r in items) + " |")
    lines.append(f"| {t('md.peak_phase')} | " + " | ".join(f"`{r.peak.phase}`" for _, _, r in items) + " |")
    lines.append(
        f"| {t('md.fits_q')} | "
        + " | ".join(
            t("md.fits") if r.peak.fits else t("md.does_not_fit") + ": " + _md_escape("; ".join(r.peak.reasons))
            for _, _, r in items
        )
        + " |"
    )
    lines.append(
        f"| {t('md.worst')} (GiB) | " + " | ".join(f"{r.peak.worst_case_gib_per_gpu:.2f}" for _, _, r in items) + " |"
    )
    phases: list[str] = []
    for _, _, r in items:
        phases += [p.name for p in r.phases if p.name not in phases]
    for ph in phases:
        vals = []
        for _, _, r in items:
            p = next((p for p in r.phases if p.name == ph), None)
            vals.append(f"{p.total_gib:.2f}" if p else "—")
        lines.append(f"| `{ph}` (GiB) | " + " | ".join(vals) + " |")
    lines += [
        "",
        f"## {t('cmp.diff')}",
        "",
        head.replace("| |", f"| {t('md.field')} |", 1),
        "|---|" + "---|" * len(items),
    ]
    flats = [scenario_flat(s) for _, s, _ in items]
    for k in diff_keys:
        vals = ["(config.json)" if k == "model.config" and f.get(k) else encode_value(f.get(k)) for f in flats]
        lines.append(f"| `{k}` | " + " | ".join(f"`{_md_escape(v)}`" for v in vals) + " |")
    return "\n".join(lines) + "\n"
