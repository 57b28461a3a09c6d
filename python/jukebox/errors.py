"""Exceptions the SDK raises. Every one is a JukeboxError; bad arguments
are TypeError or ValueError, raised before anything is sent."""

from typing import Any, Dict, List, Optional


class JukeboxError(Exception):
    """jukebox refused or failed a request; the message says why.
    rolled_back is True when the failure ended the transaction (a commit
    that failed and was rolled back): its state is then rolled_back."""

    #: The failure ended the transaction, rolled back.
    rolled_back: bool = False
    #: No answer came (jukebox was gone): what was asked may have been done.
    unanswered: bool = False
    #: The staged operation of a batch that failed ("write", "delete", or
    #: the "commit" or "rollback" sent with them); "" for any other error.
    staged: str = ""


class AuthError(JukeboxError):
    """The control API refused the token (401): JUKEBOX_CONTROL_TOKEN is
    not the run's, or the run that issued it has ended."""


class SQLError(JukeboxError):
    """The database refused a statement, could not be reached, or cannot
    take part in the transaction (PostgreSQL with max_prepared_transactions
    = 0). The message is the server's; sqlstate its SQLSTATE code ("" when
    it gave none)."""

    def __init__(self, message: str, sqlstate: str = ""):
        super().__init__(message)
        #: The SQLSTATE code, e.g. "42P01" (undefined table); "" when none.
        self.sqlstate: str = sqlstate


class SandboxViolation(JukeboxError):
    """A staged path leaves the workspace (``..``, an absolute path outside
    it, a symlink that leads out) or names the booth's own state, or the
    SandboxPolicy is read_only."""


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
