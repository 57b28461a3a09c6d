"""Jukebox from inside an agent: transactions, turns and tapes.

    from jukebox import Jukebox, SandboxPolicy, CircuitBreaker, Tape
    jb = Jukebox(tape_dir="./tapes", breaker=CircuitBreaker(max_cost_usd=0.50))

    @jb.track(name="invoice-agent")
    async def run(amount: float) -> None:
        async with jb.record_agent_turn(agent_name="planner", message="Staging a refund",
                                        model="gpt-4o", cost_usd=0.008) as tx:
            tx.stage_file_write("ledger.json", '{"refund_usd": 12.5}')
            if amount > 500:
                await tx.rollback(reason="over the threshold")

The SDK drives the jukebox binary (JUKEBOX_BIN, else PATH) and never
reimplements it: under `jukebox record` through the run's control API,
else through `jukebox serve`, which it starts. Pure standard library,
Python 3.9+.
"""

from ._control import Control
from ._core import CircuitBreaker, Jukebox, SandboxPolicy
from ._tape import Frame, Tape
from ._track import Track
from ._tx import AsyncTransaction, ShellResult, Transaction
from .errors import (AuthError, BreakerTripped, CommitConflict, Divergence, JukeboxError, SandboxViolation,
                     SQLError)

__all__ = [
    "AsyncTransaction", "AuthError", "BreakerTripped", "CircuitBreaker", "CommitConflict", "Control",
    "Divergence", "Frame", "Jukebox", "JukeboxError", "SQLError", "SandboxPolicy", "SandboxViolation",
    "ShellResult", "Tape", "Track", "Transaction",
]
__version__ = "0.1.0"
