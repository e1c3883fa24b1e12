"""Hostile inputs through the Python API and the CLI (issue 12, items 1, 2, 4, 5, 6).

Every case runs in a child process under a CPU-time and memory limit (``tests/security/hostile.py``): bounded
work is the assertion, made by the kernel, not a wall-clock measurement. Each refusal is one line that names
the input; there is no traceback, nothing is executed, and no file outside the allowed ones is opened.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from tests.security.hostile import (
    CPU_LIMIT_S,
    PRESET,
    Run,
    cli,
    refused_yaml_cases,
    run_limited,
    shell_cases,
    write_config,
)

SHELL = {c.name: c for c in shell_cases()}


def assert_refused(run: Run, *needles: str) -> None:
    """Exit 2, one ``error:`` line per problem naming the input, no traceback, within the CPU limit."""
    assert not run.killed_by_cpu_limit, f"killed after {CPU_LIMIT_S} s of CPU"
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    lines = run.stderr.strip().splitlines()
    assert lines and all(line.startswith(("error: ", "warning: ")) for line in lines), run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    for needle in needles:
        assert needle in run.stderr, (needle, run.stderr[-2000:])


def assert_ok(run: Run) -> None:
    assert not run.killed_by_cpu_limit, f"killed after {CPU_LIMIT_S} s of CPU"
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Traceback" not in run.stderr


# ----------------------------------------------------------------------------- item 2: the importer, bounded

API_CORPUS = """
import json, sys, time
sys.path.insert(0, ".")
from pathlib import Path
from calculator.errors import InputError
from calculator.verl import import_verl_text
from tests.security.hostile import refused_yaml_cases, shell_cases
out = {}
for case in shell_cases() + refused_yaml_cases(Path(sys.argv[1])):
    start = time.process_time()
    try:
        import_verl_text(case.text)
        got = None
    except InputError as err:
        got = str(err)
    out[case.name] = {"refusal": got, "cpu_s": time.process_time() - start}
