"""Start the dashboard with the process-wide hardening in place before the first connection.

    python -m ui.serve [streamlit options]      # = streamlit run app.py [options], hardened from the start

``streamlit run app.py`` works too: ``app.py`` applies the same hardening (``ui.hardening.harden``) at its first
run, but a websocket that arrives before any page has run (a cross-origin probe right after start) would still
meet Streamlit's defaults. The Docker image starts the server this way.
"""

from __future__ import annotations

import sys
from pathlib import Path

from streamlit.web import cli

from ui import hardening

APP = Path(__file__).resolve().parent.parent / "app.py"


def main(argv: list[str] | None = None) -> None:
    hardening.harden()
    sys.argv = ["streamlit", "run", str(APP), *(sys.argv[1:] if argv is None else argv)]
    cli.main()


if __name__ == "__main__":
    main()
