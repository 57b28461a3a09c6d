"""Tapes as pytest tests: the `jukebox` marker and fixture.

Registered through the `pytest11` entry point, so installing the SDK is
enough. A test marked `@pytest.mark.jukebox` (or asking for the `jukebox`
fixture) runs its model calls through jukebox: on the first run they go
to the live upstream and are recorded on a tape of its own,
`tapes/<module>/<test id>.jbx` beside the test file; later runs answer
them from that tape, and a request the tape does not hold fails the test
with jukebox's divergence report (the frame, the first field that differs,
the diff). `--jukebox-record-mode once|new|all|none` (or the marker's
`record_mode=`, or the ini option `jukebox_record_mode`) is `jukebox record
--record-mode`: once (default) records a missing tape and replays one that
is there; new replays and records what is new into a tape that supersedes
the old; all records again; none only replays.

How: for each such test the plugin runs `jukebox record --record-mode MODE
-o TAPE -- python -m jukebox._pytest_child`, a stand-in agent that hands
the variables jukebox set for it (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, the
forward proxy and its CA, JUKEBOX_CONTROL) to the test process, which sets
them in os.environ while the test runs (restored after): model clients
created in the test reach jukebox's proxy, as under `jukebox record --
pytest`. When the test ends the stand-in exits and jukebox closes the tape
(or says how the replay went).
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, Generator, List, Optional, TypeVar, cast

import pytest

from ._control import jukebox_bin
from ._pytest_child import DIR_ENV

MODES = ("once", "new", "all", "none")
_KEY = pytest.StashKey["Recording"]()
_START_TIMEOUT = 60.0
_END_TIMEOUT = 120.0


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jukebox", "record and replay model calls on jukebox tapes")
    group.addoption("--jukebox-record-mode", choices=MODES, default=None,
                    help="jukebox tapes: once (record missing tapes, replay the others; default), new (replay and "
                         "record what is new into a tape that supersedes the old), all (record again), none (replay "
                         "only: a missing tape fails)")
    group.addoption("--jukebox-tape-dir", default=None,
                    help="where the tapes go (default: tapes/ beside each test file, a folder per module)")
    parser.addini("jukebox_record_mode", "the default of --jukebox-record-mode", default="once")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "jukebox(tape=None, record_mode=None): record the test's model calls on a jukebox tape on the "
                   "first run and replay them afterwards")


class Recording:
    """The jukebox run around one test: `tape`, `mode` (the record mode)
    and `env` (the variables set for the test)."""

    def __init__(self, tape: str, mode: str) -> None:
        self.tape = tape
        self.mode = mode
        self.env: Dict[str, str] = {}
        self._saved: Dict[str, Optional[str]] = {}
        self._dir = tempfile.mkdtemp(prefix="jukebox-pytest-")
        self._out = open(os.path.join(self._dir, "out"), "w+b")
        self._err = open(os.path.join(self._dir, "err"), "w+b")
        self._proc: Optional["subprocess.Popen[bytes]"] = None
        self.report: Optional[str] = None
        self.returncode: Optional[int] = None

    @property
    def replaying(self) -> bool:
        """Whether the calls are answered from the tape (else recorded)."""
        return self.env.get("JUKEBOX_MODE") == "replay"

    def start(self) -> None:
        os.makedirs(os.path.dirname(self.tape) or ".", exist_ok=True)
        argv = [jukebox_bin(), "record", "--record-mode", self.mode, "-o", self.tape, "--",
                sys.executable, "-m", "jukebox._pytest_child"]
        self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=self._out, stderr=self._err,
                                      env=dict(os.environ, **{DIR_ENV: self._dir}))
        envfile = os.path.join(self._dir, "env.json")
        deadline = time.monotonic() + _START_TIMEOUT
        while not os.path.exists(envfile):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self._stop()
                pytest.fail(f"jukebox: the run for {self.tape} did not start (--record-mode {self.mode}): "
                            f"{self._tail()}", pytrace=False)
            time.sleep(0.01)
        with open(envfile) as f:
            child: Dict[str, str] = json.load(f)
        self.env = {k: v for k, v in child.items()
                    if os.environ.get(k) != v and not k.startswith("PYTHON")}
        for k, v in self.env.items():
            self._saved[k] = os.environ.get(k)
            os.environ[k] = v

    def finish(self) -> Optional[str]:
        """Ends the run; returns jukebox's report when it did not end well."""
        if self._proc is None or self.returncode is not None:
            return self.report
        for k, old in self._saved.items():
            if old is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = old
        self._stop()
        if self.returncode != 0:
            what = "replay of" if self.replaying else "recording of"
            self.report = f"jukebox: the {what} {self.tape} failed (exit {self.returncode}):\n{self._tail()}"
        return self.report

    def _stop(self) -> None:
        assert self._proc is not None
        if self._proc.stdin is not None:
            try:
                self._proc.stdin.close()
            except OSError:
                pass
        try:
            self.returncode = self._proc.wait(timeout=_END_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self.returncode = self._proc.wait()

    def _tail(self, lines: int = 60) -> str:
        self._err.seek(0)
        text = self._err.read().decode(errors="replace").rstrip()
        return "\n".join(text.splitlines()[-lines:])

    def close(self) -> None:
        self.finish()
        for f in (self._out, self._err):
            f.close()
        for name in ("out", "err", "env.json"):
            try:
                os.remove(os.path.join(self._dir, name))
            except OSError:
                pass
        os.rmdir(self._dir)


def tape_path(item: pytest.Item, tape: Optional[str] = None) -> str:
    """The tape of a test: tapes/<module>/<test id>.jbx beside its file
    (or under --jukebox-tape-dir), or the marker's tape= (a name there, or a path)."""
    root = item.config.getoption("--jukebox-tape-dir")
    root = str(root) if isinstance(root, (str, os.PathLike)) else None
    path = str(item.path) if hasattr(item, "path") else str(item.fspath)
    module = os.path.splitext(os.path.basename(path))[0]
    folder = os.path.join(root, module) if root else os.path.join(os.path.dirname(path), "tapes", module)
    if tape:
        return tape if os.path.dirname(tape) else os.path.join(folder, tape)
    name = item.name
    if isinstance(item, pytest.Function) and item.cls is not None:
        name = item.cls.__name__ + "." + name
    path = os.path.join(folder, tape_file_name(name))
    whole = os.path.join(folder, _clean(name) + ".jbx")
    if whole != path and os.path.exists(whole):
        return whole  # recorded before names were cut, and the file system took it
    return path


# A tape's name before ".jbx" is at most this many bytes: what a file
# system takes in a name (255) less what jukebox adds beside the tape
# (NAME.superseded-TIME.jbx, NAME.jbx.d).
_NAME_MAX = 200


def _clean(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "-", name).strip("-")


def tape_file_name(name: str) -> str:
    """The file name of the tape of the test named name: what the name
    holds beyond letters, digits and _.=- made a dash; a name too long for
    a file cut, with a hash of the whole name after the cut."""
    clean = _clean(name)
    if len(clean) > _NAME_MAX:  # ASCII only, a byte a character
        clean = clean[:_NAME_MAX - 13] + "-" + hashlib.sha256(name.encode()).hexdigest()[:12]
    return clean + ".jbx"


# The tapes taken by the tests of this session so far, each with the test's
# id: two tests whose ids make one tape name must not share the tape.
_TAPES = pytest.StashKey[Dict[str, str]]()


def _mode(item: pytest.Item) -> str:
    marker = item.get_closest_marker("jukebox")
    mode = item.config.getoption("--jukebox-record-mode")
    if mode is None and marker is not None:
        mode = marker.kwargs.get("record_mode")
    if mode is None:
        mode = item.config.getini("jukebox_record_mode")
    if mode not in MODES:
        raise pytest.UsageError(f"jukebox record mode {mode!r} ({item.nodeid}): one of {', '.join(MODES)}")
    return str(mode)


@pytest.fixture
def jukebox(request: pytest.FixtureRequest) -> Generator[Recording, None, None]:
    """The test's model calls recorded on its tape, or replayed from it."""
    item = request.node
    if not isinstance(item, pytest.Item):
        raise TypeError(f"the jukebox fixture is for tests, not {type(item).__name__} scope")
    marker = item.get_closest_marker("jukebox")
    tape = tape_path(item, marker.kwargs.get("tape") if marker else None)
    taken: Dict[str, str] = item.config.stash.setdefault(_TAPES, {})
    other = taken.setdefault(os.path.abspath(tape), item.nodeid)
    if other != item.nodeid:
        # The second would replay the first's recording (or record over it).
        pytest.fail(f"jukebox: {item.nodeid} and {other} would share the tape {tape}: "
                    "give one a tape of its own with the marker's tape= (a parameter's: "
                    "pytest.param(..., marks=pytest.mark.jukebox(tape=\"NAME.jbx\")))", pytrace=False)
    rec = Recording(tape, _mode(item))
    item.stash[_KEY] = rec
    try:
        rec.start()
        yield rec
    finally:
        report = rec.finish()
        rec.close()
        if report and not item.stash.get(_REPORTED, False):
            pytest.fail(report, pytrace=False)


_REPORTED = pytest.StashKey[bool]()


@pytest.fixture(autouse=True)
def _jukebox_marker(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("jukebox") is not None:
        request.getfixturevalue("jukebox")


_F = TypeVar("_F", bound=Callable[..., Any])


def _hookwrapper(f: _F) -> _F:
    wrapped: _F = cast(_F, pytest.hookimpl(hookwrapper=True)(f))
    return wrapped


@_hookwrapper
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    rec = item.stash.get(_KEY, None)
    if call.when != "call" or rec is None:
        return
    # The run ends with the test, so that what jukebox found is the
    # test's own failure, beside what the test raised.
    report = rec.finish()
    if not report:
        return
    rep: pytest.TestReport = outcome.get_result()
    item.stash[_REPORTED] = True
    rep.outcome = "failed"
    parts: List[str] = []
    if rep.longrepr is not None and call.excinfo is not None:
        parts.append(str(rep.longrepr))
    parts.append(report)
    rep.longrepr = "\n\n".join(parts)
