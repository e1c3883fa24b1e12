"""``if`` / ``elif`` / ``else`` / ``fi`` in a launch script (calculator/verl/shellcond.py): bash's branch is read when
the test is decidable, every branch (with a note) when it is not."""

from __future__ import annotations

import pytest

from calculator.verl import import_verl_text
from calculator.verl.shell import _parse_script
from calculator.verl.shellcond import evaluate_test

# verl main (b178a3cd5) examples/gspo_trainer/run_qwen30b_gspo.sh sets backend=megatron and picks
# CONFIG_NAME=ppo_megatron_trainer in `if [[ $backend == "megatron" ]]`, ppo_trainer in its `else # fsdp, fsdp2`.
# Before, both branches were read and the last won: the run was estimated with FSDP and the Megatron keys were
# reported as "verl would reject it". The lines below have that shape.
BRANCHED = """\
backend=megatron # fsdp, fsdp2, megatron
TP=2
if [[ $backend == "megatron" ]]; then
    CONFIG_NAME=ppo_megatron_trainer
    EXTRA="actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"
    if [[ $adv == "gae" ]]; then
        EXTRA="$EXTRA critic.ppo_micro_batch_size_per_gpu=2"
    fi
elif [[ $backend == fsdp ]]; then
    CONFIG_NAME=ppo_trainer
else # fsdp2
    CONFIG_NAME=ppo_trainer
    EXTRA="actor_rollout_ref.actor.fsdp_config.param_offload=True"
fi
if [ $TP -eq 4 ]; then
    N=16
else
    N=4
fi
python3 -m verl.trainer.main_ppo --config-name=$CONFIG_NAME $EXTRA actor_rollout_ref.rollout.n=$N
"""


def test_branch_bash_would_run_is_read():
    natives, notes = import_verl_text(BRANCHED)
    assert natives["actor.strategy"] == "megatron"
    assert natives["actor.megatron.tensor_model_parallel_size"] == 2
    assert "actor.fsdp_config.param_offload" not in natives
    assert natives["rollout.n"] == 4  # [ 2 -eq 4 ] is false
    # $adv is not set: that test is undecidable, so its branch is read, and the note says so
    assert natives["critic.ppo_micro_batch_size_per_gpu"] == 2
    assert 'shell test not resolved (if [[ $adv == "gae" ]]; then); every branch of that if is read' in notes


def test_undecided_if_reads_every_branch_in_order():
    p = _parse_script('if [ "$X" = y ]; then\n  A=1\nelse\n  A=2\nfi\npython3 -m verl.trainer.main_ppo a.b=$A\n')
    assert p.overrides == {"a.b": "2"}  # as before conditionals were followed: the last assignment wins


@pytest.mark.parametrize(
    ("words", "value"),
    [
        (["[[", "megatron", "==", "megatron", "]]"], True),
        (["[", "a", "=", "b", "]"], False),
        (["[", "a", "!=", "b", "]"], True),
        (["[", "4", "-eq", "4", "]"], True),
        (["[", "3", "-gt", "4", "]"], False),
        (["[", "-z", "", "]"], True),
        (["[", "-n", "x", "]"], True),
        (["[[", "a", "==", "*b*", "]]"], None),  # a glob pattern
        (["[[", "-d", "x", "&&", "-n", "y", "]]"], None),
        (["[", "x", "-eq", "4", "]"], None),
        (["[", "\x00U0\x00", "=", "b", "]"], None),  # an unresolved value
    ],
)
def test_evaluate_test(words, value):
    assert evaluate_test(words) is value
