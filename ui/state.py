"""Session state of the inputs: initialisation (preset + URL), preset callbacks, scenario building, URL sync.

Session state holds inputs only (widget values, the last good uploaded config.json, messages about
ignored URL parameters). Results are recomputed from the inputs on every run. The presets are read through
``ui.catalogue``; every widget value is checked by ``ui.widget_rules`` before it is read (both re-exported here).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from calculator import (
    ALGORITHM_BY_LABEL,
    RECIPE_LABELS,
    InputError,
    Scenario,
    algorithm_for,
    algorithm_label,
    approximate_model,
    load_scenario,
    model_presets,
    parse_config,
    parse_size,
    read_json_text,
    recipe_overrides,
    role_settings,
    scenario_preset,
)
from calculator import model_families as families
from ui import cache, field_values, keys
from ui.catalogue import (
    DEFAULT_PRESET,
    default_preset,
    preset_file_problems,
    preset_flat,
    preset_ids,
    preset_name,
    preset_scenario,
)
from ui.fields import FieldSpec, all_fields, coerce, decode_value, encode_value, field, scenario_flat, widget_fields
from ui.i18n import LANGS, tr
from ui.widget_rules import (
    MAX_CONFIG_BYTES,
    MAX_TEXT_CHARS,
    MODEL_SOURCES,
    VIEW_CASES,
    Rule,
    sanitize_widgets,
    widget_rules,
)

__all__ = [  # the names pages and tests read from here (defined in ui.catalogue / ui.widget_rules)
    "DEFAULT_PRESET",
    "MAX_CONFIG_BYTES",
    "MAX_TEXT_CHARS",
    "MODEL_SOURCES",
    "VIEW_CASES",
    "Rule",
    "default_preset",
    "preset_file_problems",
    "preset_ids",
    "preset_name",
    "preset_scenario",
    "sanitize_widgets",
    "widget_rules",
]

# URL parameters that are not scenario fields (cmp, script: packed by ui/linkcodec.py, read by their pages).
UI_PARAMS = ("preset", "lang", "algo", "size", "base", "cmp", "script", "cal")  # cal: ui/profiles.py
MAX_URL_PARAMS = 200  # a link with more parameters than the scenario has fields is not one we wrote
# A config.json in the share link (the query string the app writes into the address bar), URL-encoded. Proxies
# and browsers cut URLs near 8 KB and the other parameters take well under 1 KiB; a longer config.json is left
# out of the link and shared as the file (real ones are ~1 KiB compact; a 1 MB one used to go into the URL).
MAX_LINK_CONFIG_CHARS = 5 * 1024


@dataclass
class Built:
    """The scenario built from the inputs, or the problems that prevented it (one 'field: message' each)."""

    scenario: Scenario | None
    problems: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    overrides: dict[str, Any] = dataclasses.field(default_factory=dict)
    model_note: str = ""


# ----------------------------------------------------------------------------- presets (ui.catalogue)


def lang() -> str:
    value = st.session_state.get(keys.LANG, "en")
    return value if value in LANGS else "en"


# ----------------------------------------------------------------------------- widgets <- scenario


def _set_field(path: str, value: Any) -> None:
    spec = field(path)
    if spec is not None:
        field_values.put(path, coerce(spec, value))


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
    sanitize_widgets()  # callbacks run before the script: check the client's values here too
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
    sanitize_widgets()
    label = st.session_state.get(keys.ALGO, "GRPO")
    train = int(field_values.get("data.train_batch_size", 1024) or 1024)
    recipe = recipe_overrides(label, train)
    if label != "DAPO":
        dapo = recipe_overrides("DAPO", train)
        current = {p: field_values.get(p) for p in dapo}
        if current != dapo:  # the DAPO recipe was not in place: leave the user's settings alone
            recipe = {}
    for path, value in recipe.items():
        _set_field(path, value)
    _fill_roles()


def _fill_roles() -> None:
    """Fill what the new algorithm's roles need and the inputs leave unset (PPO's critic micro-batch =
    the actor's, as verl's PPO examples set it: ``calculator.role_settings``), so that verl accepts the switch."""
    s = build_scenario().scenario
    if s is None:
        return
    for path, value in role_settings(s).items():
        _set_field(path, value)


def load_config_text(text: str, name: str) -> None:
    """Parse a config.json (bounded size and nesting); keep it only when it is a model the calculator can
    read, else record why not (the previous model stays)."""
    st.session_state[keys.CONFIG_ERROR] = ""
    if not text.strip():
        return
    try:
        cfg = read_json_text(text, name, max_bytes=MAX_CONFIG_BYTES)
        parse_config(cfg, name)
    except InputError as err:
        st.session_state[keys.CONFIG_ERROR] = "; ".join(err.problems)
        return
    except (ValueError, TypeError) as exc:  # the parser refused the value in a way it did not name
        st.session_state[keys.CONFIG_ERROR] = f"{name}: {type(exc).__name__}"
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
    ss[keys.LINK_PACKED] = {k: params[k] for k in ("cmp", "script") if params.get(k)}  # read by their pages
    ss[keys.INITIALIZED] = True


def _url_value(preset: str, accepted: dict[str, Any], key: str, text: str) -> tuple[Any, str]:
    """(value, '') for a usable dotted URL parameter, else (None, why not)."""
    L = lang()
    spec = field(key)
    if spec is None or key in ("name", "description"):
        return None, tr(L, "url.unknown_param", key=key[:80])
    if spec.kind == "str" and len(text) > MAX_TEXT_CHARS:
        return None, tr(L, "url.bad_value", key=key, value=text[:80], why=f"longer than {MAX_TEXT_CHARS} characters")
    try:
        value = decode_value(spec, text)
    except ValueError as exc:
        return None, tr(L, "url.bad_value", key=key, value=text[:80], why=str(exc))
    bad = _field_problem(preset, accepted, spec, value)
    if bad:
        return None, tr(L, "url.bad_value", key=key, value=text[:80], why=bad)
    return value, ""


def _set_url_fields(accepted: dict[str, Any], base: dict[str, Any]) -> None:
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


def _url_size(params: dict[str, str | None]) -> list[str]:
    """The model chosen by size (``size``, ``base``)."""
    L = lang()
    text = params.get("size") or ""
    if not text:
        return []
    try:
        if len(text) > MAX_TEXT_CHARS:
            raise ValueError(f"longer than {MAX_TEXT_CHARS} characters")
        spec = parse_size(text)
        fam = params.get("base") or ""
        if fam and fam not in families(spec.moe):
            raise ValueError(tr(L, "url.bad_family", value=fam[:80]))
    except ValueError as exc:
        return [tr(L, "url.bad_value", key="size", value=text[:80], why=str(exc))]
    st.session_state[keys.MODEL_SIZE] = text
    if fam:
        st.session_state[keys.MODEL_SIZE_FAMILY] = fam
    st.session_state[keys.MODEL_SOURCE] = "size"
    return []


def _url_algo(params: dict[str, str | None]) -> list[str]:
    """Recipe labels (DAPO/GSPO) that the estimator alone does not tell."""
    algo = params.get("algo")
    if not algo:
        return []
    current = ALGORITHM_BY_LABEL.get(st.session_state.get(keys.ALGO, ""))
    wanted = ALGORITHM_BY_LABEL.get(algo)
    if wanted is None or (current is not None and wanted.adv_estimator != current.adv_estimator):
        L = lang()
        return [tr(L, "url.bad_value", key="algo", value=algo[:80], why=tr(L, "url.algo_mismatch"))]
    st.session_state[keys.ALGO] = algo
    return []


def apply_url_fields(preset: str, params: dict[str, str | None]) -> list[str]:
    """Set widgets from dotted URL parameters; a parameter that cannot be used is reported and skipped."""
    problems: list[str] = []
    accepted: dict[str, Any] = {}
    try:
        base = preset_flat(preset)
    except InputError:
        return problems
    for key, text in params.items():
        if key in UI_PARAMS or text is None:
            continue
        value, why = _url_value(preset, accepted, key, text)
        if why:
            problems.append(why)
        else:
            accepted[key] = value
    _set_url_fields(accepted, base)
    return problems + _url_size(params) + _url_algo(params)


def _field_problem(preset: str, accepted: dict[str, Any], spec: FieldSpec, value: Any) -> str:
    """Why ``spec.path = value`` is unusable by itself ('' when fine or only wrong in combination)."""
    if spec.path == "model.config":
        if value is None:
            return ""
        try:
            parse_config(value)
        except InputError as err:
            return "; ".join(p.removeprefix("model.config").lstrip(".: ") for p in err.problems)
        except (ValueError, TypeError) as exc:
            return type(exc).__name__
        return ""
    if spec.path == "model.path" and value not in model_presets(strict=False):
        return tr(lang(), "url.unknown_model")
    try:
        load_scenario(scenario_preset(preset), overrides={**accepted, spec.path: value})
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
    values = field_values.values()
    for path in widget_fields():
        if path in values:
            overrides[path] = values[path]
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


MAX_CACHED_OVERRIDES_CHARS = 64 * 1024  # a pasted config.json can be 2 MiB: such a scenario is not kept in the LRU


def _validated(preset: str, overrides: dict[str, Any]) -> Scenario:
    """``load_scenario(preset, overrides)``, validated once per (preset, overrides) in the process (a Scenario is
    frozen and shared like the estimate); overrides longer than ``MAX_CACHED_OVERRIDES_CHARS`` are validated on every
    run rather than held in the LRU (512 of them would be a GiB)."""
    text = repr(sorted(overrides.items()))

    def make() -> Scenario:
        return load_scenario(scenario_preset(preset), overrides=overrides)

    return (
        cache.CACHE.get_or_make(("scenario", preset, cache.digest(text)), make)
        if len(text) <= MAX_CACHED_OVERRIDES_CHARS
        else make()
    )


def build_scenario() -> Built:
    """Read the inputs -> native overrides -> ``load_scenario(preset, overrides)``; never raises."""
    preset = st.session_state.get(keys.PRESET) or default_preset()
    overrides, problems, note = current_overrides()
    built = Built(None, problems=list(problems), overrides=overrides, model_note=note)
    built.problems += list(st.session_state.get(keys.PRESET_PROBLEMS) or [])
    if built.problems:
        return built
    try:
        built.scenario = _validated(preset, overrides)
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
        base = preset_flat(preset)
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
    if "model.config" in params and not fits_in_link(params["model.config"]):
        del params["model.config"]  # too long for a link: the sidebar says to share the config.json file
    from ui.profiles import url_param  # the applied calibration profile (imports this module)

    return params | url_param()


def fits_in_link(config_text: str) -> bool:
    """Whether an encoded config.json is short enough for the share link (``MAX_LINK_CONFIG_CHARS``)."""
    return len(urlencode({"model.config": config_text})) <= MAX_LINK_CONFIG_CHARS


def sync_url(built: Built, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Write the current inputs (and a page's ``extra`` parameters) into the address bar, only when they changed;
    returns the parameters (the share link of the page)."""
    params = url_params(built) | (extra or {})
    current = {k: st.query_params.get(k) for k in st.query_params}
    if current != params:
        st.query_params.from_dict(params)
    return params
