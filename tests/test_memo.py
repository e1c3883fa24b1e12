"""calculator.memo: the last result by identity, never by equality."""

from __future__ import annotations

from calculator import load_scenario
from calculator.memo import last_by_identity
from calculator.report.estimate import build_context
from calculator.resolve.resolved import resolve


def test_same_object_answers_from_memory_and_new_object_recomputes():
    calls: list[object] = []

    @last_by_identity
    def f(x: list[int]) -> int:
        calls.append(x)
        return sum(x)

    a, b = [1, 2], [1, 2]  # equal, not identical
    assert f(a) == 3 and f(a) == 3
    assert len(calls) == 1  # the second call with the same object did not recompute
    assert f(b) == 3
    assert len(calls) == 2  # an equal but new object is computed afresh
    assert f(a) == 3
    assert len(calls) == 3  # only the last pair is kept
    assert f.__name__ == "f"


def test_resolve_and_context_are_shared_only_for_the_same_scenario():
    s = load_scenario("qwen2.5-7b-grpo-8xh100")
    assert resolve(s) is resolve(s)
    assert build_context(s) is build_context(s)
    copy = s.model_copy()
    assert resolve(copy) is not resolve(s)
    assert resolve(copy) == resolve(s)


def test_reloaded_presets_are_read_again_for_the_same_scenario(tmp_path, monkeypatch):
    """A scenario estimated, its team GPU preset edited and the presets reloaded (``clear_cache``): estimating
    the very same scenario object again reads the new preset, not the plan remembered by identity."""
    import yaml

    from calculator import Scenario, estimate
    from calculator.inputs.presets import PRESETS_DIR
    from tests.support.presets_env import presets_dir

    gpu = yaml.safe_load((PRESETS_DIR / "gpus" / "h100-80gb.yaml").read_text())
    gpu.update(id="team-gpu", name="Team GPU")
    (tmp_path / "gpus").mkdir()
    target = tmp_path / "gpus" / "team-gpu.yaml"
    target.write_text(yaml.safe_dump(gpu))
    with presets_dir(monkeypatch, tmp_path):
        data = load_scenario("qwen2.5-7b-grpo-8xh100").model_dump()
        data["hardware"]["gpu"] = "team-gpu"
        s = Scenario.model_validate(data)
        before = estimate(s).hardware.usable_memory_gib
        gpu.update(memory_gb=gpu["memory_gb"] * 2, usable_memory_gib=gpu["usable_memory_gib"] * 2)
        target.write_text(yaml.safe_dump(gpu))
        from calculator.inputs.presets import clear_cache

        clear_cache()
        after = estimate(s).hardware.usable_memory_gib
    assert after == 2 * before  # the edited preset was read
