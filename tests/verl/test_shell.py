"""Reading a bash launch script (calculator/verl/shell.py, through ``import_verl_text``): logical lines, shell
variables and defaults, ``$(( ... ))``, ``key=value`` tokens; nothing in a script is ever executed, unresolved
values are named, not guessed, and hostile arithmetic is refused within a CPU-time bound (issue #8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from calculator import verl as V
from calculator.verl import import_verl_text
from tests.support.hostile import HOSTILE_ARITHMETIC, injection_script
from tests.support.limits import run_cpu_bounded


def test_launch_script_is_only_parsed(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    natives, notes = import_verl_text(injection_script(canary))
    assert natives.get("rollout.n") == 8  # the plain override is read
    assert "hardware.num_gpus" not in natives and "data.train_batch_size" not in natives
    joined = " ".join(notes)
    assert "unresolved shell variable" in joined and "rm -rf" in joined  # said, not done
    assert not list(tmp_path.iterdir()), "a shell command ran"


@pytest.mark.parametrize("expr", list(HOSTILE_ARITHMETIC.values()), ids=list(HOSTILE_ARITHMETIC))
def test_shell_arithmetic_refuses_huge_results_and_long_expressions(expr: str) -> None:
    natives, notes = import_verl_text(f"actor_rollout_ref.rollout.n=$(( {expr} ))")
    assert "rollout.n" not in natives and any("unresolved" in n for n in notes), expr[:40]


def test_shell_arithmetic_still_works() -> None:
    assert import_verl_text("N=4\nactor_rollout_ref.rollout.n=$(( N * 2 ))")[0]["rollout.n"] == 8


def test_hostile_arithmetic_within_a_cpu_bound() -> None:
    """All of them together take ~0.1 CPU-seconds here (the 100,000-term sum is the largest); computing
    2**(64**6) would not finish, and the child's 2 GiB address space stops a runaway bignum."""
    run_cpu_bounded(
        """
        for name, expr in HOSTILE_ARITHMETIC.items():
            natives, notes = import_verl_text(f"actor_rollout_ref.rollout.n=$(( {expr} ))")
            assert "rollout.n" not in natives, name
        """,
        setup="""
        from calculator.verl import import_verl_text
        from tests.support.hostile import HOSTILE_ARITHMETIC
        """,
        cpu_s=5,
    )


SCRIPT = r"""#!/usr/bin/env bash
# verl examples/grpo_trainer style launch script
set -x
export VLLM_ATTENTION_BACKEND=XFORMERS
MODEL_PATH=Qwen/Qwen2.5-7B-Instruct
NNODES=${NNODES:-2}
GPUS=8
n_resp=$((2 * 4))
ppo_mini=$(( 256 / 2 ))
max_prompt=1024
export max_response=2048
TOKENS=$(( (max_prompt + max_response) * 4 ))
RUN_ID=$(date +%s)

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/gsm8k/train.parquet \
    data.train_batch_size=1024 \
    data.max_prompt_length=$max_prompt \
    data.max_response_length=${max_response} \
    actor_rollout_ref.model.path="$MODEL_PATH" \
    actor_rollout_ref.actor.ppo_mini_batch_size=$ppo_mini \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$TOKENS \
    actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu='${actor_rollout_ref.actor.ppo_max_token_len_per_gpu}' \
    actor_rollout_ref.rollout.max_model_len='${oc.select:data.max_prompt_length,1}' \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=$n_resp \
    actor_rollout_ref.rollout.tensor_model_parallel_size=${TP:-4} \
    +actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_dtype=fp8 \
    trainer.experiment_name=grpo_$RUN_ID \
    data.gen_batch_size=$((GEN * 2)) \
    actor_rollout_ref.rollout.temperature=$RUN_ID \
    trainer.n_gpus_per_node=$GPUS \
    trainer.nnodes=$NNODES $@
"""


def test_shell_script_import():
    natives, notes = V.import_verl_text(SCRIPT)
    assert natives["model.path"] == "qwen2.5-7b"
    assert natives["data.max_prompt_length"] == 1024 and natives["data.max_response_length"] == 2048
    assert natives["actor.ppo_mini_batch_size"] == 128
    assert natives["rollout.n"] == 8
    assert natives["actor.ppo_max_token_len_per_gpu"] == 12288
    assert natives["rollout.log_prob_max_token_len_per_gpu"] == 12288  # Hydra interpolation resolved
    assert natives["rollout.max_model_len"] == 1024  # oc.select resolved against the overrides
    assert natives["rollout.tensor_model_parallel_size"] == 4  # ${TP:-4}
    assert natives["rollout.kv_cache_dtype"] == "fp8"
    assert natives["hardware.num_gpus"] == 16 and natives["hardware.gpus_per_node"] == 8  # ${NNODES:-2} x 8
    assert "data.gen_batch_size" not in natives and "rollout.temperature" not in natives
    joined = "\n".join(notes)
    assert (
        "verl override data.gen_batch_size: value has an unresolved shell variable ($GEN: not set in the script)"
        in joined
    )
    assert "rollout.temperature: value has an unresolved shell variable ($RUN_ID <- $(date +%s))" in joined
    assert "data.train_files" not in joined and "experiment_name" not in joined  # not modelled: silent


