"""rlplan calculator: GPU memory, step time and hardware plans for verl RL post-training.

Pure Python (pydantic, pyyaml, stdlib). Views (the Streamlit app, the CLI) import this package;
it never imports them.
"""

from calculator.errors import InputError
from calculator.inputs.scenario import Scenario
from calculator.loading import load_scenario
from calculator.planning.planner import plan
from calculator.report.estimate import estimate
from calculator.report.models import Report

__all__ = ["InputError", "Report", "Scenario", "estimate", "load_scenario", "plan"]