print(json.dumps(out))
"""


def test_importer_corpus_through_the_api_is_bounded(tmp_path: Path) -> None:
    """The whole corpus in one child: together it must stay under one CPU limit (each case took 13 s to more than
    200 s before); every case is refused with its bound named, or read."""
    run = run_limited(["-c", API_CORPUS, str(tmp_path / "canary")])
    assert not run.killed_by_cpu_limit and run.returncode == 0, run.stderr[-3000:]
    results = json.loads(run.stdout)
    cases = {c.name: c for c in shell_cases() + refused_yaml_cases(tmp_path / "canary")}
    for name, case in cases.items():
        got = results[name]["refusal"]
        if case.refusal is None:
            assert got is None, (name, got)
        else:
            assert got is not None and case.refusal in got and "\n" not in got, (name, got)
            assert got.startswith(("verl launch script", "verl config")), got  # names the input
    assert not (tmp_path / "canary").exists()
    print({name: round(r["cpu_s"], 2) for name, r in results.items()})  # the measurement, for -s / the report


@pytest.mark.parametrize("name", sorted(SHELL))
def test_importer_corpus_through_the_cli(tmp_path: Path, name: str) -> None:
    case = SHELL[name]
    script = tmp_path / "launch.sh"
    script.write_text(case.text, encoding="utf-8")
    run = cli("estimate", PRESET, "--verl", str(script))
    if case.refusal is None:
        assert_ok(run)
    else:
        assert_refused(run, case.refusal)


@pytest.mark.parametrize("case", refused_yaml_cases(Path("/nonexistent/canary")), ids=lambda c: c.name)
def test_refused_verl_yaml_is_an_error_not_an_empty_script(tmp_path: Path, case) -> None:  # noqa: ANN001
    """A verl YAML with a python tag or an alias bomb was silently ignored (exit 0, no warning)."""
    path = tmp_path / "verl.yaml"
    canary = tmp_path / "canary"
    path.write_text(case.text.replace("/nonexistent/canary", str(canary)), encoding="utf-8")
    assert_refused(cli("estimate", PRESET, "--verl", str(path)), "verl config", case.refusal)
    assert not canary.exists()


def test_launch_script_never_executes(tmp_path: Path) -> None:
    """Kept from issue 8: $(...), backticks, heredocs, source, eval are parsed, never run."""
    c = tmp_path / "canary"
    script = tmp_path / "launch.sh"
    script.write_text(
        f"X=$(touch {c}.1)\nY=`touch {c}.2`\nsource <(echo touch {c}.3)\neval 'touch {c}.4'\n"
        f"cat > {c}.5 <<EOF\ndata.max_prompt_length=1\nEOF\n"
        f"python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.n=8 trainer.nnodes=$(touch {c}.6)\n"
    )
    run = cli("export", PRESET, "--verl", str(script), "--format", "yaml")
    assert_ok(run)
    assert yaml.safe_load(run.stdout)["actor_rollout_ref"]["rollout"]["n"] == 8  # the plain override is read
    assert not list(tmp_path.glob("canary*"))


# ----------------------------------------------------------------------------- item 2: files that are not files


@pytest.mark.parametrize("option", ["--verl", "--model", "scenario"])
@pytest.mark.parametrize("kind", ["dev-zero", "dev-urandom", "fifo", "directory"])
def test_special_files_are_refused_before_reading(tmp_path: Path, option: str, kind: str) -> None:
    """``--verl /dev/zero`` died with a MemoryError traceback; /dev/urandom and FIFOs hung the CLI."""
    paths = {"dev-zero": "/dev/zero", "dev-urandom": "/dev/urandom", "directory": str(tmp_path)}
    if kind == "fifo":
        fifo = tmp_path / "pipe.yaml"
        os.mkfifo(fifo)
        paths["fifo"] = str(fifo)
    path = paths[kind]
    argv = ["estimate", path] if option == "scenario" else ["estimate", PRESET, option, path]
    if option == "--model" and not path.endswith(".json"):
        link = tmp_path / "config.json"
        link.symlink_to(path)
        argv[-1] = str(link)
    run = cli(*argv)
    assert_refused(run, "not a regular file")


def test_oversized_file_is_refused_by_size(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: " + b"x" * (3 * 2**20))
    assert_refused(cli("estimate", PRESET, "--verl", str(big)), "larger than 2 MiB")


# ----------------------------------------------------------------------------- item 1 and 6: the presets directory


def _team_dir(root: Path) -> Path:
    gpus = root / "gpus"
    gpus.mkdir(parents=True)
    os.mkfifo(gpus / "pipe.yaml")
    (gpus / "zero.yaml").symlink_to("/dev/zero")
    (gpus / "outside.yaml").symlink_to("/etc/hostname")
    (root / "scenarios").mkdir()
    (root / "scenarios" / "shadow.yaml").symlink_to("/etc/shadow")
    return root


def test_presets_dir_with_a_fifo_and_links_out(tmp_path: Path) -> None:
    """A FIFO in RLPLAN_PRESETS_DIR hung every session; links may not lead out of the preset directories."""
    env = {**os.environ, "RLPLAN_PRESETS_DIR": str(_team_dir(tmp_path / "team"))}
    strict = cli("presets", "gpus", env=env)
    assert_refused(strict, "pipe.yaml: cannot read (a named pipe (FIFO), not a regular file)")
    assert "zero.yaml: cannot read (a link to a file outside the preset directories)" in strict.stderr
    assert "outside.yaml: cannot read (a link to a file outside the preset directories)" in strict.stderr
    lenient = cli("estimate", PRESET, env=env)  # the server's way: skip, name, keep working
    assert_ok(lenient)
    said = lenient.stdout + lenient.stderr
    assert "preset skipped: gpus preset $RLPLAN_PRESETS_DIR/gpus/pipe.yaml" in said
    assert "shadow.yaml: cannot read (a link to a file outside" in said


FILE_AUDIT = """
import os, sys
sys.path.insert(0, ".")
opened = []
canary = sys.argv[1]
sys.addaudithook(lambda event, args: opened.append(args[0]) if event == "open" and isinstance(args[0], str)
                 and canary in os.path.abspath(args[0]) else None)
from calculator.errors import InputError
from calculator.inputs.presets import scenario_preset
for value in (canary + "/secret.yaml", canary + "/pipe.yaml", "../" + canary + "/secret.yaml"):
    try:
        scenario_preset(value)
        raise SystemExit("a path was accepted as a preset id: " + value)
    except InputError as err:
        assert "unknown scenario preset" in str(err), err
print(opened)
"""


def test_a_preset_id_is_never_opened_as_a_path(tmp_path: Path) -> None:
    """Item 1's calculator side: the web app looks presets up with scenario_preset, which opens nothing."""
    (tmp_path / "secret.yaml").write_text("secret_line_one: 1\n")
    os.mkfifo(tmp_path / "pipe.yaml")
    run = run_limited(["-c", FILE_AUDIT, str(tmp_path)])
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "[]", run.stdout


# ----------------------------------------------------------------------------- item 5: terminal injection

ESCAPES = "\x1b[2J\x1b]0;pwned\x07\rFAKE peak: 1.00 GiB -> fits\u202e\x9b31m\u2028x"


