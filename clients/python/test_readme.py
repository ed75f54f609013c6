"""The READMEs' Python snippets compile, as Python 3.10 reads them: every
```python block of clients/python/README.md and of slackbot's README.md
(py_compile's check: compile(); and ast with feature_version=(3, 10)).
They are snippets, not programs (they use an ``agent`` defined elsewhere),
so they are compiled, not run. They run with test_slackbot_client, which
imports them.
"""

from __future__ import annotations

import ast
import os
import re
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
READMES = [os.path.join(HERE, "README.md"), os.path.join(HERE, "..", "..", "README.md")]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The ```python blocks of a Markdown text, each with the line its code starts on."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in BLOCK.finditer(text)]


class ReadmePythonTest(unittest.TestCase):
    def test_snippets_compile(self):
        found = 0
        for path in READMES:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            name = os.path.relpath(os.path.normpath(path), os.path.normpath(os.path.join(HERE, "..", "..")))
            for line, code in python_blocks(text):
                found += 1
                where = f"{name}:{line}"
                with self.subTest(where):
                    try:
                        compile(code, where, "exec", dont_inherit=True)
                        ast.parse(code, where, feature_version=(3, 10))
                    except SyntaxError as err:
                        self.fail(f"the ```python block at {where} does not compile: {err.msg} (its line {err.lineno})")
        self.assertGreaterEqual(found, 4, "fewer Python snippets than the READMEs hold: the block pattern broke")

    def test_the_check_finds_a_broken_block(self):
        blocks = python_blocks("x\n```python\nok = 1\n```\n```python\ndef f(:\n```\n")
        self.assertEqual([line for line, _ in blocks], [3, 6])
        with self.assertRaises(SyntaxError):
            compile(blocks[1][1], "R.md:6", "exec")


if __name__ == "__main__":
    unittest.main()
