"""Entry point of ``python -m skill_evolve.ray``."""

import sys

from .cli import main

sys.exit(main())
