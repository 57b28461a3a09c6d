"""Transactions: file writes, deletes, SQL and shell commands staged in the
Shadow Booth until commit."""

import asyncio
import base64
import os
import sqlite3
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from . import _sql
from ._control import Control
from ._sql import Params
from .errors import JukeboxError, SandboxViolation, SQLError

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class ShellResult:
    """What a staged shell command did."""

    exit_code: int
    stdout: str
    stderr: str


def _is_postgres(dsn: str) -> bool:
    return dsn.startswith(("postgres://", "postgresql://"))


class Transaction:
    """One booth transaction. Nothing it stages reaches the workspace or the
    database until commit(); rollback() leaves nothing behind. Leaving a
    ``record_agent_turn`` block without an exception commits it, an
    exception rolls it back (and is raised again)."""

    def __init__(self, control: Control, tx: str, workspace: str, tape_id: str, read_only: bool) -> None:
        self._c = control
        self.tx_id = tx
        self.workspace = workspace
        self._tape_id = tape_id
        self._read_only = read_only
        #: "open", "committed" or "rolled_back".
        self.state = "open"
        #: After commit: the MCP tool calls the transaction held (mcp_mode
        #: staged_acid), run after it, each {"server", "tool", "key",
        #: "ran", "error"}.
        self.mcp_calls: List[Dict[str, Any]] = []
        self._sqlite_statements = 0

    @property
    def tape_id(self) -> str:
        """The id of the tape this transaction is recorded on."""
        return self._tape_id

    def _op(self, op: str, body: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        if self.state != "open":
            raise JukeboxError(f"transaction {self.tx_id} is {self.state.replace('_', ' ')}")
        return self._c.call("POST", f"tx/{self.tx_id}/{op}", body or {})

    def _writes(self, what: str) -> None:
        if self._read_only:
            raise SandboxViolation(f"{what}: the sandbox policy is read_only")

    def _path(self, path: PathLike) -> str:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path {path!r}: want a str or a path")
        # Paths are the agent's (relative to its directory); the booth takes
        # them relative to the workspace. A path outside it goes as given,
        # for the booth to refuse.
        path = os.fspath(path)
        full = os.path.abspath(path)
        rel = os.path.relpath(full, self.workspace)
        if rel == os.curdir or rel.startswith(os.pardir + os.sep) or rel == os.pardir:
            return path
        return rel

    def stage_file_write(self, path: PathLike, content: Union[str, bytes],
                         mode: Optional[int] = None) -> None:
        """Stages writing content (text is UTF-8, or bytes) to path; missing
        parent folders are staged too. Content that is neither (None) is a
        TypeError: stage_file_delete removes a file, "" empties it."""
        if not isinstance(content, (str, bytes, bytearray)):
            raise TypeError(f"stage_file_write({os.fspath(path)!r}, content={content!r}): want str or bytes "
                            "(stage_file_delete removes a file, \"\" empties it)")
        if mode is not None and (isinstance(mode, bool) or not isinstance(mode, int)):
            raise TypeError(f"stage_file_write(mode={mode!r}): want an int such as 0o644")
        self._writes(f"write {path}")
        body: Dict[str, Any] = {"path": self._path(path)}
        if isinstance(content, (bytes, bytearray)):
            body.update(content=base64.b64encode(content).decode(), base64=True)
        else:
            body["content"] = content
        if mode is not None:
            body["mode"] = mode
        self._op("write", body)

    def stage_file_delete(self, path: PathLike) -> None:
        """Stages deleting the file at path (FileNotFoundError-like
        JukeboxError when there is none)."""
        self._writes(f"delete {path}")
        self._op("delete", {"path": self._path(path)})

    def stage_sql(self, dsn_or_path: str, sql: str, params: Params = ()) -> List[Tuple[Any, ...]]:
        """Runs sql in the transaction and returns its rows.

        A PostgreSQL URL (postgres://...) joins the booth's transaction
        through a prepared transaction: one decision with the files,
        invisible to other connections until commit. Placeholders are
        PostgreSQL's ``$1, $2`` with a sequence, or psycopg's DB-API style:
        ``%s`` with a sequence, ``%(name)s`` with a mapping (``%%`` is a
        literal %). The server must allow prepared transactions
        (max_prepared_transactions above 0): else the first statement raises
        SQLError naming the setting.

        Any other value is a SQLite file in the workspace, staged with the
        files (its staged copy is changed, the commit swaps it in), with
        sqlite3's placeholders: ``?`` with a sequence, ``:name`` with a
        mapping. A refused statement raises SQLError (message, sqlstate)."""
        if not isinstance(dsn_or_path, (str, os.PathLike)) or not isinstance(sql, str):
            raise TypeError("stage_sql(dsn_or_path, sql, params): want a DSN or path, and the SQL as a str")
        _sql.check_params(params)
        self._writes("sql")
        dsn = os.fspath(dsn_or_path)
        if _is_postgres(dsn):
            text, args = _sql.postgres(sql, params)
            out = self._op("sql", {"dsn": dsn, "sql": text, "params": args})
            return [tuple(r) for r in out.get("rows", [])]
        return self._sqlite(dsn, sql, params)

    def _sqlite(self, path: str, sql: str, params: Params) -> List[Tuple[Any, ...]]:
        staged = self._op("stage-path", {"path": self._path(path)})["staged"]
        conn = sqlite3.connect(staged)
        try:
            try:
                cur = conn.execute(sql, params if isinstance(params, Mapping) else tuple(params))
            except sqlite3.Error as e:
                raise SQLError(f"sqlite {path}: {e}", getattr(e, "sqlite_errorname", "")) from None
            rows: List[Tuple[Any, ...]] = cur.fetchall()
            conn.commit()
            self._sqlite_statements += 1
            return rows
        finally:
            conn.close()

    def run_shell(self, command: str) -> ShellResult:
        """Runs a shell command in the booth: its writes to the workspace are
        staged, outside it only /dev/null and friends may be written."""
        self._writes(f"shell {command!r}")
        out = self._op("shell", {"command": command})
        return ShellResult(out["exit_code"], out["stdout"], out["stderr"])

    def commit(self) -> int:
        """Commits: every staged change reaches the workspace (and the
        database) at once, or none does. Returns the number of files
        changed plus SQL statements run. CommitConflict leaves the
        transaction open."""
        out = self._op("commit")
        self.state = "committed"
        self.mcp_calls = list(out.get("mcp_calls") or [])
        return int(out.get("changes", 0)) + int(out.get("statements", 0)) + self._sqlite_statements

    def rollback(self, reason: str = "") -> None:
        """Rolls back: nothing staged is left behind. The reason goes on the
        tape."""
        self._op("rollback", {"reason": reason})
        self.state = "rolled_back"


class AsyncTransaction(Transaction):
    """A Transaction for ``async with``: commit, rollback, stage_sql and
    run_shell are coroutines (they run in a thread); staging a file write or
    delete is quick and stays a plain call."""

    async def commit(self) -> int:  # type: ignore[override]
        return await asyncio.get_running_loop().run_in_executor(None, super().commit)

    async def rollback(self, reason: str = "") -> None:  # type: ignore[override]
        await asyncio.get_running_loop().run_in_executor(None, lambda: Transaction.rollback(self, reason))

    async def stage_sql(self, dsn_or_path: str, sql: str, params: Params = ()) -> List[Tuple[Any, ...]]:  # type: ignore[override]
        return await asyncio.get_running_loop().run_in_executor(
            None, lambda: Transaction.stage_sql(self, dsn_or_path, sql, params))

    async def run_shell(self, command: str) -> ShellResult:  # type: ignore[override]
        return await asyncio.get_running_loop().run_in_executor(None, lambda: Transaction.run_shell(self, command))
