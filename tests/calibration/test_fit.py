"""The regularised fit on a toy model with known answers, and the identifiability rules."""

from __future__ import annotations

import math

import pytest

from calculator.calibration.fit import (
    MIN_SENSITIVITY,
    SIGMA_PRIOR,
    FitParam,
    _solve,
    fit,
    select_identifiable,
)

PARAMS = (
    FitParam("a", ("p1",), 0.01, 1.0, "toy"),
    FitParam("b", ("p2",), 0.01, 1.0, "toy"),
    FitParam("c", ("p2",), 0.01, 1.0, "toy: moves p2 exactly like b"),
    FitParam("d", (), 0.01, 1.0, "toy: moves nothing"),
)


def toy(theta: dict[str, float]) -> dict[str, float]:
    # p1 = 10 / a; p2 = 20 / (b c); d changes nothing
    return {"p1": 10 / theta["a"], "p2": 20 / (theta["b"] * theta["c"])}


THETA0 = {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.5}


def test_recovers_a_known_value_and_refuses_the_twin_and_the_invisible_field() -> None:
    # measured p1 = 10 / 0.25 = 40: a should go to ~0.25 (shrunk a little toward 0.5 by the prior)
    measured = {"p1": 40.0, "p2": 80.0}
    r = fit(toy, THETA0, measured, {}, PARAMS)
    assert r.values["a"] == pytest.approx(0.25, rel=0.02)
    assert "d" in r.refused and "cannot see it" in r.refused["d"]
    twin = "c" if "c" in r.refused else "b"
    assert "cannot be separated" in r.refused[twin]
    fitted_twin = "b" if twin == "c" else "c"
    assert 20 / (r.values[fitted_twin] * 0.5) == pytest.approx(80.0, rel=0.02)
    assert r.predicted_after_s["p1"] == pytest.approx(40.0, rel=0.02)


def test_the_prior_pulls_toward_the_default_when_the_phase_is_noisy() -> None:
    # weight 1 / (0.3^2 + 0.05^2) = 10.8 against the prior's 1 / 0.7^2 = 2.04: log(a/0.5) = log(0.5) x 10.8 / 12.85
    # -> a = 0.5 x 0.5^0.84 = 0.279; a precise phase (weight 400) gives 0.5 x 0.5^0.995 = 0.2509
    noisy = fit(toy, THETA0, {"p1": 40.0}, {"p1": 0.3}, PARAMS[:1])
    precise = fit(toy, THETA0, {"p1": 40.0}, {"p1": 0.0}, PARAMS[:1])
    assert precise.values["a"] == pytest.approx(0.2509, rel=0.005)
    assert noisy.values["a"] == pytest.approx(0.279, rel=0.01)


def test_a_field_the_log_pins_down_only_weakly_is_refused() -> None:
    # 100 % noise: posterior sd 1 / sqrt(1 / 1.0025 + 2.04) = 0.57 > 0.5 x 0.7
    r = fit(toy, THETA0, {"p1": 40.0}, {"p1": 1.0}, PARAMS[:1])
    assert "a" not in r.values and "only weakly" in r.refused["a"]


def test_bounds_are_respected() -> None:
    r = fit(toy, THETA0, {"p1": 1e6}, {}, PARAMS[:1])  # would need a = 1e-5
    assert r.values["a"] == pytest.approx(0.01)


def test_uncertainty_is_the_posterior_sd() -> None:
    # one linear field: J = -1, weight 1/0.05^2 = 400, prior 1/0.7^2 -> sd_log = 1/sqrt(400 + 2.04)
    r = fit(toy, THETA0, {"p1": 20.0}, {"p1": 0.0}, PARAMS[:1])
    sd_log = 1 / math.sqrt(400 + 1 / SIGMA_PRIOR**2)
    assert r.uncertainty["a"] == pytest.approx(r.values["a"] * sd_log, rel=0.01)


def test_never_more_fields_than_phases() -> None:
    jac = [[-1.0, -0.5]]  # one phase, two fields pointing the same way
    accepted, refused = select_identifiable(jac, ["x", "y"], ["p"], [400.0])
    assert accepted == ["x"] and "y" in refused
    assert MIN_SENSITIVITY > 0


def test_solve_small_system() -> None:
    # 2x + y = 5, x + 3y = 10 -> x = 1, y = 3
    assert _solve([[2.0, 1.0], [1.0, 3.0]], [5.0, 10.0]) == pytest.approx([1.0, 3.0])
