"""Which ``skill_evolve`` the suite exercises.

The installed package when there is one: ``cargo xtask pytest`` (and CI) installs the
wheel into a fresh virtual environment, and every test, including the agents and bridges
the tests start as subprocesses, must run that wheel. Without an installed package the
pure-Python parts (``skill_evolve.agent``, ``skill_evolve.ray``) are taken from this
source tree, for this process and, through ``PYTHONPATH``, for its subprocesses; the tests
of the native module then fail to import, as they should.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

PYTHON_ROOT = Path(__file__).resolve().parent.parent

if importlib.util.find_spec("skill_evolve") is None:
    sys.path.insert(0, str(PYTHON_ROOT))
    inherited = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [str(PYTHON_ROOT), inherited] if p)
