"""Planner (calculator/planning/planner.py, issue #6): one row per GPU, every configuration feasible when estimated
again, the plan --json contract (DESIGN.md 6.4), CSV / Markdown, the verl keys, the size table, bad input. The
search itself is tested in tests/planning/test_search.py, the CLI in tests/cli/test_plan.py."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from calculator import InputError, estimate, load_scenario, plan
from calculator.inputs.presets import gpu_presets
from calculator.planning.fit import batch_geometry_problem, fit_check, parallel_problem
from calculator.planning.formats import plan_to_csv, plan_to_markdown
from calculator.planning.search import GpuSearch
from calculator.planning.settings import cluster_overrides
from calculator.planning.size_table import size_table, size_table_to_markdown
from calculator.planning.table import PlanTableRow, plan_table
from calculator.verl import native_to_verl, native_to_verl_items, verl_to_native
from tests.support.paths import ROOT

BASE = "qwen2.5-7b-grpo-8xh100"
MARGIN = 0.10


@pytest.fixture(scope="module")
def base():
    return load_scenario(BASE)


@pytest.fixture(scope="module")
def full_plan(base):
    return plan(base)


# ---- the plan ------------------------------------------------------------------------------------


def test_plan_has_one_row_per_gpu_preset(full_plan):
    assert sorted(r.gpu for r in full_plan.rows) == sorted(gpu_presets())
    assert full_plan.elapsed_s > 0 and full_plan.num_estimates > 0


def test_every_configuration_is_feasible_when_estimated_again(base, full_plan):
    """Rebuild each row's configurations from the verl overrides alone and estimate them again."""
    for row in full_plan.rows:
        for cfg in (row.recommended, row.min_config):
            if cfg is None:
                continue
            s = load_scenario(base, overrides={"hardware.gpu": row.gpu}, verl_overrides=cfg.verl_overrides)
            assert s.hardware.num_gpus == cfg.num_gpus
            report = estimate(s)
            fit = fit_check(report, s, full_plan.margin)
            assert fit.fits, (row.gpu, cfg.num_gpus, fit.reasons)
            assert report.peak.gib_per_gpu == pytest.approx(cfg.peak_gib_per_gpu, rel=1e-9)
            assert batch_geometry_problem(s) is None
            assert parallel_problem(s, GpuSearch(s, row.gpu, max_gpus=8, margin=0.1, allow_lora=False).arch) is None


def test_min_settings_are_those_of_the_minimum(full_plan):
    for row in full_plan.rows:
        if row.min_gpus is None:
            assert row.min_config is None and row.min_settings == {} and row.note
            continue
        assert row.min_config.num_gpus == row.min_gpus
        assert row.min_settings == row.min_config.settings
        assert row.recommended.num_gpus >= row.min_gpus


def test_prices_are_editable(base):
    cheap = plan(base, gpus=["h100-80gb"], hourly_prices_usd={"h100-80gb": 1.0}).rows[0]
    assert cheap.hourly_price_usd == 1.0
    assert cheap.recommended.step_s is not None
    assert cheap.recommended.cost_per_step == pytest.approx(
        cheap.recommended.step_s * cheap.recommended.num_gpus / 3600
    )


def test_without_step_time_the_minimum_is_recommended(base, monkeypatch):
    import calculator.planning.search as ps
    import calculator.planning.space as space

    real = ps.estimate
    monkeypatch.setattr(ps, "estimate", lambda s, **kw: real(s, **kw).model_copy(update={"time": None}))
    monkeypatch.setattr(space, "with_step_time", lambda report, s: report)  # no time model for fitting ones either
    p = plan(base, gpus=["a100-80gb"])
    row = p.rows[0]
    assert not p.has_step_time
    assert row.recommended.num_gpus == row.min_gpus
    assert row.recommended.step_s is None and row.recommended.cost_per_step is None
    assert "(no step-time model" in plan_to_markdown(p)


