"""The planner's defaults, in a module with no imports so that the CLI's argument parser can show them
without importing the planner (``python -m calculator presets`` starts in a fraction of the planner's
import time)."""

DEFAULT_MARGIN = 0.10  # issue #6: the user's safety margin, default 10 % of usable memory
DEFAULT_MAX_GPUS = 1024  # largest GPU count the planner and the advisor search