def test_model_name_cannot_drive_the_terminal(tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.json", _name_or_path=ESCAPES)
    for args in ([], ["--json"]):
        run = cli("estimate", PRESET, "--model", str(config), *args)
        assert_ok(run)
        for ch in ("\x1b", "\x07", "\r", "\u202e", "\x9b", "\u2028"):
            assert ch not in run.stdout and ch not in run.stderr, (args, repr(ch))
        assert not any(line.startswith("FAKE") for line in run.stdout.splitlines())
    assert "\\x1b[2J" in cli("estimate", PRESET, "--model", str(config)).stdout  # shown, escaped


def test_error_lines_cannot_drive_the_terminal(tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.json", **{f"bad{ESCAPES}": 1, "hidden_size": "x\x1b[31m"})
    run = cli("estimate", PRESET, "--model", str(config))
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "\x1b" not in run.stderr and "\r" not in run.stderr, repr(run.stderr)


# ----------------------------------------------------------------------------- item 6: smaller ones


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--set", "rollout.n=true"], "rollout.n: a number is expected, got true"),
        (["--set", "data.train_batch_size=false"], "data.train_batch_size: a number is expected, got false"),
        (["--set", "rollout.gpu_memory_utilization=true"], "rollout.gpu_memory_utilization: a number is expected"),
    ],
)
def test_a_boolean_is_not_a_number(args: list[str], needle: str) -> None:
    assert_refused(cli("estimate", PRESET, *args), needle)


def test_a_boolean_in_verl_yaml_is_not_a_number(tmp_path: Path) -> None:
    path = tmp_path / "verl.yaml"
    path.write_text("data:\n  train_batch_size: true\n")
    assert_refused(cli("estimate", PRESET, "--verl", str(path)), "data.train_batch_size: a number is expected")
    path.write_text("actor_rollout_ref.rollout.n=true\n")
    assert_refused(cli("estimate", PRESET, "--verl", str(path)), "rollout.n: a number is expected, got true")


def test_hidden_size_below_the_head_count_names_the_field(tmp_path: Path) -> None:
    run = cli("estimate", PRESET, "--model", str(write_config(tmp_path / "config.json", hidden_size=8)))
    assert_refused(run, "model.config.head_dim (from hidden_size / num_attention_heads)")
    assert "ValidationError" not in run.stderr and "errors.pydantic.dev" not in run.stderr


def test_json_with_surrogate_pair_escapes_is_valid(tmp_path: Path) -> None:
    """The CLI read .json with the YAML reader, which refuses surrogate-pair escapes (valid JSON)."""
    config = write_config(tmp_path / "config.json", _name_or_path="model \U0001f600")
    assert "\\ud83d\\ude00" in config.read_text()
    run = cli("estimate", PRESET, "--model", str(config))
    assert_ok(run)
    assert "model \U0001f600" in run.stdout


@pytest.mark.parametrize("channel", ["set", "json", "yaml", "verl-yaml"])
def test_long_integers_do_not_leak_pythons_advice(tmp_path: Path, channel: str) -> None:
    digits = "9" * 5000
    if channel == "set":
        run = cli("estimate", PRESET, "--set", f"rollout.n={digits}")
    elif channel == "json":
        path = write_config(tmp_path / "config.json", hidden_size=123454321)
        path.write_text(path.read_text().replace("123454321", digits))
        run = cli("estimate", PRESET, "--model", str(path))
    elif channel == "yaml":
        (tmp_path / "s.yaml").write_text(f"rollout:\n  n: {digits}\n")
        run = cli("estimate", str(tmp_path / "s.yaml"))
    else:
        (tmp_path / "v.yaml").write_text(f"actor_rollout_ref:\n  rollout:\n    n: {digits}\n")
        run = cli("estimate", PRESET, "--verl", str(tmp_path / "v.yaml"))
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-1000:]
    assert "set_int_max_str_digits" not in run.stderr and len(run.stderr) < 2000, run.stderr[-1000:]


def test_a_closed_pipe_ends_quietly() -> None:
    """``estimate | head -1``: no BrokenPipeError traceback."""
    code = (
        "import os, subprocess, sys; r, w = os.pipe(); os.close(r); "
        "p = subprocess.run([sys.executable, '-m', 'calculator', 'estimate', sys.argv[1]], stdout=w, "
        "stderr=subprocess.PIPE, text=True); print(p.returncode); print(p.stderr)"
    )
    run = run_limited(["-c", code, PRESET])
    assert "Traceback" not in run.stdout and "BrokenPipe" not in run.stdout, run.stdout


def test_corpus_children_really_are_limited() -> None:
    """The harness itself: a child that spins is killed by the CPU limit (so a regression fails, never hangs)."""
    run = run_limited(["-c", "import resource; resource.setrlimit(resource.RLIMIT_CPU, (1, 2))\nwhile True: pass"])
    assert run.killed_by_cpu_limit, run.returncode
    assert sys.platform.startswith("linux")
