"""tools/verl_examples_sweep.py: one row per launch script, warnings counted by kind, refusals and skips named."""

from __future__ import annotations

import json
from pathlib import Path

from tools import verl_examples_sweep as sweep


def test_gpu_from_file_name_then_comment():
    assert sweep.gpu_for(Path("qwen2-7b_grpo_2_h800_fsdp_vllm.sh")) == "h800-80gb"
    assert sweep.gpu_for(Path("run_qwen3-8b_npu.sh")) == "ascend-910b-64gb"
    assert sweep.gpu_for(Path("run_deepseek671b_math_megatron_96gb.sh")) == "h20-96gb"
    assert sweep.gpu_for(Path("run.sh"), "# run on 8xH20\nset -x\n") == "h20-96gb"
    assert sweep.gpu_for(Path("run.sh"), "# tested in NNODES=1~4 * 96G H20 GPU\n") == "h20-96gb"
    assert sweep.gpu_for(Path("run.sh"), "set -x\n") is None


def test_warning_kinds():
    counts = sweep.count_kinds(
        [
            "verl overrides not modelled (ignored): a.b, c.d",  # two unknown keys in one warning
            "verl trainer.critic_warmup: not modelled; likely effect: steps that train only the critic",
            "verl override x.y: value has an unresolved shell variable ($HOME: not set in the script); ignored",
            "verl override actor_rollout_ref.model.path=org/m: not a model preset; the model comes from ...",
            "verl: [actor] Please set at least one of ...",
            "verl rejects the config: ...",
            "phase rollout is within 5% of the usable memory",
        ]
    )
    assert counts == {
        "unknown": 2,
        "not_modelled": 1,
        "unresolved": 1,
        "model_fallback": 1,
        "verl_check": 2,
        "other": 1,
    }


def test_rows_for_a_directory(tmp_path: Path, capsys):
    (tmp_path / "examples" / "sft").mkdir(parents=True)
    (tmp_path / "examples" / "sft" / "run_sft.sh").write_text("torchrun -m verl.trainer.fsdp_sft_trainer\n")
    (tmp_path / "examples" / "run_qwen3-8b_2_h800.sh").write_text(
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B "
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 trainer.n_gpus_per_node=2 trainer.nnodes=1\n"
    )
    (tmp_path / "examples" / "bad.sh").write_text("python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.n=zero\n")
    assert sweep.main([str(tmp_path), "--json", "--timeout", "120"]) == 0
    rows = {r["script"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert rows["examples/sft/run_sft.sh"]["exit_code"] == "skipped"
    ok = rows["examples/run_qwen3-8b_2_h800.sh"]
    assert (ok["exit_code"], ok["model"], ok["num_gpus"], ok["gpu"]) == (0, "Qwen3-8B", 2, "h800-80gb")
    assert ok["peak_gib"] > 0 and ok["verdict"] in ("fits", "NO (1)")
    bad = rows["examples/bad.sh"]
    assert bad["exit_code"] == 2 and "rollout.n" in bad["error"]
