"""Jukebox: runs (tracks), turns and their transactions."""

import atexit
import contextlib
import functools
import inspect
import json
import os
import sys
import tempfile
import threading
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, Iterator, Optional, TypeVar

from ._control import Control, Served, tripped
from ._tx import AsyncTransaction, Transaction
from .errors import JukeboxError

F = TypeVar("F", bound=Callable[..., Any])

FILESYSTEM_MODES = {
    "copy_on_write": "staged in the Shadow Booth until commit; rollback leaves nothing behind",
    "read_only": "nothing may be staged: writes, deletes, SQL and shell commands raise SandboxViolation",
}
MCP_MODES = {
    "staged_acid": "MCP tool calls the policy holds (jukebox mcp --policy) wait for the transaction's commit and run then; a rollback drops them",
    "read_only": "MCP tool calls are not held with the transaction: those the policy holds run at once, noted",
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
            if name in ("max_repeat", "max_semantic_repeat"):
                if not isinstance(value, int) or value < 2:
                    raise ValueError(f"CircuitBreaker({name}={value!r}): a repeat is seen at least twice")
            elif value <= 0:
                raise ValueError(f"CircuitBreaker({name}={value!r}): a limit must be above 0")

    def config(self) -> Dict[str, Any]:
        """The breaker config file's JSON (--breaker-config)."""
        return {k: v for k, v in asdict(self).items() if v is not None}


def _script_name() -> str:
    base = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    return os.path.splitext(base)[0] or "python"


class Jukebox:
    """The SDK's entry point.

    Under ``jukebox record -- python agent.py`` it uses that run's control
    API ($JUKEBOX_CONTROL): turns and transactions go on the run's tape, and
    record's own limits are the breaker's. On its own, each call of a
    ``track`` function is a run that ``jukebox serve`` records into
    tape_dir, with this object's breaker; the model SDK clients the function
    creates point at it (OPENAI_BASE_URL and the rest are set while it
    runs)."""

    def __init__(self, tape_dir: str = "./tapes", sandbox: Optional[SandboxPolicy] = None,
                 breaker: Optional[CircuitBreaker] = None):
        self.tape_dir = os.path.abspath(tape_dir)
        self.sandbox = sandbox or SandboxPolicy()
        self.breaker = breaker or CircuitBreaker()
        if not isinstance(self.sandbox, SandboxPolicy):
            raise TypeError("sandbox: want a SandboxPolicy")
        if not isinstance(self.breaker, CircuitBreaker):
            raise TypeError("breaker: want a CircuitBreaker")
        self._recorded = Control.from_env()
        if self._recorded is not None and self.breaker.config():
            warnings.warn("jukebox: this agent runs under jukebox record, whose limits are the breaker's; "
                          "CircuitBreaker(...) applies when it runs on its own", stacklevel=2)
        self._lock = threading.RLock()
        self._served: Optional[Served] = None
        self._turns = 0
        self._info: Optional[Dict[str, Any]] = None

    # -- runs -------------------------------------------------------------

    @property
    def recording(self) -> bool:
        """True under jukebox record (the run is record's)."""
        return self._recorded is not None

    def _control(self) -> Control:
        if self._recorded is not None:
            return self._recorded
        if self._served is None:
            self._start(_script_name())
        return self._served.control  # type: ignore[union-attr]

    def _start(self, name: str) -> None:
        config = None
        if self.breaker.config():
            fd, config = tempfile.mkstemp(prefix="jukebox-breaker-", suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump(self.breaker.config(), f)
        try:
            self._served = Served(name, self.tape_dir, config, [sys.executable, *sys.argv])
        finally:
            if config:
                os.unlink(config)
        self._saved_env = {k: os.environ.get(k) for k in self._served.info["env"]}
        os.environ.update(self._served.info["env"])
        self._turns = 0
        self._info = None
        atexit.register(self.close)

    def close(self, exit_code: int = 0, error: str = "") -> None:
        """Ends the run this object started (nothing under jukebox record):
        the tape gets run.end with exit_code and is closed."""
        with self._lock:
            served, self._served = self._served, None
            if served is None:
                return
            for k, v in self._saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            atexit.unregister(self.close)
            served.end(exit_code, error)

    @property
    def tape(self) -> Optional[str]:
        """The path of the tape being written, if any."""
        if self._recorded is not None:
            return os.environ.get("JUKEBOX_TAPE") or None
        return self._served.info["tape"] if self._served else None

    def info(self) -> Dict[str, Any]:
        """The run as the control API describes it (api, mode, tape_id, ...)."""
        if self._info is None:
            self._info = self._control().call("GET", "info")
        return self._info

    def check_breaker(self) -> None:
        """Raises BreakerTripped if the run's circuit breaker has tripped."""
        self._control().breaker()

    def track(self, name: Optional[str] = None) -> Callable[[F], F]:
        """Decorates an agent function (sync or async): each call is a run
        named name (the breaker config's track of that name applies), on a
        tape of its own, ended when the call returns or raises. Under
        jukebox record the run is record's, and the function just runs."""

        def wrap(fn: F) -> F:
            run_name = name or fn.__name__

            if inspect.iscoroutinefunction(fn):
                @functools.wraps(fn)
                async def async_run(*args: Any, **kwargs: Any) -> Any:
                    with self._tracked(run_name):
                        return await fn(*args, **kwargs)
                return async_run  # type: ignore[return-value]

            @functools.wraps(fn)
            def run(*args: Any, **kwargs: Any) -> Any:
                with self._tracked(run_name):
                    return fn(*args, **kwargs)
            return run  # type: ignore[return-value]

        return wrap

    @contextlib.contextmanager
    def _tracked(self, name: str) -> Iterator[None]:
        """One call of a track function: a run of its own, ended with exit
        1 and the exception when it raises, else 0."""
        self._begin_track(name)
        try:
            yield
        except BaseException as e:
            self._end_track(1, f"{type(e).__name__}: {e}")
            raise
        self._end_track(0, "")

    def _begin_track(self, name: str) -> None:
        if self._recorded is not None:
            return
        with self._lock:
            if self._served is not None:
                raise JukeboxError(f"track {name!r} starts while another run of this Jukebox is recording; "
                                   "tracks of one Jukebox run one at a time")
            self._start(name)

    def _end_track(self, code: int, error: str) -> None:
        if self._recorded is None:
            self.close(code, error)

    # -- turns ------------------------------------------------------------

    def record_agent_turn(self, agent_name: str, message: str = "", model: Optional[str] = None,
                          cost_usd: Optional[float] = None, role: str = "assistant") -> "_Turn":
        """Writes an agent.turn frame (agent, message, model, cost) and opens
        a transaction for the turn's work: ``with`` (or ``async with``) it.
        The breaker counts the turn's cost and text, and raises
        BreakerTripped here when it trips. Leaving the block without an
        exception commits; an exception rolls back and is raised again."""
        if cost_usd is not None and cost_usd < 0:
            raise ValueError("cost_usd is negative")
        return _Turn(self, agent_name, message, model, cost_usd, role)

    def _turn(self, agent: str, message: str, model: Optional[str], cost: Optional[float], role: str) -> None:
        control = self._control()
        control.breaker()
        with self._lock:
            self._turns += 1
            turn = self._turns
        body: Dict[str, Any] = {"agent": agent, "turn": turn, "role": role, "text": message}
        if model:
            body["model"] = model
        if cost:
            body["cost_usd"] = cost
        out = control.call("POST", "turn", body)
        if out.get("breaker"):
            raise tripped(out["breaker"])

    def begin(self, async_: bool = False) -> Transaction:
        """Begins a transaction outside a turn; commit or roll it back
        yourself."""
        control = self._control()
        out = control.call("POST", "tx", {"mcp_mode": self.sandbox.mcp_mode})
        cls = AsyncTransaction if async_ else Transaction
        tape_id = self.info().get("tape_id", "")
        return cls(control, out["tx"], out["workspace"], tape_id, self.sandbox.filesystem == "read_only")


class _Turn:
    """The context manager record_agent_turn returns (sync and async)."""

    def __init__(self, jb: Jukebox, agent: str, message: str, model: Optional[str], cost: Optional[float], role: str):
        self._jb, self._args = jb, (agent, message, model, cost, role)
        self._tx: Optional[Transaction] = None

    def _enter(self, async_: bool) -> Transaction:
        self._jb._turn(*self._args)
        self._tx = self._jb.begin(async_)
        return self._tx

    def _leave(self, exc: Optional[BaseException]) -> None:
        tx = self._tx
        if tx is None or tx.state != "open":
            return
        if exc is None:
            Transaction.commit(tx)
        else:
            Transaction.rollback(tx, f"{type(exc).__name__}: {exc}")

    def __enter__(self) -> Transaction:
        return self._enter(False)

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> bool:
        self._leave(exc)
        return False

    async def __aenter__(self) -> AsyncTransaction:
        import asyncio
        return await asyncio.get_running_loop().run_in_executor(None, lambda: self._enter(True))  # type: ignore[return-value]

    async def __aexit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> bool:
        import asyncio
        await asyncio.get_running_loop().run_in_executor(None, lambda: self._leave(exc))
        return False
