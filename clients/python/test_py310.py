"""The client runs on Python 3.10 (as Pydantic AI does): its files parse as
3.10 and use nothing 3.11 added, and the build backend reads pyproject.toml
without tomllib. These checks run under any Python; slackbot's
TestPythonExample also runs the whole suite under a Python 3.10 when it
finds one. They run with test_slackbot_client, which imports them.
"""

from __future__ import annotations

import ast
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_build"))
import backend  # noqa: E402 -- the in-tree build backend

#: Every file a user's Python runs: the modules the wheel ships and the build backend.
CLIENT_FILES = [*backend.MODULES, os.path.join("_build", "backend.py")]

#: What Python 3.11 and later added to the standard library, as the client could use it.
NEWER_MODULES = {"tomllib", "wsgiref.types"}
NEWER_ATTRIBUTES = {
    ("datetime", "UTC"), ("typing", "Self"), ("typing", "LiteralString"), ("typing", "Never"),
    ("typing", "assert_never"), ("typing", "reveal_type"), ("typing", "TypeVarTuple"), ("typing", "Unpack"),
    ("typing", "override"), ("asyncio", "TaskGroup"), ("asyncio", "timeout"), ("asyncio", "Runner"),
    ("enum", "StrEnum"), ("hashlib", "file_digest"), ("operator", "call"), ("contextlib", "chdir"),
}
NEWER_NAMES = {"ExceptionGroup", "BaseExceptionGroup", "add_note", "TaskGroup", "StrEnum", "Self", "LiteralString"}


def _guarded(tree: ast.AST) -> set[int]:
    """Line numbers of imports inside ``try: ... except ImportError``: a
    fallback, which 3.10 takes."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError") for h in node.handlers
        ):
            lines |= {n.lineno for stmt in node.body for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return lines


def newer_than_310(src: str, name: str) -> list[str]:
    """What in src needs Python 3.11 or later: syntax (ast.parse with
    feature_version=(3, 10)) or a standard-library name 3.11 added."""
    try:
        tree = ast.parse(src, name, feature_version=(3, 10))
    except SyntaxError as err:
        return [f"{name}:{err.lineno}: {err.msg}"]
    guarded = _guarded(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and node.lineno not in guarded:
            out += [f"{name}:{node.lineno}: import {a.name}" for a in node.names if a.name in NEWER_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.lineno not in guarded:
            if node.module in NEWER_MODULES:
                out.append(f"{name}:{node.lineno}: from {node.module} import ...")
            out += [f"{name}:{node.lineno}: from {node.module} import {a.name}" for a in node.names
                    if (node.module, a.name) in NEWER_ATTRIBUTES]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in NEWER_ATTRIBUTES or node.attr in NEWER_NAMES:
                out.append(f"{name}:{node.lineno}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.Name) and node.id in NEWER_NAMES:
            out.append(f"{name}:{node.lineno}: {node.id}")
    return out


class Python310Test(unittest.TestCase):
    def test_client_files_run_on_3_10(self):
        problems = []
        for rel in CLIENT_FILES:
            with open(os.path.join(HERE, rel), encoding="utf-8") as f:
                problems += newer_than_310(f.read(), rel)
        self.assertEqual(problems, [], "Python 3.11+ in the client (it must run on 3.10)")

    def test_the_check_finds_3_11_usage(self):
        for src in (
            "try:\n    pass\nexcept* ValueError:\n    pass\n",
            "import tomllib\n",
            "import datetime\nnow = datetime.datetime.now(datetime.UTC)\n",
            "from typing import Self\n",
            "raise ExceptionGroup('x', [ValueError()])\n",
        ):
            self.assertNotEqual(newer_than_310(src, "x.py"), [], src)
        guarded = "try:\n    import tomllib\nexcept ImportError:\n    tomllib = None\n"
        self.assertEqual(newer_than_310(guarded, "x.py"), [])

    def test_requires_python(self):
        self.assertEqual(backend._project()["requires-python"], ">=3.10")

    def test_backend_reads_pyproject_without_tomllib(self):
        with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
            got = backend._read_project(f.read())
        self.assertEqual((got["name"], got["requires-python"]), ("slackbot-client", ">=3.10"))
        self.assertEqual(got["optional-dependencies"], {"pydantic-ai": ["pydantic-ai-slim"]})
        try:
            import tomllib
        except ImportError:
            return  # 3.10: nothing to compare with
        with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
            want = tomllib.load(f)["project"]
        want.pop("license")  # an inline table, which the metadata does not use
        self.assertEqual(got, want)
        with self.assertRaisesRegex(ValueError, r"pyproject.toml:2: version"):
            backend._read_project('[project]\nversion = 1.0\n')


if __name__ == "__main__":
    unittest.main()
