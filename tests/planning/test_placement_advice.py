from calculator.planning.placement_advice import placement_hint
from calculator.report.models import TimeOut


class _R:
    """The two Report fields the hint reads."""

    def __init__(self, phases: dict[str, float], terms: dict[str, dict[str, float]], pools=None):
        self.time = TimeOut(step_s=sum(phases.values()), phases_s=phases, tokens_per_s=1.0, terms_s=terms)
        self.pools = pools


def test_no_hint_when_training_dominates():
    assert placement_hint(_R({"rollout": 40.0, "update_actor": 60.0}, {})) is None  # type: ignore[arg-type]


def test_tail_bound_generation():
    # generation 80 of 100 s, 50 s of it past the mean: tail-bound; a split hides min(80, 20) = 20 s
    hint = placement_hint(_R({"rollout": 80.0, "update_actor": 20.0}, {"rollout": {"long_tail": 50.0}}))  # type: ignore[arg-type]
    assert hint is not None and "cannot shorten" in hint and "hides at most 20 s" in hint


def test_volume_bound_generation():
    hint = placement_hint(_R({"rollout": 70.0, "update_actor": 30.0}, {"rollout": {"long_tail": 5.0}}))  # type: ignore[arg-type]
    assert hint is not None and "more rollout GPUs shorten it" in hint and "30 s" in hint


def test_no_hint_for_split_reports():
    assert placement_hint(_R({"rollout": 80.0, "x": 1.0}, {}, pools=[1])) is None  # type: ignore[arg-type]
