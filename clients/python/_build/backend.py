"""A PEP 517 build backend on the standard library only.

It builds the wheel (slackbot_client, slackbot_receipt, slackbot_ed25519) (and sdist) of slackbot-client, so
``pip install ./clients/python`` needs nothing from an index. The project's
name, version, summary and Python requirement are read from pyproject.toml.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = ["slackbot_client.py", "slackbot_receipt.py", "slackbot_ed25519.py"]


def _project() -> dict:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


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
