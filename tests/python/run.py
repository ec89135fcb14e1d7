"""Runs one of the Python package's test modules with unittest; exits 77 (ctest's skip)
with the reason when this interpreter has no PyTorch."""

import importlib
import os
import sys
import unittest

try:
    import torch  # noqa: F401
except ImportError as e:
    print(f"skipped: {sys.executable} cannot import torch ({e}); scripts/setup.sh installs python3-torch")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
module = importlib.import_module(sys.argv[1])
# A module that needs what this machine lacks (a GPU) says so: ctest shows it as skipped.
why = getattr(module, "skip_reason", lambda: None)()
if why:
    print(f"skipped: {why}")
    sys.exit(77)
result = unittest.TextTestRunner(verbosity=2).run(unittest.defaultTestLoader.loadTestsFromModule(module))
sys.exit(0 if result.wasSuccessful() else 1)
