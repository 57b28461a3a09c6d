"""Exceptions the SDK raises. Every one is a JukeboxError."""

from typing import Any, Dict, List, Optional


class JukeboxError(Exception):
    """jukebox refused or failed a request; the message says why."""


class SandboxViolation(JukeboxError):
    """A staged path leaves the workspace (``..``, an absolute path outside
    it, a symlink that leads out) or names the booth's own state."""


class CommitConflict(JukeboxError):
    """The real workspace changed under a staged path since the transaction
    began. The transaction stays open: roll it back, or stage again and
    commit."""

    def __init__(self, message: str, conflicts: Optional[List[Dict[str, str]]] = None):
        super().__init__(message)
        #: Each conflict as {"path": ..., "reason": ...}.
        self.conflicts: List[Dict[str, str]] = conflicts or []


class BreakerTripped(JukeboxError):
    """The circuit breaker stopped the run: a cost cap, a spend velocity, a
    repeated or oscillating tool call, answers that say the same thing."""

    def __init__(self, message: str, trip: Optional[Dict[str, Any]] = None):
        super().__init__(message)
        trip = trip or {}
        #: The rule that tripped: cost, token-velocity, cost-velocity,
        #: repeat, oscillation, semantic-repeat, unknown-model.
        self.rule: str = trip.get("rule", "")
        self.reason: str = trip.get("reason", "")
        #: The run's cost in dollars when it tripped.
        self.cost: float = trip.get("cost", 0.0)
        #: Frames of the tape that show it.
        self.evidence: List[int] = trip.get("evidence", [])


class Divergence(JukeboxError):
    """A replay or fork met a request the tape does not hold, before the
    point where it was to go live."""

    def __init__(self, message: str, divergence: Optional[Dict[str, Any]] = None):
        super().__init__(message)
        #: What jukebox reported: the frame, and what differed.
        self.divergence: Dict[str, Any] = divergence or {}
