"""Jukebox: runs (tracks), turns and their transactions."""

import atexit
import contextvars
import json
import math
import os
import sys
import threading
import warnings
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import Any, Callable, Dict, List, Literal, Optional, Tuple, Type, TypeVar, Union, overload

from ._control import Control, Served, tripped
from ._pool import PooledRun, pooled
from ._track import Track
from ._tx import AsyncTransaction, Transaction, _in_thread
from .errors import JukeboxError

F = TypeVar("F", bound=Callable[..., Any])

FILESYSTEM_MODES = {
    "copy_on_write": "staged in the Shadow Booth until commit; rollback leaves nothing behind",
    "read_only": "nothing may be staged: writes, deletes, SQL and shell commands raise SandboxViolation",
}
MCP_MODES = {
    "staged_acid": "MCP tool calls the policy holds (jukebox mcp --policy) wait for the transaction's commit and run then; a rollback drops them",
    "read_only": "MCP tool calls the policy holds (writes) are refused while the transaction is open; others run",
    "passthrough": "MCP tool calls run as they come, recorded only",
}


@dataclass(frozen=True)
class SandboxPolicy:
    """How a transaction stages. filesystem: "copy_on_write" (the booth,
    the default) or "read_only". mcp_mode: "staged_acid" (default),
    "read_only" or "passthrough"; accepted and checked now, in effect once
    jukebox records MCP servers."""

    filesystem: str = "copy_on_write"
    mcp_mode: str = "staged_acid"

    def __post_init__(self) -> None:
        if self.filesystem not in FILESYSTEM_MODES:
            raise ValueError(f"SandboxPolicy(filesystem={self.filesystem!r}): want one of {', '.join(FILESYSTEM_MODES)}")
        if self.mcp_mode not in MCP_MODES:
            raise ValueError(f"SandboxPolicy(mcp_mode={self.mcp_mode!r}): want one of {', '.join(MCP_MODES)}")


@dataclass(frozen=True)
class CircuitBreaker:
    """The circuit breaker's limits, as `jukebox record`'s breaker flags and
    --breaker-config take them. Unset is no limit. A trip raises
    BreakerTripped from the next turn (and answers the next model call with
    an error)."""

    max_cost_usd: Optional[float] = None
    max_tokens_per_min: Optional[float] = None
    max_usd_per_min: Optional[float] = None
    max_repeat: Optional[int] = None
    max_semantic_repeat: Optional[int] = None
    unknown_model_rate: Optional[float] = None

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"CircuitBreaker({name}={value!r}): want a number")
            if not math.isfinite(value):
                raise ValueError(f"CircuitBreaker({name}={value!r}): a limit must be a finite number")
            if name in ("max_repeat", "max_semantic_repeat"):
                if not isinstance(value, int) or value < 2:
                    raise ValueError(f"CircuitBreaker({name}={value!r}): want a whole number, 2 or more "
                                     "(a repeat is seen at least twice)")
            elif value <= 0:
                raise ValueError(f"CircuitBreaker({name}={value!r}): a limit must be above 0")

    def config(self) -> Dict[str, Any]:
        """The breaker config file's JSON (--breaker-config)."""
        return {k: v for k, v in asdict(self).items() if v is not None}


