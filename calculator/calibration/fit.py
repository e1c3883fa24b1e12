"""Fit the scenario's efficiency fields to a run's measured phase times, pulled toward their cited defaults.

The model: each phase time the calculator predicts, ``t_p(theta)``, depends on the ``efficiency.*`` fields
``theta`` (calculator/inputs/constants.py). With ``delta_k = log(theta_k / theta0_k)`` (theta0: the scenario's
value, i.e. the cited default unless the user set it), the fit minimises

    sum_p  (log m_p - log t_p(theta))^2 / sigma_p^2   +   sum_k  delta_k^2 / SIGMA_PRIOR^2

(maximum a posteriori with a log-normal prior around the default: regularised least squares on log ratios) by
Gauss-Newton with the Jacobian ``J_pk = d log t_p / d log theta_k`` taken by finite differences of
``estimate()``, each theta kept inside its declared bounds. ``sigma_p`` is the phase's relative standard error
of the median (``measured.Stat.rel_sem``) combined with ``MODEL_SIGMA``, the part of a phase the model cannot
reproduce step to step. The uncertainty of each fitted value is the posterior standard deviation
``sqrt(((J^T W J + I / SIGMA_PRIOR^2)^-1)_kk)`` in log space, reported as an absolute +-.

Each field is fitted on the phases :class:`FitParam` declares it drives (its Jacobian entries elsewhere are set to
0; the prediction itself keeps every effect); a measured phase no field declares (``weight_sync``: its timer also holds
the rollout engine's wake-up) is compared but not fitted.

Identifiability: a field is fitted only if the log can see it and tell it apart from the others.
* It must move a measured phase: ``max_p |J_pk| >= MIN_SENSITIVITY`` (a 10 % change moves some phase by at least
  ~0.3 %), else it is refused ("the log cannot see it").
* Fields are taken in order of how much they move the measured phases; one whose column of ``J`` points the same
  way as an already accepted one (cosine >= MAX_COSINE, weighted by 1/sigma_p^2) is refused: two fields that only
  scale the same phase(s) in the same proportion cannot be separated by per-phase times (e.g. ``prefill_mfu`` and
  ``decode_hbm_efficiency`` both live in ``timing_s/gen``).
* Never more fields than measured phases.
* The data must pin it down: with the fields kept so far, its posterior log-space standard deviation must be
  below ``MAX_POSTERIOR_SHARE`` of the prior's (the log shrinks its uncertainty at least 2x); the weakest field is
  dropped and the test repeated (e.g. ``prefill_mfu`` when the prefill is a small share of ``timing_s/gen``).

New efficiency fields are fitted by adding a :class:`FitParam` line to ``FIT_PARAMS``. Not listed on purpose:
``nvlink_efficiency`` / ``network_efficiency``: the phase that shows them most, ``timing_s/update_weights``
(``checkpoint_manager.update_weights`` in verl 0.9.1's ``ray_trainer.py``), also holds the rollout's wake-up and
resume, so a fit would push the bandwidths to their bound and distort the FSDP terms of every other phase; the
weight sync's fixed part (``engine_wake_sleep_s``) is fitted instead. ``decode_step_host_us``: one rollout timer
cannot separate it from ``decode_hbm_efficiency`` (both scale the decode steps); ``phase_fixed_overhead_s``: in a
log of one scale it moves every phase with the rates (a log at several GPU counts could separate it).
What it leaves out: cross-step variation of the lengths (the prediction uses the logged means), phases the model
does not have (``adv``, rule-based ``reward``), and correlations between phases beyond the shared fields.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

SIGMA_PRIOR = 0.7  # log-space prior width: the default is right within a factor ~2 (one sigma)
MODEL_SIGMA = 0.05  # relative error floor of a predicted phase after fitting (mechanisms not modelled)
MIN_SENSITIVITY = 0.03
MAX_COSINE = 0.95
MAX_POSTERIOR_SHARE = 0.5
FD_STEP = 1.1  # finite-difference multiplier
MAX_ITERATIONS = 6


@dataclass(frozen=True)
class FitParam:
    """A scenario field a log can calibrate: the phases it drives (declared; the Jacobian decides), its bounds."""

    field: str
    phases: tuple[str, ...]
    lower: float
    upper: float
    what: str


FIT_PARAMS: tuple[FitParam, ...] = (
    FitParam("efficiency.train_mfu", ("update_actor", "update_critic"), 0.03, 0.9, "fwd+bwd GEMM rate of the updates"),
    FitParam(
        "efficiency.forward_mfu",
        ("old_log_prob", "ref_log_prob", "critic_values", "reward"),
        0.03,
        0.9,
        "forward-only GEMM rate (log-prob, values)",
    ),
    FitParam("efficiency.decode_hbm_efficiency", ("rollout",), 0.05, 1.0, "HBM bandwidth share of the decode steps"),
    FitParam("efficiency.prefill_mfu", ("rollout",), 0.03, 0.9, "GEMM rate of the rollout's prefill"),
    FitParam("efficiency.pcie_efficiency", ("ref_log_prob", "update_actor"), 0.05, 1.0, "host<->device copy bandwidth"),
    FitParam(
        "efficiency.train_host_us_per_layer_pass",
        ("update_actor", "old_log_prob", "ref_log_prob"),
        10.0,
        20_000.0,
        "CPU time to issue one layer's kernels (small micro-batches)",
    ),
    FitParam(
        "efficiency.eager_decode_host_us_per_layer",
        ("rollout",),
        10.0,
        20_000.0,
        "CPU time per layer of an eager decode step",
    ),
    FitParam(
        "efficiency.engine_wake_sleep_s",
        ("weight_sync",),
        0.05,
        600.0,
        "rollout engine wake-up / sleep around the weight sync (timing_s/update_weights holds it)",
    ),
)

Predict = Callable[[dict[str, float]], dict[str, float]]


@dataclass(frozen=True)
class FitResult:
    values: dict[str, float]
    uncertainty: dict[str, float]
    refused: dict[str, str]
    predicted_before_s: dict[str, float]
    predicted_after_s: dict[str, float]
    iterations: int


def _log_predictions(predict: Predict, theta: dict[str, float], phases: list[str]) -> list[float]:
    out = predict(theta)
    return [math.log(max(out.get(p, 0.0), 1e-9)) for p in phases]


def jacobian(
    predict: Predict, theta: dict[str, float], fields: list[str], phases: list[str], params: tuple[FitParam, ...] = ()
) -> list[list[float]]:
    """``J[p][k] = d log t_p / d log theta_k`` (forward differences; a field at its upper bound steps down)."""
    base = _log_predictions(predict, theta, phases)
    cols: list[list[float]] = []
    for f in fields:
        step = FD_STEP
        bound = next((fp.upper for fp in params or FIT_PARAMS if fp.field == f), math.inf)
        if theta[f] * step > bound:
            step = 1 / FD_STEP
        moved = _log_predictions(predict, {**theta, f: theta[f] * step}, phases)
        cols.append([(m - b) / math.log(step) for m, b in zip(moved, base, strict=True)])
    return [[cols[k][p] for k in range(len(fields))] for p in range(len(phases))]


def masked(
    jac: list[list[float]], fields: list[str], phases: list[str], params: tuple[FitParam, ...]
) -> list[list[float]]:
    """``J`` with each field's entries kept only for the phases it is declared to drive: a field is fitted on those
    phases alone (e.g. ``decode_hbm_efficiency`` also sets the vLLM weight-load term of ``weight_sync``, but
    ``timing_s/update_weights`` holds the engine's wake-up, which the model lacks, so it must not pull the fit)."""
    declared = {fp.field: set(fp.phases) for fp in params}
    return [
        [v if phases[i] in declared.get(f, set()) else 0.0 for v, f in zip(row, fields, strict=True)]
        for i, row in enumerate(jac)
    ]


def _cosine(a: list[float], b: list[float], w: list[float]) -> float:
    dot = sum(x * y * wi for x, y, wi in zip(a, b, w, strict=True))
    na = math.sqrt(sum(x * x * wi for x, wi in zip(a, w, strict=True)))
    nb = math.sqrt(sum(y * y * wi for y, wi in zip(b, w, strict=True)))
    return abs(dot) / (na * nb) if na > 0 and nb > 0 else 0.0


def select_identifiable(
    jac: list[list[float]], fields: list[str], phases: list[str], weights: list[float]
) -> tuple[list[str], dict[str, str]]:
    """The fields a log of these phases can fit, and the reason each other one is refused."""
    column = {f: [row[k] for row in jac] for k, f in enumerate(fields)}
    refused: dict[str, str] = {}
    visible = []
    for f in fields:
        strongest = max((abs(v) for v in column[f]), default=0.0)
        if strongest < MIN_SENSITIVITY:
            refused[f] = (
                f"the log cannot see it: a 10% change moves no measured phase ({', '.join(phases)}) by more than "
                f"{strongest * 0.1:.2%}"
            )
        else:
            visible.append(f)
    visible.sort(key=lambda f: -sum(v * v * w for v, w in zip(column[f], weights, strict=True)))
    accepted: list[str] = []
    for f in visible:
        twin = next((a for a in accepted if _cosine(column[f], column[a], weights) >= MAX_COSINE), None)
        moved = [p for p, v in zip(phases, column[f], strict=True) if abs(v) >= MIN_SENSITIVITY]
        if twin is not None:
            refused[f] = (
                f"cannot be separated from {twin}: both move only {', '.join(moved)} in the same proportion, and the "
                f"log gives one time per phase; {twin} drives the larger share, so it is fitted and this one stays "
                "at its default"
            )
        elif len(accepted) >= len(phases):
            refused[f] = f"the log has {len(phases)} measured phase(s) and {len(accepted)} field(s) already use them"
        else:
            accepted.append(f)
    _drop_weak(jac, fields, weights, accepted, refused)
    return accepted, refused


def _drop_weak(
    jac: list[list[float]], fields: list[str], weights: list[float], accepted: list[str], refused: dict[str, str]
) -> None:
    """Refuse, one at a time, the kept field the log pins down least (posterior sd over MAX_POSTERIOR_SHARE x prior)."""
    while accepted:
        cols = [[row[fields.index(f)] for f in accepted] for row in jac]
        sd = _posterior_sd(_normal_matrix(cols, weights, len(accepted)), len(accepted))
        worst = max(range(len(accepted)), key=lambda k: sd[k])
        if sd[worst] <= MAX_POSTERIOR_SHARE * SIGMA_PRIOR:
            return
        refused[accepted[worst]] = (
            f"the log pins it down only weakly (log-space +-{sd[worst]:.2f} against the prior's +-{SIGMA_PRIOR:.2f}: "
            "its phases are explained as well by the other fields); it stays at its default"
        )
        del accepted[worst]


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (the systems here are at most 8 x 8 and positive definite)."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        piv = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[piv] = m[piv], m[c]
        for r in range(c + 1, n):
            f = m[r][c] / m[c][c]
            for k in range(c, n + 1):
                m[r][k] -= f * m[c][k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][k] * x[k] for k in range(r + 1, n))) / m[r][r]
    return x


