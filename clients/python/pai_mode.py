"""Which pydantic_ai the tests meet, chosen by SLACKBOT_TEST_PYDANTIC_AI.

The client behaves differently with pydantic_ai importable (it returns
Pydantic AI's objects) and without it (plain dicts), so the suite runs both
ways (slackbot's TestPythonExample runs it once per mode):

- ``hide``: pydantic_ai cannot be imported, even when it is installed;
- ``standin``: the stand-in in ``standin/pydantic_ai`` (definitions copied
  from the real package, see its docstring) is imported, even when the
  real package is installed; it needs pydantic, like the real one;
- unset or empty: whatever is installed (the real package, or nothing).

Import this module before slackbot_client. ``MODE`` names what was chosen
and ``describe()`` says which pydantic_ai is in use; the suite prints it.
"""

from __future__ import annotations

import importlib.abc
import os
import sys

ENV = "SLACKBOT_TEST_PYDANTIC_AI"
MODE = os.environ.get(ENV, "")
STANDIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standin")


class _Hide(importlib.abc.MetaPathFinder):
    """Refuses pydantic_ai and its submodules, as if it were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name == "pydantic_ai" or name.startswith("pydantic_ai."):
            raise ModuleNotFoundError(f"No module named {name!r} ({ENV}=hide)", name=name)
        return None


def _apply() -> None:
    if MODE == "hide":
        for name in [m for m in sys.modules if m == "pydantic_ai" or m.startswith("pydantic_ai.")]:
            del sys.modules[name]
        sys.meta_path.insert(0, _Hide())
    elif MODE == "standin":
        sys.path.insert(0, STANDIN_DIR)
        import pydantic_ai  # noqa: F401 -- fails here, loudly, when pydantic is missing

        if not getattr(pydantic_ai, "STANDIN", False):
            raise ImportError(f"{ENV}=standin imported {pydantic_ai.__file__}, not the stand-in")
    elif MODE:
        raise ValueError(f"{ENV}={MODE!r}: want hide, standin or nothing")


def describe() -> str:
    """Which pydantic_ai the tests meet."""
    try:
        import pydantic_ai
    except ImportError:
        return "pydantic_ai: not importable" + (" (hidden)" if MODE == "hide" else "")
    if getattr(pydantic_ai, "STANDIN", False):
        return f"pydantic_ai: the stand-in {pydantic_ai.__version__} (standin/pydantic_ai)"
    return f"pydantic_ai: the real package {getattr(pydantic_ai, '__version__', '?')} ({pydantic_ai.__file__})"


_apply()
