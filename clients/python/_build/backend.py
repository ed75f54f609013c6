"""A PEP 517 build backend on the standard library only.

It builds the wheel (slackbot_client, slackbot_schemas, slackbot_receipt, slackbot_ed25519) (and sdist) of slackbot-client, so
``pip install ./clients/python`` needs nothing from an index. The project's
name, version, summary and Python requirement are read from pyproject.toml:
with tomllib on Python >= 3.11, and on 3.10 (which has none, and where pip
may offer no tomli to a backend) with _read_project, which reads the
``key = value`` lines of pyproject.toml's [project] tables.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import ast
import zipfile

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = ["slackbot_client.py", "slackbot_schemas.py", "slackbot_receipt.py", "slackbot_ed25519.py"]


def _project() -> dict:
    path = os.path.join(ROOT, "pyproject.toml")
    if tomllib is not None:
        with open(path, "rb") as f:
            return tomllib.load(f)["project"]
    with open(path, encoding="utf-8") as f:
        return _read_project(f.read())


def _read_project(text: str) -> dict:
    """pyproject.toml's [project] table, for Python 3.10: the single-line
    ``key = value`` entries whose value is a string or an array of strings
    (what the metadata needs), [project.optional-dependencies] as a nested
    table. Other values (inline tables) are left out; anything else in a
    [project] table is an error naming the line, never a guess."""
    project: dict = {}
    table = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            name = line.strip("[]").strip()
            table = project if name == "project" else None
            if name.startswith("project."):
                table = project.setdefault(name[len("project."):], {})
            continue
        if table is None:
            continue
        key, sep, value = (part.strip() for part in line.partition("="))
        if not sep or not key:
            raise ValueError(f"pyproject.toml:{n}: not a key = value line: {raw!r}")
        if value.startswith("{"):
            continue
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError) as err:
            raise ValueError(f"pyproject.toml:{n}: {key}: not a one-line string or array of strings: {value!r}") from err
        if not (isinstance(parsed, str) or (isinstance(parsed, list) and all(isinstance(v, str) for v in parsed))):
            raise ValueError(f"pyproject.toml:{n}: {key}: not a string or an array of strings: {value!r}")
        table[key.strip('"')] = parsed
    return project


def _dist(p: dict) -> str:
    return p["name"].replace("-", "_")


def _metadata(p: dict) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {p['version']}",
        f"Summary: {p.get('description', '')}",
        f"Requires-Python: {p.get('requires-python', '')}",
    ]
    for extra, reqs in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in reqs]
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return "\n".join(lines) + "\nDescription-Content-Type: text/markdown\n\n" + readme


def _wheel_file() -> str:
    return "Wheel-Version: 1.0\nGenerator: slackbot-client _build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    p = _project()
    info = f"{_dist(p)}-{p['version']}.dist-info"
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(p))
    with open(os.path.join(metadata_directory, info, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_file())
    return info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    p = _project()
    info = f"{_dist(p)}-{p['version']}.dist-info"
    name = f"{_dist(p)}-{p['version']}-py3-none-any.whl"
    files = []
    for m in MODULES:
        with open(os.path.join(ROOT, m), "rb") as f:
            files.append((m, f.read()))
    files.append((f"{info}/METADATA", _metadata(p).encode()))
    files.append((f"{info}/WHEEL", _wheel_file().encode()))
    record = [_record_line(n, d) for n, d in files] + [f"{info}/RECORD,,"]
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            z.writestr(n, d)
    return name


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = f"{_dist(p)}-{p['version']}"
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in MODULES + ["pyproject.toml", "README.md", "_build/backend.py"]:
            t.add(os.path.join(ROOT, rel), arcname=f"{base}/{rel}")
        pkg = _metadata(p).encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg)
        t.addfile(ti, io.BytesIO(pkg))
    return name
