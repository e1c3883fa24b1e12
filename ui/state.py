"""Session state of the inputs: initialisation (preset + URL), preset callbacks, scenario building, URL sync.

Session state holds inputs only (widget values, the last good uploaded config.json, messages about
ignored URL parameters). Results are recomputed from the inputs on every run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import streamlit as st

from calculator import (
    ALGORITHM_BY_LABEL,
    MAX_INPUT_BYTES,
    RECIPE_LABELS,
    ArchitectureError,
    InputError,
    Scenario,
    algorithm_for,
    algorithm_label,
    approximate_model,
    load_scenario,
    model_presets,
    parse_hf_config,
    parse_size,
    preset_problems,
    read_json_text,
    recipe_overrides,
    scenario_presets,
)
from calculator import model_families as families
from ui import keys
from ui.fields import (
    FieldSpec,
    all_fields,
    coerce,
    decode_value,
    encode_value,
    field,
    scenario_flat,
    widget_fields,
)
from ui.i18n import LANGS, tr

DEFAULT_PRESET = "qwen2.5-7b-grpo-8xh100"
# URL parameters that are not scenario fields.
UI_PARAMS = ("preset", "lang", "algo", "size", "base")
MAX_CONFIG_BYTES = MAX_INPUT_BYTES  # an uploaded or pasted config.json (real ones are a few KiB)
MAX_URL_PARAMS = 200  # a link with more parameters than the scenario has fields is not one we wrote


@dataclass
class Built:
    """The scenario built from the inputs, or the problems that prevented it (one 'field: message' each)."""

    scenario: Scenario | None
    problems: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    overrides: dict[str, Any] = dataclasses.field(default_factory=dict)
    model_note: str = ""


# ----------------------------------------------------------------------------- presets


# Presets are read once per server process (calculator.inputs.presets caches the files; these caches are shared by
# every session). A preset file that cannot be read is left out and reported (preset_file_problems).


@st.cache_data(show_spinner=False)
def preset_ids() -> list[str]:
    return sorted(scenario_presets(strict=False))


@st.cache_data(show_spinner=False)
def preset_name(preset_id: str) -> str:
    data = scenario_presets(strict=False).get(preset_id, {})
    return str(data.get("name") or preset_id)


@st.cache_data(show_spinner=False)
def preset_file_problems() -> list[str]:
    """One message per preset file that was skipped (it names the file); empty when all loaded."""
    return preset_problems()


@st.cache_data(show_spinner=False)
def preset_scenario(preset_id: str) -> Scenario:
    """The validated scenario of a preset (raises InputError for an unknown or broken preset)."""
    return load_scenario(preset_id)


def default_preset() -> str:
    ids = preset_ids()
    return DEFAULT_PRESET if DEFAULT_PRESET in ids else (ids[0] if ids else "")


def lang() -> str:
    value = st.session_state.get(keys.LANG, "en")
    return value if value in LANGS else "en"


# ----------------------------------------------------------------------------- widgets <- scenario


def _set_field(path: str, value: Any) -> None:
    spec = field(path)
    if spec is not None:
        st.session_state[keys.field_key(path)] = coerce(spec, value)


def apply_scenario(s: Scenario) -> None:
    """Copy every field of a scenario into the input widgets' keys (the preset callback's only job)."""
    flat = scenario_flat(s)
    for path in widget_fields():
        if path in flat:
            _set_field(path, flat[path])
    st.session_state[keys.MODEL_PATH] = s.model.path
    st.session_state[keys.ALGO] = algorithm_for(s)
    if s.model.config is not None:
        st.session_state[keys.CUSTOM_CONFIG] = dict(s.model.config)
        st.session_state[keys.CUSTOM_CONFIG_NAME] = str(s.model.config.get("_name_or_path", "config.json"))
        st.session_state[keys.MODEL_SOURCE] = "config"
    else:
        st.session_state[keys.MODEL_SOURCE] = "preset"
    st.session_state.setdefault(keys.MODEL_SIZE, "7B dense")
    st.session_state.setdefault(keys.MODEL_SIZE_FAMILY, "qwen2.5")


def on_preset_change() -> None:
    preset = st.session_state.get(keys.PRESET, "")
    st.session_state[keys.URL_PROBLEMS] = []
    st.session_state[keys.CONFIG_ERROR] = ""
    try:
        apply_scenario(preset_scenario(preset))
        st.session_state[keys.PRESET_PROBLEMS] = []
    except InputError as err:
        st.session_state[keys.PRESET_PROBLEMS] = [
            f"{tr(lang(), 'err.preset', preset=preset)}: {p}" for p in err.problems
        ]


def on_algo_change() -> None:
    label = st.session_state.get(keys.ALGO, "GRPO")
    train = int(st.session_state.get(keys.TRAIN_BATCH, 1024) or 1024)
    recipe = recipe_overrides(label, train)
    if label != "DAPO":
        dapo = recipe_overrides("DAPO", train)
        current = {p: st.session_state.get(keys.field_key(p)) for p in dapo}
        if current != dapo:  # the DAPO recipe was not in place: leave the user's settings alone
            return
    for path, value in recipe.items():
        _set_field(path, value)


def load_config_text(text: str, name: str) -> None:
    """Parse a config.json (bounded size and nesting); keep it only when it is a model the calculator can
    read, else record why not (the previous model stays)."""
    st.session_state[keys.CONFIG_ERROR] = ""
    if not text.strip():
        return
    try:
        cfg = read_json_text(text, name, max_bytes=MAX_CONFIG_BYTES)
        parse_hf_config(cfg)
    except InputError as err:
        st.session_state[keys.CONFIG_ERROR] = "; ".join(err.problems)
        return
    except (ArchitectureError, ValueError, TypeError) as exc:
        st.session_state[keys.CONFIG_ERROR] = f"{name}: {exc}"
        return
    cfg.setdefault("_name_or_path", name)
    st.session_state[keys.CUSTOM_CONFIG] = cfg
    st.session_state[keys.CUSTOM_CONFIG_NAME] = name


def on_upload() -> None:
    upload = st.session_state.get(keys.CONFIG_UPLOAD)
    if upload is None:
        return
    name = str(upload.name)[:200]
    if upload.size > MAX_CONFIG_BYTES:  # the server's maxUploadSize refuses larger files first
        st.session_state[keys.CONFIG_ERROR] = f"{name}: " + tr(
            lang(), "err.config_too_large", mib=MAX_CONFIG_BYTES // 2**20
        )
        return
    try:
        text = upload.getvalue().decode("utf-8")
    except UnicodeDecodeError:
        st.session_state[keys.CONFIG_ERROR] = f"{name}: {tr(lang(), 'err.not_utf8')}"
        return
    load_config_text(text, name)


def on_paste() -> None:
    load_config_text(st.session_state.get(keys.CONFIG_PASTE, "") or "", "pasted config.json")


# ----------------------------------------------------------------------------- initialisation (URL)


def init_session() -> None:
    """Once per browser session: language, preset and every scenario field from the URL, else the default preset."""
    ss = st.session_state
    if ss.get(keys.INITIALIZED):
        return
    params = {k: st.query_params.get(k) for k in st.query_params}
    problems: list[str] = []
    lang_param = params.get("lang") or "en"
    ss[keys.LANG] = lang_param if lang_param in LANGS else "en"
    if lang_param not in LANGS:
        problems.append(tr(ss[keys.LANG], "url.bad_lang", value=lang_param[:80]))
    if len(params) > MAX_URL_PARAMS:
        problems.append(tr(ss[keys.LANG], "url.too_many", n=len(params) - MAX_URL_PARAMS))
        params = dict(list(params.items())[:MAX_URL_PARAMS])
    preset = params.get("preset") or default_preset()
    if preset not in preset_ids():
        problems.append(tr(ss[keys.LANG], "url.bad_preset", value=preset[:80]))
        preset = default_preset()
    ss[keys.PRESET] = preset
    ss[keys.URL_PROBLEMS] = []
    on_preset_change()
    problems += apply_url_fields(preset, params)
    ss[keys.URL_PROBLEMS] = problems
    ss[keys.INITIALIZED] = True


def apply_url_fields(preset: str, params: dict[str, str | None]) -> list[str]:
    """Set widgets from dotted URL parameters; a parameter that cannot be used is reported and skipped."""
    L = lang()
    problems: list[str] = []
    accepted: dict[str, Any] = {}
    try:
        base = scenario_flat(preset_scenario(preset))
    except InputError:
        return problems
    for key, text in params.items():
        if key in UI_PARAMS or text is None:
            continue
        spec = field(key)
        if spec is None or key in ("name", "description"):
            problems.append(tr(L, "url.unknown_param", key=key[:80]))
            continue
        try:
            value = decode_value(spec, text)
        except ValueError as exc:
            problems.append(tr(L, "url.bad_value", key=key, value=text[:80], why=str(exc)))
            continue
        bad = _field_problem(preset, accepted, spec, value)
        if bad:
            problems.append(tr(L, "url.bad_value", key=key, value=text[:80], why=bad))
            continue
        accepted[key] = value
    for key, value in accepted.items():
        if key == "model.config":
            st.session_state[keys.CUSTOM_CONFIG] = value
            st.session_state[keys.CUSTOM_CONFIG_NAME] = str((value or {}).get("_name_or_path", "config.json"))
            st.session_state[keys.MODEL_SOURCE] = "config" if value else "preset"
        elif key == "model.path":
            st.session_state[keys.MODEL_PATH] = value
        elif key == "algorithm.adv_estimator":
            flat = {**base, **accepted}
            st.session_state[keys.ALGO] = algorithm_label(
                value, flat["data.train_batch_size"], flat.get("data.gen_batch_size"), flat["actor.clip_ratio_high"]
            )
        else:
            _set_field(key, value)
    # Model chosen by size, and recipe labels (DAPO/GSPO) that the estimator alone does not tell.
    if params.get("size"):
        try:
            spec = parse_size(params["size"] or "")
            fam = params.get("base") or ""
            if fam and fam not in families(spec.moe):
                raise ValueError(tr(L, "url.bad_family", value=fam))
            st.session_state[keys.MODEL_SIZE] = params["size"]
            if fam:
                st.session_state[keys.MODEL_SIZE_FAMILY] = fam
            st.session_state[keys.MODEL_SOURCE] = "size"
        except ValueError as exc:
            problems.append(tr(L, "url.bad_value", key="size", value=str(params["size"])[:80], why=str(exc)))
    algo = params.get("algo")
    if algo:
        current = ALGORITHM_BY_LABEL.get(st.session_state.get(keys.ALGO, ""))
        wanted = ALGORITHM_BY_LABEL.get(algo)
        if wanted is None or (current is not None and wanted.adv_estimator != current.adv_estimator):
            problems.append(tr(L, "url.bad_value", key="algo", value=algo[:80], why=tr(L, "url.algo_mismatch")))
        else:
            st.session_state[keys.ALGO] = algo
    return problems


def _field_problem(preset: str, accepted: dict[str, Any], spec: FieldSpec, value: Any) -> str:
    """Why ``spec.path = value`` is unusable by itself ('' when fine or only wrong in combination)."""
    if spec.path == "model.config":
        if value is None:
            return ""
        try:
            parse_hf_config(value)
        except (ArchitectureError, ValueError, TypeError) as exc:
            return str(exc)
        return ""
    if spec.path == "model.path" and value not in model_presets(strict=False):
        return tr(lang(), "url.unknown_model")
    try:
        load_scenario(preset, overrides={**accepted, spec.path: value})
    except InputError as err:
        own = [p for p in err.problems if p.split(":", 1)[0].strip() == spec.path]
        return "; ".join(p.split(":", 1)[1].strip() for p in own)
    return ""


# ----------------------------------------------------------------------------- scenario from the inputs


def current_overrides() -> tuple[dict[str, Any], list[str], str]:
    """Native dotted overrides from the widgets, input problems that are not field errors, and a model note."""
    ss = st.session_state
    L = lang()
    overrides: dict[str, Any] = {}
    problems: list[str] = []
    note = ""
    for path in widget_fields():
        key = keys.field_key(path)
        if key in ss:
            overrides[path] = ss[key]
    algo = ALGORITHM_BY_LABEL.get(ss.get(keys.ALGO, ""))
    if algo is not None:
        overrides["algorithm.adv_estimator"] = algo.adv_estimator
    overrides["model.path"] = ss.get(keys.MODEL_PATH)
    overrides["model.config"] = None
    source = ss.get(keys.MODEL_SOURCE, "preset")
    if source == "size":
        try:
            spec = parse_size(ss.get(keys.MODEL_SIZE, ""))
            family = ss.get(keys.MODEL_SIZE_FAMILY)
            if family not in families(spec.moe):  # the family box follows the size one run later
                family = next(iter(families(spec.moe)), family)
            approx = approximate_model(spec, family)
            overrides["model.config"] = approx.config
            note = tr(
                L,
                "model.approx_note",
                base=approx.base_name,
                layers=approx.num_layers,
                base_layers=approx.base_layers,
                total=approx.total_params / 1e9,
                active=approx.active_params / 1e9,
                err=approx.error_fraction * 100,
            )
        except ValueError as exc:
            problems.append(f"{tr(L, 'input.model_size')}: {exc}")
    elif source == "config":
        cfg = ss.get(keys.CUSTOM_CONFIG)
        if cfg:
            overrides["model.config"] = cfg
            note = tr(L, "model.config_note", name=ss.get(keys.CUSTOM_CONFIG_NAME, "config.json"))
        else:
            note = tr(L, "model.no_config_yet")
    return overrides, problems, note


def build_scenario() -> Built:
    """Read the inputs -> native overrides -> ``load_scenario(preset, overrides)``; never raises."""
    preset = st.session_state.get(keys.PRESET) or default_preset()
    overrides, problems, note = current_overrides()
    built = Built(None, problems=list(problems), overrides=overrides, model_note=note)
    built.problems += list(st.session_state.get(keys.PRESET_PROBLEMS) or [])
    if built.problems:
        return built
    try:
        built.scenario = load_scenario(preset, overrides=overrides)
    except InputError as err:
        built.problems = list(err.problems)
    except Exception as exc:  # the page must never show a traceback
        built.problems = [f"scenario: {type(exc).__name__}: {exc}"]
    return built


# ----------------------------------------------------------------------------- URL


def url_params(built: Built) -> dict[str, str]:
    """The URL of the current view: the preset, the language, and only the fields that differ from the preset."""
    ss = st.session_state
    preset = ss.get(keys.PRESET) or default_preset()
    params: dict[str, str] = {"preset": preset}
    if lang() != "en":
        params["lang"] = lang()
    try:
        base = scenario_flat(preset_scenario(preset))
    except InputError:
        base = {p: f.default for p, f in all_fields().items()}
    algo = ss.get(keys.ALGO, "")
    if algo in RECIPE_LABELS:
        params["algo"] = algo
    source = ss.get(keys.MODEL_SOURCE, "preset")
    for path, value in built.overrides.items():
        if path == "model.config" and source != "config":
            continue
        if encode_value(value) != encode_value(base.get(path)):
            params[path] = encode_value(value)
    if source == "size":
        params["size"] = str(ss.get(keys.MODEL_SIZE, ""))
        params["base"] = str(ss.get(keys.MODEL_SIZE_FAMILY, ""))
    return params


def sync_url(built: Built) -> None:
    """Write the current inputs into the address bar (only when they changed, so reruns stay cheap)."""
    params = url_params(built)
    current = {k: st.query_params.get(k) for k in st.query_params}
    if current != params:
        st.query_params.from_dict(params)
