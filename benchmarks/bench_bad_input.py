"""Benchmark: how long hostile input takes to be refused (issue #8), where the tests assert only bounds.

The tests (tests/inputs/test_presets.py, tests/inputs/test_overrides.py, tests/model/test_architecture.py,
tests/verl/test_shell.py, tests/verl/test_imports.py) run each hostile case in a child process under a CPU-time
limit several times these figures; the app tests (tests/ui/test_bad_input.py) assert messages, no timing. This
prints the figures: CPU and wall milliseconds per calculator-level case, and the AppTest wall time of the app-level
ones (a full script rerun with the hostile input). Not a test.

python3 benchmarks/bench_bad_input.py [--repeat 3] [--no-app]   (Streamlit's "missing ScriptRunContext" lines go to stderr)
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calculator import estimate, load_scenario  # noqa: E402
from calculator.errors import InputError  # noqa: E402
from calculator.inputs.overrides import parse_value  # noqa: E402
from calculator.inputs.presets import model_presets, read_json_text, read_yaml_text  # noqa: E402
from calculator.verl import import_verl_text  # noqa: E402
from tests.support.hostile import (  # noqa: E402
    BOMB_VALUE,
    DEEP_JSON,
    HOSTILE_ARITHMETIC,
    HOSTILE_JSON,
    HOSTILE_VERL_TEXTS,
    HOSTILE_YAML,
    TAMPERED,
)


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median CPU ms, median wall ms) of ``fn``; an InputError is the expected outcome, not a failure."""
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = _cpu_s(), time.perf_counter()
        try:
            fn()
        except InputError:
            pass
        cpu.append((_cpu_s() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
    return statistics.median(cpu), statistics.median(wall)


def calculator_cases() -> dict[str, Callable[[], object]]:
    cases: dict[str, Callable[[], object]] = {}
    for name, (text, _) in HOSTILE_YAML.items():
        cases[f"yaml {name}"] = lambda text=text: read_yaml_text(text, "input.yaml")
    for name, (text, _) in HOSTILE_JSON.items():
        cases[f"json {name}"] = lambda text=text: read_json_text(text, "config.json")
    cases["--set alias bomb"] = lambda: parse_value(BOMB_VALUE)
    cases["--set 50,000-deep list"] = lambda: parse_value("[" * 50_000 + "]" * 50_000)
    for name, expr in HOSTILE_ARITHMETIC.items():
        cases[f"shell $(( {name} ))"] = lambda expr=expr: import_verl_text(f"actor_rollout_ref.rollout.n=$(( {expr} ))")
    for name, text in HOSTILE_VERL_TEXTS.items():
        cases[f"verl text {name}"] = lambda text=text: import_verl_text(text.replace("{canary}", "/nonexistent/c"))
    big = {**model_presets()["qwen2.5-0.5b"].config, "num_hidden_layers": 4096, "vocab_size": 2**24}
    cases["estimate, largest accepted config.json"] = lambda: estimate(
        load_scenario("qwen2.5-7b-grpo-8xh100", overrides={"model.config": big})
    )
    return cases


def app_cases() -> dict[str, Callable[[], object]]:
    from streamlit.testing.v1 import AppTest

    from ui import keys

    def app(params: dict[str, str] | None = None, page: str | None = None) -> AppTest:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        for k, v in (params or {}).items():
            at.query_params[k] = v
        at.run()
        if page:
            at.switch_page(page).run()
        return at

    def upload(data: bytes) -> Callable[[], object]:
        at = app()
        at.radio(key=keys.MODEL_SOURCE).set_value("config").run()
        return lambda: at.file_uploader(key=keys.CONFIG_UPLOAD).upload("config.json", data, "application/json").run()

    def verl_text(text: str) -> Callable[[], object]:
        at = app(page="ui/pages/verl_io.py")
        return lambda: at.text_area(key=keys.VERL_IMPORT_TEXT).set_value(text).run()

    return {
        "app: first run (reference)": lambda: app(),
        "app: tampered link, first run": lambda: app(TAMPERED),
        "app: upload 100,000-deep config.json": upload(DEEP_JSON.encode()),
        "app: upload 2 MiB config.json": upload(b'{"pad": "' + b"x" * (2 * 2**20) + b'"}'),
        **{f"app: verl text {k}": verl_text(v.replace("{canary}", "/nonexistent/c")) for k, v in HOSTILE_VERL_TEXTS.items()},
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-app", action="store_true", help="skip the AppTest cases (the slow part)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = {name: measure(fn, args.repeat) for name, fn in calculator_cases().items()}
    if not args.no_app:
        rows |= {name: measure(fn, args.repeat) for name, fn in app_cases().items()}
    if args.json:
        print(json.dumps({k: {"cpu_ms": round(c, 2), "wall_ms": round(w, 2)} for k, (c, w) in rows.items()}, indent=1))
        return 0
    print(f"{'case':<48} {'CPU ms':>9} {'wall ms':>9}")
    for name, (cpu, wall) in rows.items():
        print(f"{name:<48} {cpu:9.1f} {wall:9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
