import sys
from pathlib import Path

# The tests import their shared builders as `tests.support` whether pytest runs from the repo root or elsewhere.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