def _normal_matrix(jac: list[list[float]], weights: list[float], n: int) -> list[list[float]]:
    prior = 1 / SIGMA_PRIOR**2
    return [
        [
            sum(w * row[i] * row[j] for row, w in zip(jac, weights, strict=True)) + (prior if i == j else 0.0)
            for j in range(n)
        ]
        for i in range(n)
    ]


def _clip(theta0: float, delta: float, fp: FitParam) -> float:
    lo, hi = math.log(fp.lower / theta0), math.log(fp.upper / theta0)
    return min(max(delta, lo), hi)


def fit(
    predict: Predict,
    theta0: dict[str, float],
    measured_s: dict[str, float],
    rel_sigma: dict[str, float],
    params: tuple[FitParam, ...] = FIT_PARAMS,
) -> FitResult:
    """Fit ``params`` (starting at and pulled toward ``theta0``) to ``measured_s`` (phase -> seconds)."""
    before = predict(theta0)
    declared = {p for fp in params for p in fp.phases}
    phases = [p for p in measured_s if measured_s[p] > 0 and before.get(p, 0.0) > 0 and p in declared]
    weights = [1 / (rel_sigma.get(p, 0.0) ** 2 + MODEL_SIGMA**2) for p in phases]
    by_field = {fp.field: fp for fp in params}
    fields = list(by_field)
    if not phases:
        return FitResult({}, {}, dict.fromkeys(fields, "no measured phase the model predicts"), before, before, 0)
    jac = masked(jacobian(predict, theta0, fields, phases, params), fields, phases, params)
    accepted, refused = select_identifiable(jac, fields, phases, weights)
    delta = dict.fromkeys(accepted, 0.0)
    target = [math.log(measured_s[p]) for p in phases]
    iterations = 0
    normal = [[1.0]]
    for iterations in range(1, MAX_ITERATIONS + 1):  # noqa: B007 - the count is reported
        theta = {**theta0, **{f: theta0[f] * math.exp(d) for f, d in delta.items()}}
        jac = masked(jacobian(predict, theta, accepted, phases, params), accepted, phases, params) if accepted else []
        resid = [t - y for t, y in zip(target, _log_predictions(predict, theta, phases), strict=True)]
        if not accepted:
            break
        normal = _normal_matrix(jac, weights, len(accepted))
        grad = [
            sum(w * row[k] * r for row, w, r in zip(jac, weights, resid, strict=True)) - delta[f] / SIGMA_PRIOR**2
            for k, f in enumerate(accepted)
        ]
        step = _solve(normal, grad)
        new = {f: _clip(theta0[f], delta[f] + s, by_field[f]) for f, s in zip(accepted, step, strict=True)}
        moved = max(abs(new[f] - delta[f]) for f in accepted)
        delta = new
        if moved < 1e-4:
            break
    theta = {f: theta0[f] * math.exp(d) for f, d in delta.items()}
    sd = _posterior_sd(normal, len(accepted)) if accepted else []
    return FitResult(
        values=theta,
        uncertainty={f: theta[f] * s for f, s in zip(accepted, sd, strict=True)},
        refused=refused,
        predicted_before_s=before,
        predicted_after_s=predict({**theta0, **theta}),
        iterations=iterations,
    )


def _posterior_sd(normal: list[list[float]], n: int) -> list[float]:
    """Square roots of the diagonal of ``normal^-1`` (column by column with :func:`_solve`)."""
    out = []
    for k in range(n):
        e = [1.0 if i == k else 0.0 for i in range(n)]
        out.append(math.sqrt(max(_solve(normal, e)[k], 0.0)))
    return out
