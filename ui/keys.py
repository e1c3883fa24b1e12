"""Every widget / session-state key of the app, in one place (tests find widgets by these keys).

Scenario fields use ``field_key("dotted.path")``; the path is the scenario's own dotted field name,
which is also the name of its URL query parameter.
"""

from __future__ import annotations

FIELD_PREFIX = "fld:"


def field_key(path: str) -> str:
    """Widget key of a scenario field (``hardware.num_gpus`` -> ``fld:hardware.num_gpus``)."""
    return FIELD_PREFIX + path


def field_of_key(key: str) -> str | None:
    return key[len(FIELD_PREFIX) :] if key.startswith(FIELD_PREFIX) else None


# App-wide
LANG = "lang"
INITIALIZED = "_initialized"
FIELD_VALUES = "_field_values"  # {dotted path: value} of every scenario field (ui/field_values.py)
URL_PROBLEMS = "_url_problems"  # messages about ignored URL parameters (input, not results)
PRESET_PROBLEMS = "_preset_problems"

# Scenario inputs that are not a single field
PRESET = "preset"
ALGO = "algo"
MODEL_SOURCE = "model_source"  # "preset" | "size" | "config"
MODEL_SIZE = "model_size"  # "7B dense", "30B-A3B MoE"
MODEL_SIZE_FAMILY = "model_size_family"
CONFIG_UPLOAD = "config_upload"
CONFIG_PASTE = "config_paste"
CUSTOM_CONFIG = "_custom_config"  # last config.json that parsed (dict); a bad one never replaces it
CUSTOM_CONFIG_NAME = "_custom_config_name"
CONFIG_ERROR = "_config_error"  # what was wrong with the last upload / paste

# Sidebar sections that render their widgets only while open (fewer widgets per rerun)
LAZY_SECTIONS = ("batch", "lengths", "rollout", "optim", "advanced", "more")


def section_key(name: str) -> str:
    """Key of a sidebar expander; ``st.session_state[section_key(name)] = True`` opens it."""
    return f"sec_{name}"


# Frequently used scenario fields
GPU = field_key("hardware.gpu")
NUM_GPUS = field_key("hardware.num_gpus")
GPUS_PER_NODE = field_key("hardware.gpus_per_node")
MODEL_PATH = field_key("model.path")
GROUP_SIZE = field_key("rollout.n")
TRAIN_BATCH = field_key("data.train_batch_size")
PARAM_OFFLOAD = field_key("actor.fsdp_config.param_offload")
OPTIMIZER_OFFLOAD = field_key("actor.fsdp_config.optimizer_offload")
ROLLOUT_TP = field_key("rollout.tensor_model_parallel_size")
GPU_UTIL = field_key("rollout.gpu_memory_utilization")

# Estimate page
VIEW_CASE = "est_case"  # expected / worst case
BREAKDOWN_PHASE = "est_breakdown_phase"
CHART_MEMORY = "est_chart_memory"
CHART_ROLES = "est_chart_roles"
CHART_TIME = "est_chart_time"
FIRST_SCREEN_DONE = "_est_first_screen_done"  # the session's first run of the page (ui/first_paint.py) is over
CHART_DRAWN = "est_chart_drawn"  # the browser's "first chart drawn" trigger (ui/first_paint.py)
DL_YAML = "dl_yaml"
DL_JSON = "dl_json"
DL_MD = "dl_md"
DL_PNG_COMPONENTS = "dl_png_components"
DL_PNG_ROLES = "dl_png_roles"
DL_PNG_TIME = "dl_png_time"

# Compare page
CMP_COUNT = "cmp_count"
CMP_QUICK = "cmp_quick"
CMP_CHART = "cmp_chart"
CMP_DL_PNG = "cmp_dl_png"
CMP_DL_MD = "cmp_dl_md"
LINK_PACKED = "link_packed"  # packed link parameters (cmp, script: ui/linkcodec.py) as the session opened


def cmp_base(i: int) -> str:
    return f"cmp_base_{i}"


def cmp_overrides(i: int) -> str:
    return f"cmp_overrides_{i}"


def cmp_label(i: int) -> str:
    return f"cmp_label_{i}"


# Trade-offs page
TO_CHART = "to_chart"
TO_DL_PNG = "to_dl_png"

# Planner page
PLAN_GPUS = "plan_gpus"
PLAN_MAX_GPUS = "plan_max_gpus"
PLAN_MARGIN = "plan_margin"
PLAN_DL_JSON = "plan_dl_json"

# verl page
VERL_IMPORT_TEXT = "verl_import_text"
VERL_IMPORT_APPLY = "verl_import_apply"
VERL_DL_OVERRIDES = "verl_dl_overrides"

# calibrate page (issue 16)
CAL_SCRIPT_TEXT = "cal_script_text"
CAL_SCRIPT_UPLOAD = "cal_script_upload"
CAL_LOG_TEXT = "cal_log_text"
CAL_LOG_UPLOAD = "cal_log_upload"
CAL_WARMUP = "cal_warmup"
CAL_SAVE = "cal_save"
CAL_DOWNLOAD = "cal_download"
CAL_APPLY = "cal_apply"
CAL_PROFILE = "cal_profile"
CAL_PROFILE_APPLY = "cal_profile_apply"
CAL_OOM_TEXT = "cal_oom_text"
CAL_OOM_UPLOAD = "cal_oom_upload"
CAL_NAME = "cal_name"  # optional profile name typed before saving
CAL_PENDING = "cal_pending"  # id of a profile whose save waits for the overwrite confirmation
CAL_OVERWRITE = "cal_overwrite"
# the sidebar's profile selector (ui/profiles.py), on every page
CAL_SELECT = "cal_select"
CAL_ACTIVE = "cal_active"  # label of the profile last applied
CAL_LINKED = "cal_linked"  # label -> fitted values of profiles a link brought (not in the team directory)
CAL_LINK_SEEN = "cal_link_seen"  # the last ``cal`` link parameter applied (applied once per distinct value)
CHART_PLACEMENT = "chart_placement"  # ui/placement.py: the split placement's timeline
