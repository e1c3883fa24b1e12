"""``python -m calculator``: see calculator/cli.py."""

import sys

from calculator.cli import main

sys.exit(main())
