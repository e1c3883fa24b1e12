"""``python -m calculator``: see calculator/cli/main.py."""

import sys

from calculator.cli.main import main

sys.exit(main())