def test_lora_only_when_allowed_and_needed(base):
    big = load_scenario(base, overrides={"model.path": "qwen2.5-32b"})
    without = plan(big, gpus=["a100-40gb"], max_gpus=64).rows[0]
    with_lora = plan(big, gpus=["a100-40gb"], max_gpus=64, allow_lora=True).rows[0]
    assert all(not c.uses_lora for c in (without.recommended, without.min_config) if c)
    if without.min_gpus is None or (with_lora.min_gpus is not None and with_lora.min_gpus < without.min_gpus):
        assert with_lora.min_config.uses_lora
    else:
        assert not with_lora.recommended.uses_lora  # full fine-tuning fits: LoRA is not proposed
    assert with_lora.min_gpus is not None and (without.min_gpus is None or with_lora.min_gpus <= without.min_gpus)


def test_nothing_fits_gives_null_and_a_note(base):
    huge = load_scenario(base, overrides={"model.path": "qwen2.5-72b"})
    row = plan(huge, gpus=["a10g-24gb"], max_gpus=4).rows[0]  # 72B on at most 4 x 24 GB
    assert row.min_gpus is None and row.recommended is None
    assert "nothing fits up to 4 GPUs" in row.note


# ---- JSON contract, CSV, Markdown ----------------------------------------------------------------


def test_plan_json_contract(full_plan):
    d = full_plan.model_dump(mode="json")
    assert {"rows", "elapsed_s"} <= set(d) and isinstance(d["elapsed_s"], float)
    json.dumps(d)
    for row in d["rows"]:
        assert {"gpu", "min_gpus", "min_settings", "recommended"} <= set(row)
        assert row["gpu"] in gpu_presets()
        assert row["min_gpus"] is None or isinstance(row["min_gpus"], int)
        rec = row["recommended"]
        if rec is not None:
            assert {"num_gpus", "settings", "peak_gib_per_gpu", "step_s", "cost_per_step"} <= set(rec)
            assert all("." in k for k in rec["settings"])


def test_csv_round_trips(full_plan):
    rows = list(csv.DictReader(io.StringIO(plan_to_csv(full_plan))))
    assert len(rows) == len(full_plan.rows)
    assert list(rows[0]) == list(PlanTableRow.model_fields)
    for row, r in zip(rows, full_plan.rows, strict=True):
        assert row["gpu"] == r.gpu
        assert row["min_gpus"] == ("" if r.min_gpus is None else str(r.min_gpus))
        if r.recommended is not None:
            assert int(row["recommended_gpus"]) == r.recommended.num_gpus
            assert float(row["peak_gib_per_gpu"]) == pytest.approx(r.recommended.peak_gib_per_gpu, abs=0.01)


def test_markdown_table_shape(full_plan):
    md = plan_to_markdown(full_plan)
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(full_plan.rows)
    ncols = table[0].count("|")
    assert all(line.count("|") - line.count("\\|") == ncols for line in table)


def test_table_sorting(full_plan):
    rows = plan_table(full_plan, sort_by="min_gpus")
    values = [r.min_gpus for r in rows if r.min_gpus is not None]
    assert values == sorted(values)
    rows = plan_table(full_plan, sort_by="step_s", descending=True)
    values = [r.step_s for r in rows if r.step_s is not None]
    assert values == sorted(values, reverse=True)
    with pytest.raises(InputError, match="sort_by"):
        plan_table(full_plan, sort_by="nope")  # type: ignore[arg-type]


# ---- verl keys -----------------------------------------------------------------------------------


def test_settings_keys_map_back_to_the_same_fields(full_plan):
    keys = {k for r in full_plan.rows for c in (r.recommended, r.min_config) if c for k in c.settings}
    assert keys
    for k in keys:
        native = verl_to_native(k)
        assert native is not None and native_to_verl(native) == k


@pytest.mark.parametrize(("num_gpus", "per_node"), [(1, 8), (4, 8), (8, 8), (16, 8), (24, 8), (12, 6)])
def test_cluster_overrides_match_the_verl_mapping(num_gpus, per_node):
    s = load_scenario(BASE, overrides={"hardware.gpus_per_node": per_node, "hardware.num_gpus": per_node})
    assert list(cluster_overrides(num_gpus, per_node).items()) == native_to_verl_items("hardware.num_gpus", num_gpus, s)