def _process(name: str, tape_dir: str, config: Dict[str, Any], argv: List[str]) -> Served:
    """A run of a `jukebox serve` of its own."""
    path = None
    if config:
        import tempfile
        fd, path = tempfile.mkstemp(prefix="jukebox-breaker-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(config, f)
    try:
        return Served(name, tape_dir, path, argv)
    finally:
        if path:
            os.unlink(path)


def _exit_of(exc: Optional[BaseException]) -> Tuple[int, str]:
    """The exit status and error a run ends with when exc ended it: a
    SystemExit is its code (None and 0 a success, other than a number 1),
    any other exception 1."""
    if exc is None:
        return 0, ""
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None or code == 0:
            return 0, ""
        return (code if isinstance(code, int) else 1), f"SystemExit: {code}"
    return 1, f"{type(exc).__name__}: {exc}"


# What sys.exit was called with last, while a run that no track started
# is open (_ExitNoter): the status it ends with at the interpreter's exit.
_EXIT_CALLS: List[SystemExit] = []


class _ExitNoter:
    """Puts a sys.exit that notes its status in place while runs that no
    track started are open, and the real one back after the last."""

    def __init__(self) -> None:
        self.users = 0
        self.real: Callable[..., Any] = sys.exit

    def hold(self) -> None:
        if self.users == 0:
            self.real = sys.exit

            def exit(status: object = None) -> Any:
                _EXIT_CALLS[:] = [SystemExit(status)]
                return self.real(status)
            sys.exit = exit
        self.users += 1

    def release(self) -> None:
        self.users = max(0, self.users - 1)
        if self.users == 0:
            sys.exit = self.real


_EXIT_NOTER = _ExitNoter()


def _script_name() -> str:
    base = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    return os.path.splitext(base)[0] or "python"


class Jukebox:
    """The SDK's entry point.

    Under ``jukebox record -- python agent.py`` it uses that run's control
    API ($JUKEBOX_CONTROL): turns and transactions go on the run's tape, and
    record's own limits are the breaker's. On its own, each Jukebox holds a
    connection of its own: the first ``track`` that begins while none of
    this object's runs is left starts one, which ``jukebox serve`` records
    into tape_dir with this object's breaker, and the last one to end ends
    it; the model SDK clients created inside a track point at it
    (OPENAI_BASE_URL and the rest are set while a track runs, and restored
    after)."""

    def __init__(self, tape_dir: Union[str, "os.PathLike[str]"] = "./tapes", sandbox: Optional[SandboxPolicy] = None,
                 breaker: Optional[CircuitBreaker] = None) -> None:
        if not isinstance(tape_dir, (str, os.PathLike)):
            raise TypeError(f"Jukebox(tape_dir={tape_dir!r}): want a folder's path")
        self.tape_dir = os.path.abspath(tape_dir)
        self.sandbox = sandbox or SandboxPolicy()
        self.breaker = breaker or CircuitBreaker()
        if not isinstance(self.sandbox, SandboxPolicy):
            raise TypeError("sandbox: want a SandboxPolicy")
        if not isinstance(self.breaker, CircuitBreaker):
            raise TypeError("breaker: want a CircuitBreaker")
        self._recorded = Control.from_env()
        if self._recorded is not None and self.breaker.config() and os.environ.get("JUKEBOX_MODE") != "replay":
            # A replay has no breaker: it tells the agent of the recording's
            # trip, whatever limits this object names.
            warnings.warn("jukebox: this agent runs under jukebox record, whose limits are the breaker's; "
                          "CircuitBreaker(...) applies when it runs on its own", stacklevel=2)
        self._lock = threading.RLock()
        self._served: Optional[Union[Served, PooledRun]] = None
        self._by_track = False  # the served run ends with the last track
        self._active = 0  # tracks running
        self._failure = ""  # the first outermost track's exception, for run.end
        self._failure_code = 0  # and the exit status it stands for
        self._last_trip: Optional[Dict[str, Any]] = None  # the last ended run's trip
        self._saved_env: Dict[str, Optional[str]] = {}
        self._tracks = 0
        self._turns: Dict[str, int] = {}
        self._info: Optional[Dict[str, Any]] = None
        self._pid = os.getpid()  # the process whose run this object started
        #: The track running in this context (its path), for turns.
        self._current: "contextvars.ContextVar[Optional[str]]" = contextvars.ContextVar(
            f"jukebox_track_{id(self)}", default=None)

    # -- runs -------------------------------------------------------------

    @property
    def recording(self) -> bool:
        """True under jukebox record (the run is record's)."""
        return self._recorded is not None

    def _control(self) -> Control:
        if self._recorded is not None:
            return self._recorded
        with self._lock:
            if self._served is None:
                self._start(_script_name())
                self._by_track = False
                _EXIT_NOTER.hold()  # its end's status, at the interpreter's exit
            return self._served.control  # type: ignore[union-attr]

    def _start(self, name: str) -> None:
        argv = [sys.executable, *sys.argv]
        if pooled():
            self._served = PooledRun(name, self.tape_dir, self.breaker.config(), argv)
        else:
            self._served = _process(name, self.tape_dir, self.breaker.config(), argv)
        self._turns = {}
        self._info = None
        self._failure, self._failure_code = "", 0
        self._pid = os.getpid()
        atexit.register(self._close_at_exit)

    def _set_env(self, served: Union[Served, PooledRun]) -> None:
        env: Dict[str, str] = served.info["env"]
        self._saved_env = {k: os.environ.get(k) for k in env}
        os.environ.update(env)

    def _restore_env(self) -> None:
        for k, v in self._saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self._saved_env = {}

    def close(self, exit_code: int = 0, error: str = "") -> None:
        """Ends the run this object started (nothing under jukebox record):
        the tape gets run.end with exit_code and is closed."""
        if isinstance(exit_code, bool) or not isinstance(exit_code, int):
            raise TypeError(f"close(exit_code={exit_code!r}): want an int")
        if not isinstance(error, str):
            raise TypeError(f"close(error={error!r}): want a str")
        with self._lock:
            served, self._served = self._served, None
            if served is None:
                return
            self._restore_env()
            self._active = 0
            atexit.unregister(self._close_at_exit)
            if not self._by_track:
                _EXIT_NOTER.release()
            try:  # what check_breaker says once the run has ended
                out = served.control.call("GET", "breaker")
                self._last_trip = out.get("breaker") if out.get("tripped") else None
            except JukeboxError:
                self._last_trip = None
            served.end(exit_code, error)

    def _close_at_exit(self) -> None:
        """Ends at the interpreter's exit a run still open: with exit 1 and
        the exception that was not caught (sys.last_value), else with the
        status sys.exit was called with, else 0. A `raise SystemExit(n)`
        outside any track is not seen: 0. A child forked from the process
        that started the run inherits the handler: its exit ends nothing
        (the run went on in its parent)."""
        if os.getpid() != self._pid:
            return
        exc: Optional[BaseException] = getattr(sys, "last_value", None)
        if exc is None and _EXIT_CALLS:
            exc = _EXIT_CALLS[-1]
        self.close(*_exit_of(exc))

    @property
    def tape(self) -> Optional[str]:
        """The path of the tape being written, if any."""
        if self._recorded is not None:
            return os.environ.get("JUKEBOX_TAPE") or None
        served = self._served
        return str(served.info["tape"]) if served else None

    def info(self) -> Dict[str, Any]:
        """The run as the control API describes it (api, mode, tape_id, ...)."""
        if self._info is None:
            self._info = self._control().call("GET", "info")
        return self._info

    def check_breaker(self) -> None:
        """Raises BreakerTripped if the run's circuit breaker has tripped.
        With no run open (standalone, after the last track ended), it
        starts none: it raises the last run's trip, if that run tripped."""
        with self._lock:
            running = self._recorded is not None or self._served is not None
            last = self._last_trip
        if not running:
            if last:
                raise tripped(last)
            return
        self._control().breaker()

    @overload
    def track(self, name: F, /) -> F: ...

    @overload
    def track(self, name: Optional[str] = None) -> Track: ...

    def track(self, name: Any = None) -> Any:
        """A track: ``@jb.track``, ``@jb.track("name")``,
        ``@jb.track(name="name")`` on a sync, async, generator or async
        generator function, or ``with jb.track("name"):``. Each call (or
        block) is a track: standalone, the first one starts a run named
        after it (the breaker config's track of that name applies) and the
        last one running ends it; one inside another is its child on the
        tape; ones that run at once share the run, their turns told apart.
        Under jukebox record the run is record's."""
        if callable(name):
            return Track(self, None)(name)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"track: want a function or a name, got {type(name).__name__}")
        if name is not None and not name.strip():
            raise ValueError("track: the name is empty")
        return Track(self, name)

    def _begin_track(self, name: str) -> Tuple[str, bool]:
        """Begins a track (starting the run when none is): its path, and
        whether it is marked on the tape (it nests, or runs beside another:
        track.start and track.end markers; a track alone is the run)."""
        parent = self._current.get()
        with self._lock:
            self._tracks += 1
            path = f"{parent}/{name}#{self._tracks}" if parent else f"{name}#{self._tracks}"
            if self._recorded is None:
                if self._served is None:
                    self._start(name)
                    self._by_track = True
                if self._active == 0:
                    self._set_env(self._served)  # type: ignore[arg-type]
            marked = parent is not None or self._active > 0
            self._active += 1
            control = self._control()
        if marked:
            control.call("POST", "marker", {"label": "track.start", "note": path})
        return path, marked

    def _end_track(self, path: str, marked: bool, exc: Optional[BaseException]) -> None:
        """Ends a track; the last one running ends a run a track started,
        with the status and error of the first outermost track's exception
        (a sys.exit's code: sys.exit(0) is a success), else 0."""
        code, error = _exit_of(exc)
        try:
            if marked:
                note = f"{path}: {error}" if error else path
                self._control().call("POST", "marker", {"label": "track.end", "note": note})
        finally:
            with self._lock:
                self._active = max(0, self._active - 1)
                if error and "/" not in path and not self._failure:
                    self._failure, self._failure_code = error, code
                if self._active == 0 and self._recorded is None:
                    self._restore_env()
                    if self._by_track:
                        self.close(self._failure_code if self._failure else 0, self._failure)

    # -- turns ------------------------------------------------------------

    def record_agent_turn(self, agent_name: str, message: str = "", model: Optional[str] = None,
                          cost_usd: Optional[float] = None, role: str = "assistant") -> "_Turn":
        """Writes an agent.turn frame (agent, message, model, cost, and the
        track it runs in) and opens a transaction for the turn's work:
        ``with`` (or ``async with``) it. The breaker counts the turn's cost
        and text, and raises BreakerTripped here when it trips. Leaving the
        block without an exception commits; an exception rolls back and is
        raised again."""
        for arg, value in (("agent_name", agent_name), ("message", message), ("role", role)):
            if not isinstance(value, str):
                raise TypeError(f"record_agent_turn({arg}={value!r}): want a str")
        if not agent_name.strip():
            # The turn's agent names the calls after it (cost --by agent, an
            # agent's own breaker limits): an empty one named none.
            raise ValueError("record_agent_turn(agent_name=''): want the agent's name, such as \"planner\"")
        if model is not None and not isinstance(model, str):
            raise TypeError(f"record_agent_turn(model={model!r}): want a str or None")
        if cost_usd is not None:
            if isinstance(cost_usd, bool) or not isinstance(cost_usd, (int, float)):
                raise TypeError(f"record_agent_turn(cost_usd={cost_usd!r}): want a number of dollars")
            if not math.isfinite(cost_usd) or cost_usd < 0:
                raise ValueError(f"record_agent_turn(cost_usd={cost_usd!r}): want a finite amount, 0 or more")
        return _Turn(self, agent_name, message, model, cost_usd, role, self._current.get() or "")

    def _next_turn(self, track: str) -> int:
        """The number of the track's next turn. It is taken where the turn
        begins (an asyncio task's, in the loop, before the thread that
        sends it), so that tasks begun in one order number their turns in
        that order in every run: a replay matches them, whichever thread
        sends first."""
        with self._lock:
            turn = self._turns[track] = self._turns.get(track, 0) + 1
        return turn

    def _turn(self, agent: str, message: str, model: Optional[str], cost: Optional[float], role: str,
              track: str, turn: int) -> None:
        control = self._control()
        control.breaker(agent)  # another agent's own trip stops not this one
        body: Dict[str, Any] = {"agent": agent, "turn": turn, "role": role, "text": message}
        if model:
            body["model"] = model
        if cost:
            body["cost_usd"] = cost
        if track:
            body["track"] = track
        out = control.call("POST", "turn", body)
        if out.get("breaker"):
            raise tripped(out["breaker"])

    @overload
    def begin(self, async_: Literal[False] = ...) -> Transaction: ...

    @overload
    def begin(self, async_: Literal[True]) -> AsyncTransaction: ...

    @overload
    def begin(self, async_: bool) -> Transaction: ...

    def begin(self, async_: bool = False) -> Transaction:
        """Begins a transaction outside a turn (an AsyncTransaction when
        async_): commit or roll it back yourself, or hold it with ``with``
        (``async with``), which commits when the block ends without an
        exception and rolls back, the exception raised again, when not."""
        if not isinstance(async_, bool):
            raise TypeError(f"begin(async_={async_!r}): want True or False")
        return self._begin(async_, "")

    def _begin(self, async_: bool, name: str) -> Transaction:
        """begin, the transaction named (a turn's: its track and number).
        A replay answers identical beginnings in the recorded order: named
        apart, transactions that threads or processes begin at once get
        each its own recorded one, whichever begins first."""
        control = self._control()
        body = {"mcp_mode": self.sandbox.mcp_mode}
        if name:
            body["name"] = name
        out = control.call("POST", "tx", body)
        cls = AsyncTransaction if async_ else Transaction
        tape_id = self.info().get("tape_id", "")
        return cls(control, out["tx"], out["workspace"], tape_id, self.sandbox.filesystem == "read_only")


class _Turn:
    """The context manager record_agent_turn returns (sync and async)."""

    def __init__(self, jb: Jukebox, agent: str, message: str, model: Optional[str], cost: Optional[float],
                 role: str, track: str) -> None:
        self._jb, self._args = jb, (agent, message, model, cost, role, track)
        self._tx: Optional[Transaction] = None

    def _enter(self, async_: bool, turn: int) -> Transaction:
        self._jb._turn(*self._args, turn)
        track = self._args[5]
        self._tx = self._jb._begin(async_, f"turn {turn} of {track}" if track else f"turn {turn}")
        return self._tx

    def _leave(self, exc: Optional[BaseException]) -> None:
        if self._tx is not None:
            self._tx._finish(exc)

    def __enter__(self) -> Transaction:
        return self._enter(False, self._jb._next_turn(self._args[5]))

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self._leave(exc)

    async def __aenter__(self) -> AsyncTransaction:
        turn = self._jb._next_turn(self._args[5])  # in the loop, in the tasks' order
        tx = await _in_thread(lambda: self._enter(True, turn))
        assert isinstance(tx, AsyncTransaction)
        return tx

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await _in_thread(lambda: self._leave(exc))
