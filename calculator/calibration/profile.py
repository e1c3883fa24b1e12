"""Calibration profiles: the fitted values of one run, saved as YAML and applied to other scenarios.

A profile is validated by :class:`CalibrationProfile` like every preset (pydantic, ``extra="forbid"``): only the
fields :data:`calculator.calibration.fit.FIT_PARAMS` declares (plus ``overheads.fragmentation_fraction``), each
inside its declared bounds. Applying one (``estimate --calibration FILE``, the dashboard's profile selector) sets
those fields as native scenario overrides; anything given after it (``--set``) still wins.

A team keeps its profiles in ``$RLPLAN_PRESETS_DIR/calibrations/`` (the preset directory's layout,
calculator/inputs/presets.py); they are read through the bounded readers, inside that directory only, and
``--calibration ID`` looks one up by id before treating the value as a path.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from calculator.calibration.compare import FRAGMENTATION_FIELD, Calibration
from calculator.calibration.fit import FIT_PARAMS
from calculator.errors import InputError, from_validation_error
from calculator.inputs.limits import MAX_PRESET_FILES
from calculator.inputs.presets import EXTRA_PRESETS_ENV, extra_presets_dir
from calculator.inputs.readers import (
    dump_yaml,
    read_mapping_file,
    read_yaml_text,
    regular_file_exists,
    write_new_text_file,
    yaml_files,
)
from calculator.inputs.scenario import Scenario
from calculator.verl.export import format_overrides

PROFILE_KIND = "rlplan-calibration"
CALIBRATIONS_DIR = "calibrations"
BOUNDS: dict[str, tuple[float, float]] = {fp.field: (fp.lower, fp.upper) for fp in FIT_PARAMS} | {
    FRAGMENTATION_FIELD: (0.0, 1.0)
}
MAX_LAUNCH_LINES = 400
MAX_LAUNCH_LINE_CHARS = 400
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class ProfileSource(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(max_length=200)
    gpu: str = Field(max_length=100)
    num_gpus: int = Field(ge=1, le=1_000_000)
    verl_version: str = Field(max_length=20)
    algorithm: str = Field(default="", max_length=40)
    log: str = Field(default="", max_length=300, description="Name of the log file the values were fitted on.")
    steps_used: int = Field(default=0, ge=0)
    lengths: dict[str, int] = Field(default_factory=dict, description="The logged mean lengths the fit used.")
    launch: list[str] = Field(
        default_factory=list,
        max_length=MAX_LAUNCH_LINES,
        description="The source run's verl settings (key=value, as `export --format overrides` writes them).",
    )

    @field_validator("launch")
    @classmethod
    def _launch(cls, v: list[str]) -> list[str]:
        for line in v:
            if len(line) > MAX_LAUNCH_LINE_CHARS or "=" not in line or "\n" in line:
                raise ValueError(f"each line is one key=value of at most {MAX_LAUNCH_LINE_CHARS} characters")
        return v


class CalibrationProfile(BaseModel):
    """One run's fitted values, where they came from and how well they fit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str = PROFILE_KIND
    id: str = Field(max_length=100)
    name: str = Field(default="", max_length=200)
    created: dt.date
    source: ProfileSource
    fitted: dict[str, float]
    uncertainty: dict[str, float] = Field(default_factory=dict)
    residuals: dict[str, float] = Field(default_factory=dict, description="Per phase, measured / fitted - 1.")
    refused: dict[str, str] = Field(default_factory=dict)

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        if v != PROFILE_KIND:
            raise ValueError(f"must be {PROFILE_KIND!r}")
        return v

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not _ID_RE.match(v):
            raise ValueError("letters, digits, '.', '_' and '-' only, starting with a letter or digit")
        return v

    @field_validator("fitted")
    @classmethod
    def _fitted(cls, v: dict[str, float]) -> dict[str, float]:
        for key, value in v.items():
            if key not in BOUNDS:
                raise ValueError(f"{key}: not a calibrated field (allowed: {', '.join(sorted(BOUNDS))})")
            lo, hi = BOUNDS[key]
            if not lo <= value <= hi:
                raise ValueError(f"{key}: {value} is outside [{lo}, {hi}]")
        return v


def validate_fitted(data: Any, what: str = "calibration") -> dict[str, float]:
    """Fitted values from outside (a dashboard link): a mapping of calibrated fields (:data:`BOUNDS`) to numbers
    inside their bounds, checked as a profile file's ``fitted`` is. Raises :class:`InputError` naming ``what``."""
    if not isinstance(data, dict) or not data or len(data) > len(BOUNDS):
        raise InputError(f"{what}: fitted values must be a mapping of at most {len(BOUNDS)} calibrated fields")
    out: dict[str, float] = {}
    for key, value in data.items():
        if key not in BOUNDS:
            raise InputError(
                f"{what}: {str(key)[:80]!r} is not a calibrated field (allowed: {', '.join(sorted(BOUNDS))})"
            )
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(f"{what}: {key} must be a number")
        lo, hi = BOUNDS[key]
        if not lo <= value <= hi:
            raise InputError(f"{what}: {key} = {value} is outside [{lo}, {hi}]")
        out[key] = float(value)
    return out


def profile_overrides(profile: CalibrationProfile) -> dict[str, Any]:
    """The profile as native scenario overrides (``load_scenario(..., overrides)``)."""
    return dict(profile.fitted)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:40] or "run"