# ---- size table ----------------------------------------------------------------------------------


def test_size_table(base):
    t = size_table(base, "a100-80gb", models=("qwen2.5-1.5b", "qwen2.5-7b", "qwen2.5-14b"), max_gpus=256)
    assert [(r.model, r.algorithm) for r in t.rows[:3]] == [
        ("qwen2.5-1.5b", "GRPO"),
        ("qwen2.5-1.5b", "PPO"),
        ("qwen2.5-1.5b", "GRPO + LoRA"),
    ]
    for alg in ("GRPO", "PPO", "GRPO + LoRA"):
        mins = [r.min_gpus for r in t.rows if r.algorithm == alg]
        assert all(m is not None for m in mins)
        assert mins == sorted(mins), f"{alg}: a bigger model never needs fewer GPUs"
    for r in t.rows:
        assert r.recommended.uses_lora == (r.algorithm == "GRPO + LoRA")
    md = size_table_to_markdown(t)
    assert md.count("\n| Qwen2.5") == len(t.rows)


def test_size_table_bad_input(base):
    with pytest.raises(InputError) as err:
        size_table(base, "nope")
    assert err.value.problems[0].startswith("gpu_id:")
    with pytest.raises(InputError, match="models: unknown model preset"):
        size_table(base, "h100-80gb", models=("gpt-5",))


# ---- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"gpus": ["nope"]}, "gpus"),
        ({"gpus": []}, "gpus"),
        ({"gpus": "h100-80gb"}, "gpus"),
        ({"max_gpus": 0}, "max_gpus"),
        ({"max_gpus": 10**6}, "max_gpus"),
        ({"margin": 1.0}, "margin"),
        ({"margin": -0.1}, "margin"),
        ({"hourly_prices_usd": {"h100-80gb": -1}}, "hourly_prices_usd.h100-80gb"),
    ],
)
def test_bad_input_names_the_field(base, kwargs, field):
    with pytest.raises(InputError) as err:
        plan(base, **kwargs)
    assert any(p.startswith(f"{field}:") for p in err.value.problems)


def test_bad_inputs_are_all_reported(base):
    with pytest.raises(InputError) as err:
        plan(base, gpus=["nope"], margin=2.0)
    assert len(err.value.problems) == 2


def test_planner_is_pure():
    code = "import sys, calculator.planning.planner, calculator.planning.advisor; print('streamlit' in sys.modules or 'plotly' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "False"


@pytest.mark.slow  # runs the whole planner benchmark once
def test_benchmark_runs():
    r = subprocess.run(
        [sys.executable, "benchmarks/bench_planner.py", "--repeat", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "one full table" in r.stdout


def test_v100_is_not_planned_with_bf16():
    """Issue 13 item 10: V100 has no bf16 (vLLM refuses bfloat16 below compute capability 8.0); verl runs bf16
    by default, so the row is excluded with the reason, never recommended."""
    p = plan(load_scenario(BASE), gpus=["v100-16gb", "h100-80gb"], max_gpus=16)
    v100 = next(r for r in p.rows if r.gpu == "v100-16gb")
    assert v100.recommended is None and v100.min_gpus is None
    assert v100.note.startswith("excluded: V100-SXM2-16GB has no bf16")
    assert p.rows[-1].gpu == "v100-16gb"  # rows without a configuration go last


def test_megatron_plan_says_which_layouts_it_searches():
    """A Megatron plan's rules say the layouts are searched and the bounds (calculator.planning.layouts); an FSDP
    plan's rules say nothing about Megatron."""
    from calculator import load_scenario
    from calculator.planning.planner import plan

    meg = plan(load_scenario(BASE, overrides={"actor.strategy": "megatron"}), gpus=["h100-80gb"], max_gpus=16)
    assert "Megatron layouts: the scenario's TP / PP / EP first" in meg.rules
    assert "TP 1/2/4/8 (within a node" in meg.rules and "PP 1/2/4/8/16" in meg.rules
    assert "not searched" not in meg.rules
    assert "Megatron" not in plan(load_scenario(BASE), gpus=["h100-80gb"], max_gpus=16).rules
