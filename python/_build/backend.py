"""A PEP 517 / PEP 660 build backend in the standard library alone.

It builds the one pure-Python package in this folder (jukebox/) into a
wheel, an editable wheel (a .pth file naming this folder) or an sdist, so
that installing needs nothing from a package index: not setuptools, not
wheel.
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "jukebox_sdk"
VERSION = "0.1.0"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "jukebox"
DIST_INFO = f"{NAME}-{VERSION}.dist-info"

METADATA = f"""Metadata-Version: 2.1
Name: jukebox-sdk
Version: {VERSION}
Summary: Transactions, turns and tapes from inside an agent, driving the jukebox engine
Requires-Python: >=3.9
License: Apache-2.0
"""

# Entry points: the pytest plugin, so that installing the SDK is enough.
ENTRY_POINTS = """[pytest11]
jukebox = jukebox.pytest_plugin
"""

WHEEL = """Wheel-Version: 1.0
Generator: jukebox-sdk backend
Root-Is-Purelib: true
Tag: py3-none-any
"""


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def _package_files():
    root = os.path.join(HERE, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".py", ".typed")):
                full = os.path.join(dirpath, name)
                yield full, os.path.relpath(full, HERE).replace(os.sep, "/")


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory, entries):
    filename = f"{NAME}-{VERSION}-py3-none-any.whl"
    entries = list(entries) + [
        (f"{DIST_INFO}/METADATA", METADATA.encode()),
        (f"{DIST_INFO}/WHEEL", WHEEL.encode()),
        (f"{DIST_INFO}/entry_points.txt", ENTRY_POINTS.encode()),
    ]
    record = [_record_line(name, data) for name, data in entries]
    record.append(f"{DIST_INFO}/RECORD,,")
    entries.append((f"{DIST_INFO}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return filename


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    entries = []
    for full, arcname in _package_files():
        with open(full, "rb") as f:
            entries.append((arcname, f.read()))
    return _write_wheel(wheel_directory, entries)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file puts this folder on sys.path: edits take effect at once.
    return _write_wheel(wheel_directory, [(f"__editable__.{NAME}.pth", (HERE + "\n").encode())])


def _prepare_metadata(metadata_directory):
    path = os.path.join(metadata_directory, DIST_INFO)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "METADATA"), "w") as f:
        f.write(METADATA)
    with open(os.path.join(path, "WHEEL"), "w") as f:
        f.write(WHEEL)
    with open(os.path.join(path, "entry_points.txt"), "w") as f:
        f.write(ENTRY_POINTS)
    return DIST_INFO


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _prepare_metadata(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _prepare_metadata(metadata_directory)


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{VERSION}"
    filename = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as tf:
        for rel in ["pyproject.toml", "README.md", "_build/backend.py"]:
            full = os.path.join(HERE, rel)
            if os.path.exists(full):
                tf.add(full, arcname=f"{base}/{rel}")
        for full, arcname in _package_files():
            tf.add(full, arcname=f"{base}/{arcname}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = METADATA.encode()
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return filename
