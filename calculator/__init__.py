"""rlplan calculator: GPU memory, step time and hardware plans for verl RL post-training.

Pure Python (pydantic, pyyaml, stdlib). Views (the Streamlit app, the CLI) import this package;
it never imports them.
"""

from calculator.api import estimate, load_scenario
from calculator.errors import InputError
from calculator.planner import plan
from calculator.report import Report
from calculator.scenario import Scenario

__all__ = ["InputError", "Report", "Scenario", "estimate", "load_scenario", "plan"]
