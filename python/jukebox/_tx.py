"""Transactions: file writes, deletes, SQL and shell commands staged in the
Shadow Booth until commit."""

import base64
import errno
import json
import os
import posixpath
import threading
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Awaitable, Callable, Dict, List, Mapping, NoReturn, Optional, Tuple, Type, TypeVar, Union

from . import _sql
from ._control import Control, _error
from ._sql import Params
from .errors import JukeboxError, SandboxViolation, SQLError

_T = TypeVar("_T")

PathLike = Union[str, "os.PathLike[str]"]

# A batch of staged writes goes once it holds this much content, or this
# many operations. The control API takes a batch of up to 256 MiB
# (controlapi.MaxBatchBody): one write's content is at most _MAX_WRITE,
# which leaves room for a batch that has not reached _BATCH_BYTES yet.
_BATCH_BYTES = 4 << 20
_BATCH_OPS = 1000
_MAX_WRITE = 248 << 20

# The booth's own folder in the workspace (sandbox.DefaultStateDir).
_STATE_DIR = ".jukebox/booth"


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
        # Staged writes and deletes not sent yet: they go in one batch with
        # the next operation that needs the server (_op), so that staging a
        # file costs about what writing it does.
        self._pending: List[Dict[str, Any]] = []
        self._pending_bytes = 0
        self._lock = threading.Lock()
        # Set when a staged write or delete failed as it was sent: what
        # was staged is not what the agent staged, so only rollback goes.
        self._failed = ""

    @property
    def tape_id(self) -> str:
        """The id of the tape this transaction is recorded on."""
        return self._tape_id

    def _open(self) -> None:
        if self.state != "open":
            raise JukeboxError(f"transaction {self.tx_id} is {self.state.replace('_', ' ')}")

    def _usable(self) -> None:
        """Raises once a staged write or delete failed when it was sent:
        a commit then would commit without it (and without those staged
        after it, never sent), so, as in PostgreSQL's aborted transaction,
        only rollback goes."""
        if self._failed:
            raise JukeboxError(f"transaction {self.tx_id}: {self._failed}; roll it back, then stage again")

    def _op(self, op: str, body: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """Runs op, after the staged writes and deletes not sent yet: in one
        batch with them when op can be batched (commit, rollback)."""
        self._open()
        if op != "rollback":
            self._usable()
        with self._lock:
            pending, self._pending, self._pending_bytes = self._pending, [], 0
        if not pending:
            return self._c.call("POST", f"tx/{self.tx_id}/{op}", body or {})
        batchable = op in ("commit", "rollback")
        if batchable:
            pending.append({"op": op, "body": body or {}})
        try:
            last = self._batch(pending)
        except JukeboxError as e:
            if op != "rollback" or e.unanswered or e.staged in ("", "rollback"):
                raise
            # A staged write or delete that failed stopped the batch before
            # its rollback, which drops that one with the rest: it goes alone.
            return self._c.call("POST", f"tx/{self.tx_id}/rollback", body or {})
        if batchable:
            return last
        return self._c.call("POST", f"tx/{self.tx_id}/{op}", body or {})

    def _batch(self, ops: List[Dict[str, Any]]) -> Dict[str, Any]:
        """Sends ops as one batch (each served and taped as if it came
        alone); the first that fails raises, naming the staged operation."""
        # The contents of the writes go after the JSON as they are (the
        # control API's application/x-jukebox-batch): nothing escapes or
        # scans them as JSON text on either side.
        head: List[Dict[str, Any]] = []
        contents: List[bytes] = []
        for op in ops:
            content = op.get("content")
            if content is None:
                head.append(op)
                continue
            head.append({"op": op["op"], "body": op["body"], "base": op["base"], "content": len(content)})
            contents.append(content)
        data = b"".join([json.dumps({"ops": head}, separators=(",", ":")).encode(), b"\n", *contents])
        out: Optional[Dict[str, Any]] = None
        staging = sum(1 for op in ops if op["op"] in ("write", "delete"))
        try:
            if not self._c.json_batches:
                try:
                    out = self._c.send("POST", f"tx/{self.tx_id}/batch", data, "application/x-jukebox-batch")
                except JukeboxError as e:
                    # A jukebox from before binary batches reads the JSON and
                    # refuses its "content" lengths before it serves any
                    # operation: the batch goes again as JSON, and the rest.
                    if 'unknown field "content"' not in str(e):
                        raise
                    self._c.json_batches = True
            if out is None:
                out = self._c.call("POST", f"tx/{self.tx_id}/batch", {"ops": [_json_op(op) for op in ops]})
        except JukeboxError as e:
            if staging:
                self._failed = f"a batch of {staging} staged writes and deletes failed whole ({e})"
            raise
        answers = out.get("answers") or []
        for i, (op, a) in enumerate(zip(ops, answers)):
            status, answer = int(a.get("status", 0)), a.get("body") or {}
            if status != 200:
                err = _error(status, answer if isinstance(answer, dict) else {})
                what = op["op"] + (" " + str(op["body"].get("path")) if op["op"] in ("write", "delete") else "")
                err.args = (f"staged {what}: {err.args[0] if err.args else ''}",) + tuple(err.args[1:])
                err.staged = op["op"]
                if op["op"] in ("write", "delete"):
                    later = sum(1 for o in ops[i + 1:] if o["op"] in ("write", "delete"))
                    self._failed = f"staged {what} failed" + (
                        f", and the {later} staged after it {'was' if later == 1 else 'were'} not sent" if later else "")
                raise err
        if len(answers) != len(ops):
            raise JukeboxError(f"transaction {self.tx_id}: {len(answers)} answers to a batch of {len(ops)}")
        last = answers[-1].get("body") if answers else None
        return last if isinstance(last, dict) else {}

    def _stage(self, op: str, body: Dict[str, Any], size: int, base: Dict[str, Any],
               content: Optional[bytes] = None) -> None:
        self._open()
        self._usable()
        with self._lock:
            staged: Dict[str, Any] = {"op": op, "body": body, "base": base}
            if content is not None:
                staged["content"] = content
            self._pending.append(staged)
            self._pending_bytes += size
            full = self._pending_bytes >= _BATCH_BYTES or len(self._pending) >= _BATCH_OPS
        if full:
            self.flush()

    def flush(self) -> None:
        """Sends the staged writes and deletes not sent yet (each operation
        that needs the server does this first). An error of one of them is
        raised here, naming it; nothing after it is staged."""
        self._open()
        self._usable()
        with self._lock:
            pending, self._pending, self._pending_bytes = self._pending, [], 0
        if pending:
            self._batch(pending)

    def _writes(self, what: str) -> None:
        if self._read_only:
            raise SandboxViolation(f"{what}: the sandbox policy is read_only")

    def _path(self, path: PathLike) -> str:
        if not isinstance(path, (str, os.PathLike)) or not isinstance(os.fspath(path), str):
            raise TypeError(f"path {path!r}: want a str or a path of one")
        # Paths are the agent's (relative to its directory); the booth takes
        # them relative to the workspace. A path outside it goes as given,
        # for the booth to refuse.
        path = os.fspath(path)
        if os.sep == "/" and isinstance(path, str) and path[:1] not in ("", "/") \
                and not any(part in ("", ".", "..") for part in path.split("/")):
            # A clean relative path, the usual one: what abspath and relpath
            # make of it, without their three abspaths and two getcwds (most
            # of what staging a write cost).
            cwd, ws = os.getcwd(), self.workspace.rstrip("/")
            if cwd == self.workspace:
                return path
            if cwd.startswith(ws + "/"):
                return cwd[len(ws) + 1:] + "/" + path
        full = os.path.abspath(path)
        rel = os.path.relpath(full, self.workspace)
        if rel == os.curdir or rel.startswith(os.pardir + os.sep) or rel == os.pardir:
            return path
        return rel

    def _staged_path(self, op: str, path: PathLike) -> str:
        """path relative to the workspace, refused at once when the booth
        would refuse it (outside the workspace, in the booth's state folder,
        empty or holding NUL); what only the booth can tell (a symlink that
        leads out) is refused when the operation is sent."""
        rel = self._path(path)
        if rel == "" or "\0" in rel or rel in (".", os.curdir):
            raise SandboxViolation(f"{op} {os.fspath(path)!r}: jukebox: sandbox: invalid path")
        clean = posixpath.normpath(rel.replace(os.sep, "/"))
        if posixpath.isabs(clean) or clean == ".." or clean.startswith("../"):
            raise SandboxViolation(f"{op} {os.fspath(path)!r}: jukebox: sandbox: path escapes the workspace")
        if clean == _STATE_DIR or clean.startswith(_STATE_DIR + "/"):
            raise SandboxViolation(f"{op} {os.fspath(path)!r}: jukebox: sandbox: path is inside the booth state directory")
        return rel

    def _base(self, rel: str) -> Dict[str, Any]:
        """The real file at rel as it is now (controlapi.FileBase): the
        booth checks it is still so when the operation is sent."""
        try:
            st = os.lstat(os.path.join(self.workspace, rel))
        except OSError:
            return {"exists": False, "size": 0, "mtime_ns": 0}
        return {"exists": True, "size": st.st_size, "mtime_ns": st.st_mtime_ns}

    def stage_file_write(self, path: PathLike, content: Union[str, bytes],
                         mode: Optional[int] = None) -> None:
        """Stages writing content (text is UTF-8, or bytes) to path; missing
        parent folders are staged too. Content that is neither (None) is a
        TypeError: stage_file_delete removes a file, "" empties it. The
        write is sent with the next operation that needs the server
        (commit, rollback, stage_sql, run_shell, flush): an error of the
        write (its path is a folder) is raised there, naming it."""
        if not isinstance(content, (str, bytes, bytearray)):
            raise TypeError(f"stage_file_write({os.fspath(path)!r}, content={content!r}): want str or bytes "
                            "(stage_file_delete removes a file, \"\" empties it)")
        if mode is not None and (isinstance(mode, bool) or not isinstance(mode, int)):
            raise TypeError(f"stage_file_write(mode={mode!r}): want an int such as 0o644")
        if mode is not None and not 0 <= mode <= 0o7777:
            raise ValueError(f"stage_file_write(mode={mode!r}): want permission bits, 0 to 0o7777, such as 0o644")
        if not isinstance(path, (str, os.PathLike)) or not isinstance(os.fspath(path), str):
            raise TypeError(f"stage_file_write(path={path!r}): want a str or a path of one")
        if os.fspath(path).endswith(("/", os.sep)) or os.path.basename(os.fspath(path)) in (".", ".."):
            # A folder's name: a plain write raises so; the staged one
            # wrote the file without the slash.
            raise IsADirectoryError(errno.EISDIR, "stage_file_write: a path that ends in a slash, . or .. names a folder", os.fspath(path))
        self._writes(f"write {path}")
        body: Dict[str, Any] = {"path": self._staged_path("write", path)}
        if isinstance(content, (bytes, bytearray)):
            body["base64"] = True  # bytes, written as they are
            data = bytes(content)
        else:
            data = content.encode("utf-8")  # text that is not UTF-8 raises here, as a plain write would
        if len(data) > _MAX_WRITE:
            raise ValueError(f"stage_file_write({os.fspath(path)!r}): {len(data)} bytes, over the {_MAX_WRITE >> 20} MiB "
                             "a staged write takes: write it in the booth (jukebox record --booth) or outside the transaction")
        if mode is not None:
            body["mode"] = mode
        self._stage("write", body, len(data), self._base(body["path"]), data)

    def stage_file_delete(self, path: PathLike) -> None:
        """Stages deleting the file at path (a JukeboxError when there is
        none, raised by the next operation that sends it: see flush)."""
        self._writes(f"delete {path}")
        rel = self._staged_path("delete", path)
        self._stage("delete", {"path": rel}, 0, self._base(rel))

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
        dsn = os.fspath(dsn_or_path)
        if not dsn:
            raise ValueError("stage_sql(dsn_or_path=''): want a postgres:// URL or the path of a SQLite file "
                             "(an unset environment variable?)")
        self._writes("sql")
        if _is_postgres(dsn):
            text, args = _sql.postgres(sql, params)
            return _sql.rows(self._op("sql", {"dsn": dsn, "sql": text, "params": args}))
        return self._sqlite(dsn, sql, params)

    def _sqlite(self, path: str, sql: str, params: Params) -> List[Tuple[Any, ...]]:
        staged = self._op("stage-path", {"path": self._path(path)})["staged"]
        import sqlite3  # here: only a SQLite statement needs it
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
        if not isinstance(command, str):
            raise TypeError(f"run_shell(command={command!r}): want the command line as a str")
        self._writes(f"shell {command!r}")
        out = self._op("shell", {"command": command})
        return ShellResult(out["exit_code"], out["stdout"], out["stderr"])

    def commit(self) -> int:
        """Commits: every staged change reaches the workspace (and the
        database) at once, or none does. Returns the number of files
        changed plus SQL statements run. CommitConflict leaves the
        transaction open; a commit that fails and ends the transaction
        (rolled back, as its error's rolled_back says) leaves its state
        rolled_back."""
        try:
            out = self._op("commit")
        except JukeboxError as e:
            if e.rolled_back:
                self.state = "rolled_back"
            if e.unanswered:
                # jukebox died under the commit (kill -9, a crash): the
                # workspace may hold part of it until the journal is
                # played, all or nothing.
                raise JukeboxError(
                    f"{e}; the commit of transaction {self.tx_id} may have been under way: the workspace can hold "
                    f"part of it until `jukebox booth recover -C {self.workspace}` finishes or undoes it, all or "
                    "nothing (the next run in this folder does so first)") from None
            raise
        self.state = "committed"
        self.mcp_calls = list(out.get("mcp_calls") or [])
        return int(out.get("changes", 0)) + int(out.get("statements", 0)) + self._sqlite_statements

    def rollback(self, reason: str = "") -> None:
        """Rolls back: nothing staged is left behind. The reason goes on the
        tape."""
        if not isinstance(reason, str):
            raise TypeError(f"rollback(reason={reason!r}): want a str")
        self._op("rollback", {"reason": reason})
        self.state = "rolled_back"

    def _finish(self, exc: Optional[BaseException]) -> None:
        """Ends a transaction a block held: commits when the block ended
        without an exception, else rolls back with it as the reason. One
        committed or rolled back in the block already is left as it is."""
        if self.state != "open":
            return
        if exc is None:
            try:
                Transaction.commit(self)
            except JukeboxError as e:
                # As sqlite3's and psycopg's blocks leave nothing open: a
                # commit that failed (a write the booth refused, a
                # conflict) rolls the block's transaction back.
                if self.state == "open":
                    try:
                        Transaction.rollback(self, f"the commit at the block's end failed: {e}")
                    except JukeboxError:
                        pass  # the commit's error says what went wrong
                # It said False though the block rolled the transaction
                # back: the error's advice (stage again and commit) failed.
                e.rolled_back = self.state == "rolled_back"
                raise
        else:
            Transaction.rollback(self, f"{type(exc).__name__}: {exc}")

    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self._finish(exc)

    async def __aenter__(self) -> NoReturn:
        # `async with jb.begin()`: the transaction began already; it is
        # rolled back, not left open to the run's end, and the misuse said.
        self._refuse("`async with` takes jb.begin(async_=True); `with` takes jb.begin()")

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        pass  # never entered (__aenter__ raises)

    def _refuse(self, msg: str) -> NoReturn:
        """Rolls back a transaction held the wrong way and raises TypeError."""
        if self.state == "open":
            try:
                Transaction.rollback(self, "held the wrong way: " + msg)
            except JukeboxError:
                pass  # the TypeError says what the agent did
        raise TypeError(msg)


class AsyncTransaction(Transaction):
    """A Transaction for ``async with``: commit, rollback, stage_sql and
    run_shell are coroutines (they run in a thread); staging a file write or
    delete is quick and stays a plain call."""

    def __enter__(self) -> "Transaction":
        self._refuse("an AsyncTransaction is used with `async with` (jb.begin(async_=True)); "
                     "`with` takes jb.begin()")

    async def __aenter__(self) -> "AsyncTransaction":  # type: ignore[override]
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await _in_thread(lambda: self._finish(exc))

    async def commit(self) -> int:  # type: ignore[override]
        return await _in_thread(super().commit)

    async def rollback(self, reason: str = "") -> None:  # type: ignore[override]
        await _in_thread(lambda: Transaction.rollback(self, reason))

    async def stage_sql(self, dsn_or_path: str, sql: str, params: Params = ()) -> List[Tuple[Any, ...]]:  # type: ignore[override]
        return await _in_thread(
            lambda: Transaction.stage_sql(self, dsn_or_path, sql, params))

    async def run_shell(self, command: str) -> ShellResult:  # type: ignore[override]
        return await _in_thread(lambda: Transaction.run_shell(self, command))


def _in_thread(fn: Callable[[], _T]) -> Awaitable[_T]:
    """fn run in the running event loop's default executor. asyncio is
    imported here, not with the SDK: an async agent's loop imported it
    already, and a sync agent does not pay for it at every start."""
    import asyncio
    return asyncio.get_running_loop().run_in_executor(None, fn)


def _json_op(op: Dict[str, Any]) -> Dict[str, Any]:
    """A staged operation as a JSON batch carries it: a write's content in
    its body (text, or base64 for bytes)."""
    content = op.get("content")
    if content is None:
        return op
    body = dict(op["body"])
    body["content"] = base64.b64encode(content).decode() if body.get("base64") else content.decode("utf-8")
    return {"op": op["op"], "body": body, "base": op["base"]}
