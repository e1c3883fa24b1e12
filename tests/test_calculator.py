"""The calculator is pure: importing it (and running an estimate) loads neither streamlit nor plotly."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT


def test_calculator_never_imports_views():
    code = (
        "import sys, calculator, calculator.planning.planner, calculator.planning.tradeoff, calculator.verl, calculator.verl.checks, "
        "calculator.planning.advisor\n"
        "calculator.estimate(calculator.load_scenario('qwen2.5-7b-grpo-8xh100'))\n"
        "print(sorted(m for m in ('streamlit', 'plotly') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
