"""Planner (issue #6): search invariants, the plan --json contract (DESIGN.md 6.4), CSV / Markdown,
the size table, bad input."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calculator import InputError, estimate, load_scenario, plan
from calculator.cli.main import main
from calculator.inputs.presets import gpu_presets
from calculator.inputs.scenario import Scenario
from calculator.planning.fit import batch_geometry_problem, fit_check, parallel_problem
from calculator.planning.planner import (
    PlanTableRow,
    cluster_overrides,
    plan_table,
    plan_to_csv,
    plan_to_markdown,
    size_table,
    size_table_to_markdown,
)
from calculator.planning.search import GpuSearch, Knobs, gpu_count_ladder, search_gpu, selection_key
from calculator.verl import native_to_verl, native_to_verl_items, verl_to_native
from tests.support.paths import ROOT
from tests.support.strategies import scenario_dicts

BASE = "qwen2.5-7b-grpo-8xh100"
MARGIN = 0.10
# (scenario preset, GPU) pairs whose minimum is above one GPU, so a previous count exists.
MINIMA = [
    (BASE, "a100-40gb"),
    (BASE, "rtx4090-24gb"),
    ("qwen2.5-7b-ppo-8xh100", "l40s-48gb"),
    ("qwen3-30b-a3b-grpo-16xh100", "h100-80gb"),
]


@pytest.fixture(scope="module")
def base():
    return load_scenario(BASE)


@pytest.fixture(scope="module")
def full_plan(base):
    return plan(base)


def _search(scenario_id: str, gpu: str) -> tuple[GpuSearch, object]:
    s = load_scenario(scenario_id)
    srch = GpuSearch(s, gpu, max_gpus=1024, margin=MARGIN, allow_lora=False)
    return srch, search_gpu(s, gpu, max_gpus=1024, margin=MARGIN, allow_lora=False)


# ---- the GPU-count ladder ------------------------------------------------------------------------


def test_ladder_powers_of_two_then_whole_nodes():
    ladder = gpu_count_ladder(8, 1024)
    assert ladder[:6] == [1, 2, 4, 8, 16, 24]
    assert ladder[-1] == 1024 and all(n % 8 == 0 for n in ladder[3:])
    assert gpu_count_ladder(6, 20) == [1, 2, 4, 6, 12, 18]
    assert gpu_count_ladder(8, 4) == [1, 2, 4]


# ---- minimum GPU count ---------------------------------------------------------------------------


@pytest.mark.parametrize(("scenario_id", "gpu"), MINIMA)
def test_minimum_fits_and_previous_count_frontier_does_not(scenario_id, gpu):
    srch, res = _search(scenario_id, gpu)
    assert res.minimum is not None and res.minimum.fit.fits
    n = res.minimum.knobs.num_gpus
    counts = list(res.counts)
    assert n in counts and counts.index(n) > 0, "pick pairs whose minimum is not the first count"
    prev = counts[counts.index(n) - 1]
    assert srch.frontier(prev), "the previous count has valid most-saving configurations"
    for k in srch.frontier(prev):
        ev = srch.evaluate(k)
        assert ev is not None and not ev.fit.fits


@st.composite
def _knobs(draw, srch: GpuSearch, n: int) -> Knobs:
    bools = {
        lever: draw(st.sampled_from(srch.bool_domain(lever)))
        for lever in (
            "lora",
            "param_offload",
            "optimizer_offload",
            "activation_offload",
            "gradient_checkpointing",
            "entropy_chunking",
            "cap_max_model_len",
            "free_cache_engine",
            "full_shard",
        )
    }
    return Knobs(
        num_gpus=n,
        rollout_tp=draw(st.sampled_from(srch.tp_values(n))),
        gpu_memory_utilization=draw(st.sampled_from(srch.util_values())),
        fused_kernels=draw(st.booleans()),
        batch=draw(st.integers(0, len(srch.batch_options) - 1)),
        ulysses_sp=draw(st.sampled_from(srch.sp_values(n))),
        **bools,
    )


@pytest.mark.parametrize(("scenario_id", "gpu"), MINIMA)
def test_no_searched_setting_fits_one_count_below_the_minimum(scenario_id, gpu):
    """Property: any configuration of the searched space at the previous ladder count does not fit."""
    srch, res = _search(scenario_id, gpu)
    counts = list(res.counts)
    prev = counts[counts.index(res.minimum.knobs.num_gpus) - 1]

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_knobs(srch, prev))
    def check(k: Knobs) -> None:
        ev = srch.evaluate(k)
        if ev is not None:  # None = verl/vLLM would reject the combination
            assert not ev.fit.fits, f"{k} fits at {prev} GPUs"

    check()


BORDERLINE = [
    (BASE, "a100-80gb", 2),
    (BASE, "rtx4090-24gb", 8),
    (BASE, "a100-40gb", 4),
    ("qwen2.5-7b-ppo-8xh100", "l40s-48gb", 4),
    ("qwen3-30b-a3b-grpo-16xh100", "h100-80gb", 8),
]


@pytest.mark.parametrize(("scenario_id", "gpu", "n"), BORDERLINE)
def test_no_setting_fits_when_the_frontier_misses_narrowly(scenario_id, gpu, n):
    """The pruning premise, stressed: set the margin so that the best most-saving configuration of ``n``
    GPUs misses the limit by 0.01 GiB; then no searched configuration of ``n`` GPUs may fit."""
    s = load_scenario(scenario_id)
    probe = GpuSearch(s, gpu, max_gpus=n, margin=0.0, allow_lora=False)
    best = min(probe.evaluate(k).fit.peak_gib_per_gpu for k in probe.frontier(n))
    usable = gpu_presets()[gpu].usable_memory_gib
    margin = 1 - (best - 0.01) / usable
    assert 0 < margin < 0.5
    srch = GpuSearch(s, gpu, max_gpus=n, margin=margin, allow_lora=False)
    assert srch.first_fit_at(n) is None

    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_knobs(srch, n))
    def check(k: Knobs) -> None:
        ev = srch.evaluate(k)
        if ev is not None:
            assert not ev.fit.fits, f"{k} fits although the frontier does not"

    check()


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(scenario_dicts(), st.sampled_from(["h100-80gb", "a100-40gb", "l40s-48gb", "h200-141gb"]))
def test_search_invariants_on_random_scenarios(d, gpu):
    s = Scenario(**d)
    res = search_gpu(s, gpu, max_gpus=64, margin=MARGIN, allow_lora=False)
    if res.minimum is None:
        return
    for ev in (res.minimum, res.recommended, *res.candidates):
        again = estimate(ev.scenario)
        assert fit_check(again, ev.scenario, MARGIN).fits
    counts = list(res.counts)
    i = counts.index(res.minimum.knobs.num_gpus)
    if i > 0:
        srch = GpuSearch(s, gpu, max_gpus=64, margin=MARGIN, allow_lora=False)
        assert all(not srch.evaluate(k).fit.fits for k in srch.frontier(counts[i - 1]))


def test_frontier_needs_no_more_memory_than_other_settings(base):
    """The pruning premise: at a count, the frontier's peak is below every sampled configuration's
    (for the same rollout TP and fused-kernel choice)."""
    srch = GpuSearch(base, "a100-80gb", max_gpus=64, margin=MARGIN, allow_lora=False)
    n = 8
    front = {(k.rollout_tp, k.fused_kernels): srch.evaluate(k) for k in srch.frontier(n)}

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_knobs(srch, n))
    def check(k: Knobs) -> None:
        ev = srch.evaluate(k)
        f = front.get((k.rollout_tp, k.fused_kernels))
        if ev is None or f is None or k.gpu_memory_utilization < f.knobs.gpu_memory_utilization:
            return  # below the frontier's utilization the KV cache cannot hold a max-length sequence
        assert f.fit.peak_gib_per_gpu <= ev.fit.peak_gib_per_gpu + 1e-9
        assert f.fit.worst_case_gib_per_gpu <= ev.fit.worst_case_gib_per_gpu + 1e-9

    check()


def test_frontier_memory_never_grows_with_gpu_count(base):
    srch = GpuSearch(base, "rtx4090-24gb", max_gpus=256, margin=MARGIN, allow_lora=False)
    counts = [n for n in srch.counts if srch.is_valid_count(n)]
    best = [min(srch.evaluate(k).fit.peak_gib_per_gpu for k in srch.frontier(n)) for n in counts]
    assert all(b <= a + 1e-9 for a, b in zip(best, best[1:], strict=False))


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


def test_recommended_is_the_cheapest_candidate(base):
    res = search_gpu(base, "h100-80gb", max_gpus=1024, margin=MARGIN, allow_lora=False)
    assert res.minimum.step_s is not None, "estimate() gives a step time: the ranking uses it"
    price = res.gpu.hourly_price_usd
    keys = [selection_key(c, False, price) for c in res.candidates]
    assert selection_key(res.recommended, False, price) == min(keys)
    rec = plan(base, gpus=["h100-80gb"]).rows[0].recommended
    assert rec.cost_per_step == pytest.approx(rec.step_s * rec.num_gpus * price / 3600)
    assert rec.cost_per_million_tokens == pytest.approx(rec.cost_per_step / (rec.tokens_per_s * rec.step_s / 1e6))


def test_prices_are_editable(base):
    cheap = plan(base, gpus=["h100-80gb"], hourly_prices_usd={"h100-80gb": 1.0}).rows[0]
    assert cheap.hourly_price_usd == 1.0
    assert cheap.recommended.step_s is not None
    assert cheap.recommended.cost_per_step == pytest.approx(
        cheap.recommended.step_s * cheap.recommended.num_gpus / 3600
    )


def test_without_step_time_the_minimum_is_recommended(base, monkeypatch):
    import calculator.planning.search as ps

    real = ps.estimate
    monkeypatch.setattr(ps, "estimate", lambda s: real(s).model_copy(update={"time": None}))
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
    row = plan(huge, gpus=["v100-16gb"], max_gpus=4).rows[0]
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


def test_cli_plan_json(capsys):
    assert main(["plan", BASE, "--gpus", "h100-80gb,a100-80gb", "--max-gpus", "64", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert sorted(r["gpu"] for r in d["rows"]) == ["a100-80gb", "h100-80gb"]
    assert isinstance(d["elapsed_s"], float)


def test_cli_plan_text_csv_markdown(capsys):
    assert main(["plan", BASE, "--gpus", "h100-80gb", "--max-gpus", "64"]) == 0
    assert "h100-80gb" in capsys.readouterr().out
    assert main(["plan", BASE, "--gpus", "h100-80gb", "--max-gpus", "64", "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("gpu,gpu_name,min_gpus")
    assert main(["plan", BASE, "--gpus", "h100-80gb", "--max-gpus", "64", "--format", "markdown"]) == 0
    assert "| GPU |" in capsys.readouterr().out


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


def test_cli_bad_input_exits_2_one_line_per_problem():
    r = subprocess.run(
        [sys.executable, "-m", "calculator", "plan", BASE, "--gpus", "nope,h100-80gb", "--margin", "1.5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("error: ") for line in lines)
    assert any("margin:" in line for line in lines) and any("gpus:" in line for line in lines)
    assert "Traceback" not in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "calculator", "plan", BASE, "--max-gpus", "many"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "--max-gpus" in r.stderr


def test_planner_is_pure():
    code = "import sys, calculator.planning.planner, calculator.planning.advisor; print('streamlit' in sys.modules or 'plotly' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "False"


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


def test_knobs_round_trip_through_build(base):
    """A knob vector and its scenario agree (what the search varies is what the estimate sees)."""
    srch = GpuSearch(base, "h100-80gb", max_gpus=64, margin=MARGIN, allow_lora=True)
    k = replace(srch.frontier(8)[0], param_offload=True, ulysses_sp=2)
    s = srch.build(k)
    assert s is not None
    assert s.actor.fsdp_config.param_offload and s.actor.fsdp_config.optimizer_offload
    assert s.actor.ulysses_sequence_parallel_size == 2
    assert s.rollout.tensor_model_parallel_size == k.rollout_tp
    assert s.model.lora_rank == 64
    assert s.rollout.max_model_len == s.data.max_prompt_length + s.data.max_response_length
    assert not s.actor.use_dynamic_bsz and s.actor.ppo_micro_batch_size_per_gpu == 1
    assert s.rollout.log_prob_micro_batch_size_per_gpu == 1 and s.ref.log_prob_micro_batch_size_per_gpu == 1