def make_profile(
    scenario: Scenario,
    calibration: Calibration,
    *,
    log_name: str = "",
    today: dt.date | None = None,
    name: str = "",
) -> CalibrationProfile:
    """A profile from a calibration. Its id is generated (model, GPU, count, date and a content hash), or, when the
    user gives a ``name``, that name sanitised (letters and digits joined by '-', at most 40 characters): the id is
    the team file's name, so nothing else of a typed name reaches the file system."""
    today = today or dt.date.today()
    fitted = {k: round(v, 6) for k, v in calibration.fitted.items()}
    digest = hashlib.sha256(repr(sorted(fitted.items())).encode()).hexdigest()[:8]
    model = scenario.model.path or "model"
    hw = scenario.hardware
    pid = f"{_slug(model)}-{_slug(hw.gpu)}x{hw.num_gpus}-{today.isoformat()}-{digest}"
    if name.strip():
        pid = _slug(name[:200])
    return CalibrationProfile(
        id=pid,
        name=name.strip()[:200] or f"{model} on {hw.num_gpus} x {hw.gpu}, calibrated {today.isoformat()}",
        created=today,
        source=ProfileSource(
            model=model,
            gpu=hw.gpu,
            num_gpus=hw.num_gpus,
            verl_version=scenario.verl_version,
            algorithm=str(scenario.algorithm.adv_estimator),
            log=Path(log_name).name[:300] if log_name else "",
            steps_used=len(calibration.steps_used),
            lengths=dict(calibration.lengths),
            launch=_launch_lines(scenario),
        ),
        fitted=fitted,
        uncertainty={d.field: round(d.uncertainty, 6) for d in calibration.fitted_detail},
        residuals={k: round(v, 4) for k, v in calibration.residuals.items()},
        refused=dict(calibration.refused),
    )


def _launch_lines(scenario: Scenario) -> list[str]:
    """The scenario's verl settings as ``key=value`` lines (bounded; a line too long for a profile is left out)."""
    text = format_overrides(scenario, "overrides")
    lines = [ln for ln in text.splitlines() if "=" in ln and len(ln) <= MAX_LAUNCH_LINE_CHARS]
    return lines[:MAX_LAUNCH_LINES]


def profile_yaml(profile: CalibrationProfile) -> str:
    return "# rlplan calibration profile: apply with --calibration FILE\n" + dump_yaml(
        profile.model_dump(mode="json"), sort_keys=False
    )


def parse_profile(data: Any, what: str) -> CalibrationProfile:
    if not isinstance(data, dict):
        raise InputError(f"{what}: must be a mapping (a calibration profile)")
    try:
        return CalibrationProfile(**data)
    except ValidationError as err:
        raise from_validation_error(err, prefix=f"{what}: ") from None


def profile_from_text(text: str, what: str = "calibration profile") -> CalibrationProfile:
    return parse_profile(read_yaml_text(text, what), what)


def team_dir() -> Path | None:
    """``$RLPLAN_PRESETS_DIR/calibrations`` (None when the variable is unset)."""
    extra = extra_presets_dir()
    return extra / CALIBRATIONS_DIR if extra is not None else None


def team_profiles() -> tuple[dict[str, CalibrationProfile], list[str]]:
    """The team's profiles by id, and one line per file that did not load."""
    d = team_dir()
    out: dict[str, CalibrationProfile] = {}
    problems: list[str] = []
    if d is None:
        return out, problems
    files, _ = yaml_files(d, MAX_PRESET_FILES)
    for f in files:
        what = f"${EXTRA_PRESETS_ENV}/{CALIBRATIONS_DIR}/{f.name}"
        try:
            p = parse_profile(read_mapping_file(f, what, within=[d]), what)
        except InputError as err:  # one line per file, naming it
            problems.append(f"{what}: " + "; ".join(q.removeprefix(f"{what}: ") for q in err.problems))
            continue
        out[p.id] = p
    return out, problems


def load_profile(ref: str) -> CalibrationProfile:
    """``--calibration REF``: a team profile id, else a YAML file path."""
    profiles, _ = team_profiles()
    if ref in profiles:
        return profiles[ref]
    what = f"--calibration {ref}"
    if not Path(ref).exists():
        known = ", ".join(sorted(profiles)) or f"none in ${EXTRA_PRESETS_ENV}/{CALIBRATIONS_DIR}"
        raise InputError(f"{what}: no such file nor team profile id (team profiles: {known})")
    return parse_profile(read_mapping_file(ref, what), what)


def team_profile_exists(profile_id: str) -> bool:
    """Whether the team directory already has ``<profile_id>.yaml`` (the id is a validated profile id)."""
    d = team_dir()
    return d is not None and _ID_RE.match(profile_id) is not None and regular_file_exists(d / f"{profile_id}.yaml")


def save_team_profile(profile: CalibrationProfile, *, overwrite: bool = False) -> Path:
    """Write ``profile`` into the team directory as ``<id>.yaml`` (the id is validated: a plain file name). An
    existing file is overwritten only with ``overwrite=True`` (the user confirmed). Raises :class:`InputError` when
    ``$RLPLAN_PRESETS_DIR`` is not set or the file exists."""
    d = team_dir()
    if d is None:
        raise InputError(f"saving a team profile needs ${EXTRA_PRESETS_ENV} (the team's preset directory)")
    text = profile_yaml(profile)
    return write_new_text_file(d, f"{profile.id}.yaml", text, "calibration profile", replace=overwrite)