def test_shell_unresolved_value_is_ignored_not_guessed():
    natives, notes = V.import_verl_text("python3 -m verl.trainer.main_ppo data.train_batch_size=$BSZ rollout_x=1")
    assert "data.train_batch_size" not in natives
    assert any("BSZ" in n for n in notes)


def test_tokenize_overrides_compat():
    toks = V.tokenize_overrides(
        "# comment\nA=4\npython3 -m verl.trainer.main_ppo \\\n  actor_rollout_ref.rollout.n=$A \\\n  ++trainer.nnodes=2 \\\n"
        "  --config-path=x  CUDA_VISIBLE_DEVICES=0\n"
    )
    assert toks == ["actor_rollout_ref.rollout.n=4", "trainer.nnodes=2"]


# verl's examples/gspo_trainer/run_qwen30b_gspo.sh and examples/sapo_trainer/run_qwen30b_sapo.sh (verl main,
# commit b178a3cd5) collect overrides in a double-quoted variable spanning several lines and pass it unquoted to
# main_ppo. bash joins the quoted lines and splits the unquoted expansion into words; before, the import read the
# closing quote into the last value ('30720"') and refused the script (exit 2). The lines below have that shape.
GROUPED = """\
MAX_TOKENS=$(((2048 + 8192) * 3))
USP=4
ACTOR="
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \\
    actor_rollout_ref.actor.ulysses_sequence_parallel_size=$USP
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$MAX_TOKENS"
CRITIC="${ACTOR//actor_rollout_ref.actor/critic}"
python3 -m verl.trainer.main_ppo $ACTOR $CRITIC actor_rollout_ref.rollout.n=4
"""


def test_multiline_quoted_group_is_split_into_overrides():
    natives, notes = V.import_verl_text(GROUPED)
    assert natives["actor.ppo_max_token_len_per_gpu"] == 30720  # (2048 + 8192) * 3, no trailing quote
    assert natives["actor.ulysses_sequence_parallel_size"] == 4
    assert natives["actor.ppo_mini_batch_size"] == 32 and natives["rollout.n"] == 4
    assert natives["critic.ppo_max_token_len_per_gpu"] == 30720  # ${ACTOR//actor_rollout_ref.actor/critic}
    assert not any("unresolved" in n or "cannot resolve" in n for n in notes)


def test_unquoted_expansion_splits_on_a_command_line_not_in_an_assignment():
    p = V.shell._parse_script('B="x y"\nA=$B\nexport C=$B\npython3 -m verl.trainer.main_ppo a.b=$A a.c="$C"\n')
    assert p.overrides == {"a.b": "x", "a.c": "x y"}  # bash: a.b=x then a word "y"; the quoted one stays whole


def test_quote_never_closed_keeps_lines_apart():
    assert V.shellwords._logical_lines("A=\"open\nB=2\n# it's a comment\nC=3") == [
        'A="open',
        "B=2",
        "# it's a comment",
        "C=3",
    ]
    assert V.shellwords._logical_lines('A="x # not a comment\ny" # it\'s\nB=1') == [
        'A="x # not a comment\ny" # it\'s',
        "B=1",
    ]


# verl main (b178a3cd5) examples/grpo_trainer/run_qwen2_5_vl-7b.sh and 11 others: ENGINE=${1:-vllm}, and
# run_qwen2-7b_math_trtllm.sh: rollout TP ${1:-4}. Read as run without arguments, the default applies; before, the
# ${1:-...} was taken for a Hydra interpolation and the rollout engine / TP was ignored.
def test_positional_parameter_default_applies():
    natives, notes = V.import_verl_text(
        "ENGINE=${1:-sglang}\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=$ENGINE "
        "actor_rollout_ref.rollout.tensor_model_parallel_size=${1:-2} actor_rollout_ref.rollout.n=$2\n"
    )
    assert natives["rollout.name"] == "sglang" and natives["rollout.tensor_model_parallel_size"] == 2
    assert "rollout.n" not in natives
    assert "verl override actor_rollout_ref.rollout.n: value has an unresolved shell variable ($2); ignored" in notes


