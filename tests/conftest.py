"""Suite-wide test set-up: shared helpers in tests/ (``numerics``) importable from every test folder.

Test folders without ``__init__.py`` are imported with their own folder on ``sys.path``, not tests/;
this puts tests/ there too, so ``from numerics import assert_close_f32`` works from any of them.
"""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
