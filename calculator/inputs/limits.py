"""Every bound the input layer enforces, in one place (``docs/security.md`` lists them with their refusals).

rlplan reads untrusted text on a shared server: uploaded and pasted config.json files, pasted launch scripts and
verl YAML, URL parameters, widget values, a team's preset directory. Each channel is read with a byte cap and
parsed with a work cap, so that no input can hold a server thread for long or grow its memory without bound;
an input over a bound is refused with one line that names the input and the bound. The numbers are far above
anything a real input needs (the margin is stated next to each) and far below what would hurt the server.
"""

from __future__ import annotations

# --------------------------------------------------------------------------- bytes read

MAX_INPUT_BYTES = 2 * 2**20
"""One text input: a file (``--model``, ``--verl``, a scenario YAML, a preset), an upload, a paste, a URL value.
Real ones are a few KiB (a config.json ~1 KiB, verl's whole generated config ~40 KiB, a launch script ~5 KiB);
2 MiB is also Streamlit's upload limit here (``.streamlit/config.toml`` ``maxUploadSize``)."""

MAX_PRESET_FILES = 1_000
"""Files of one kind (models, gpus, scenarios) read from one preset directory; the rest are skipped and named.
rlplan ships ~30 per kind; a team adds a few. Bounds the start-up work a mis-mounted directory can cause."""

# --------------------------------------------------------------------------- YAML / JSON structure

MAX_NESTING = 64
"""Mappings / lists inside each other (configs need < 10; Python's own recursion limit is ~1,000)."""

MAX_YAML_VALUES = 100_000
"""Values of a YAML document once its aliases are expanded (verl's whole config tree has ~2,000): a few hundred
bytes of aliases can stand for 10**9 values ("billion laughs")."""

MAX_INT_DIGITS = 4_300
"""Digits of an integer in any input: CPython's own default (``sys.get_int_max_str_digits()``). No count or size
in a scenario has more than 20; a longer number is refused by the readers with this number in the message."""

# --------------------------------------------------------------------------- shell launch scripts

MAX_EXPANDED_BYTES = 2 * MAX_INPUT_BYTES
"""Bytes that shell expansion of one launch script may produce in total (every expanded line, every variable
value, every ``${VAR:-word}``). A real script expands to about its own size; twice the input cap leaves room for
a variable used on many lines, while ``A=$A$A`` repeated (doubling on each line) is stopped after ~20 lines."""

MAX_VARIABLE_BYTES = 64 * 2**10
"""One shell variable's value. Real ones are paths, model names, numbers (< 1 KiB)."""

MAX_EXPANSION_STEPS = 50_000
"""Expansions (``$VAR``, ``${...}``, ``$((...))``, ``$(...)``, backticks) in one launch script. A real script has
a few hundred; each step costs at most a regular-expression match and a dictionary lookup."""

MAX_SHELL_DEPTH = 16
"""``${VAR:-${OTHER:-...}}`` nested inside each other (real scripts: 1 or 2)."""

MAX_ARITH_CHARS = 256
"""Characters of one ``$(( ... ))`` expression (real ones: ``$((NNODES * 8))``); longer ones stay unresolved."""

MAX_OVERRIDE_KEYS = 20_000
"""Distinct ``key=value`` overrides or YAML keys in one imported config (verl has ~2,000 keys)."""

# --------------------------------------------------------------------------- scenario values

MAX_HISTOGRAM_BINS = 256
"""Bins of ``data.response_length_histogram`` ("length:count, ..."). A logged histogram has 10-100 bins; the
timing model sums over them once per estimate."""

MAX_HISTOGRAM_CHARS = 8_192
"""Characters of ``data.response_length_histogram``: 256 bins of "20480:12345.5, " fit in ~4 KiB."""

# --------------------------------------------------------------------------- Hydra interpolation

MAX_INTERPOLATION_STEPS = 100_000
"""``${...}`` resolutions for one imported config (verl's defaults need ~300); counts every nested one."""

MAX_INTERPOLATION_DEPTH = 32
"""An interpolation that refers to one that refers to ... (verl's deepest chain: 3)."""

MAX_INTERPOLATED_BYTES = MAX_INPUT_BYTES
"""Bytes of text that interpolation may build for one imported config (``a: ${b}${b}``, ``b: ${c}${c}``...)."""


class LimitExceeded(Exception):
    """Raised inside a parser when one of the bounds above is reached; the entry point turns it into an
    :class:`~calculator.errors.InputError` naming the input."""


# --------------------------------------------------------------------------- verl run logs (calibration)

MAX_LOG_BYTES = 32 * 2**20
"""One verl run log (console output, metrics JSONL, wandb CSV). A console line of one step holds ~150 metrics
(~8 KiB); 32 MiB is ~4,000 steps of that, far more than a calibration needs (the first few dozen steps)."""

MAX_LOG_LINES = 400_000
"""Lines of one log that are looked at; the rest are ignored and said to be (Ray and vLLM print many
non-metric lines between two steps)."""

MAX_LOG_LINE_CHARS = 256 * 2**10
"""Characters of one log line that is parsed; a longer line (a dumped tensor, a base64 blob) is skipped."""

MAX_LOG_STEPS = 20_000
"""Distinct training steps kept from one log."""

MAX_LOG_PARSE_S = 10.0
"""Wall-clock seconds one log may take to parse; parsing stops there and keeps the steps read so far."""

MAX_TRACEBACK_BYTES = 4 * 2**20
"""One pasted or uploaded traceback for ``explain-oom`` (a Ray error with every worker's copy is ~100 KiB)."""