# verl main (b178a3cd5): examples/grpo_trainer/run_qwen3-235b_megatron_96gb.sh, run_qwen3-8b_npu.sh and 8 others set
# MODEL_PATH=${MODEL_PATH:-"${RAY_DATA_HOME}/models/<name>"} (or $HOME/models/<name>) with RAY_DATA_HOME / HOME not
# set in the script. Before, the quotes of the default word stayed in the value and the whole path was dropped: the
# model fell back to the base scenario's (Qwen2.5-7B for a 235B MoE run). The name is literal: it is read, with a note.
def test_default_word_loses_its_quotes():
    p = V.shell._parse_script(
        'A=${A:-"Qwen/Qwen3-8B"}\nB=${B:-\'x y\'}\npython3 -m verl.trainer.main_ppo a.a=$A a.b="${B}" a.c=${C:-"q"}\n'
    )
    assert p.overrides == {"a.a": "Qwen/Qwen3-8B", "a.b": "x y", "a.c": "q"}


def test_model_path_under_an_unset_directory_is_read_from_its_name():
    natives, notes = V.import_verl_text(
        'MODEL_PATH=${MODEL_PATH:-"${RAY_DATA_HOME}/models/Qwen3-235B-A22B"}\n'
        'python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path="${MODEL_PATH}" '
        "reward_model.model.path=$HOME/$RM data.train_files=$RAY_DATA_HOME/x.parquet\n"
    )
    assert natives["model.path"] == "qwen3-235b-a22b"
    assert (
        "verl override actor_rollout_ref.model.path: the directory has an unresolved shell variable ($MODEL_PATH <- "
        "$RAY_DATA_HOME: not set in the script); the model is read from the path's last component 'Qwen3-235B-A22B'"
    ) in notes
    assert "reward_model.model_path" not in natives  # no name after the unresolved part: nothing to read
    assert (
        "verl override reward_model.model.path: value has an unresolved shell variable ($HOME: not set in the script; $RM: not set in the script); ignored"
        in notes
    )


# examples/gspo_trainer/run_qwen30b_gspo.sh (b178a3cd5): a group of overrides in one variable, one of whose values
# ($HDFS_ROOT/model/...) is unresolved. bash would pass the others; before, the whole group was dropped.
def test_group_with_one_unresolved_value_keeps_the_others():
    natives, notes = V.import_verl_text(
        'GROUP="actor_rollout_ref.actor.optim.lr=2e-6 actor_rollout_ref.model.path=$ROOT/m/Qwen3-8B '
        'actor_rollout_ref.actor.ppo_mini_batch_size=16 data.val_files=$ROOT/v"\n'
        "python3 -m verl.trainer.main_ppo $GROUP\n"
    )
    assert natives["actor.ppo_mini_batch_size"] == 16 and natives["model.path"] == "qwen3-8b"
    assert not any("ppo_mini_batch_size" in n for n in notes)


# verl main (b178a3cd5) examples/grpo_trainer/run_gptoss_20b.sh writes a Python file with `cat > get_model.py << EOF`;
# its lines (torch_dtype=torch.bfloat16, ...) were read as shell assignments and commands.
def test_here_document_body_is_not_read():
    p = V.shell._parse_script(
        'cat > get_model.py << EOF\nx = dict(\n    a.b=1,\n    it\'s="\n)\nEOF\nA=2\nread -ra X <<<"$h"\n'
        "python3 -m verl.trainer.main_ppo a.c=$A\n"
    )
    assert p.overrides == {"a.c": "2"}


# verl main (b178a3cd5) examples/sglang_multiturn/run_qwen2.5-3b_megatron_gsm8k_multiturn.sh runs
# --config-name='gsm8k_multiturn_megatron_grpo' (its config's defaults: ppo_megatron_trainer) with megatron.* keys.
# Before, only the name ppo_megatron_trainer selected Megatron: the run was estimated as FSDP and its TP / PP / CP
# keys reported as "verl would reject it".
def test_custom_config_name_is_noted_and_a_megatron_one_selects_megatron():
    natives, notes = V.import_verl_text(
        "python3 -m verl.trainer.main_ppo --config-path=config --config-name='gsm8k_multiturn_megatron_grpo' "
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2\n"
    )
    assert natives["actor.strategy"] == "megatron" and natives["actor.megatron.tensor_model_parallel_size"] == 2
    assert any(n.startswith("--config-name=gsm8k_multiturn_megatron_grpo: a config of the script's own") for n in notes)
    natives, notes = V.import_verl_text("python3 -m verl.trainer.main_ppo --config-name=search_multiturn_grpo a.b=1\n")
    assert "actor.strategy" not in natives and any(
        "search_multiturn_grpo: a config of the script's own" in n for n in notes
    )
    _, notes = V.import_verl_text("python3 -m verl.trainer.main_ppo --config-name='ppo_trainer.yaml' a.b=1\n")
    assert not any("config-name" in n for n in notes)
