"""Tapes: read, fork and diff them through the jukebox binary."""

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Union

if TYPE_CHECKING:
    import subprocess

from ._control import jukebox_bin, tripped
from .errors import Divergence, JukeboxError

EXIT_DIVERGED = 5
EXIT_TRIPPED = 7


@dataclass(frozen=True)
class Frame:
    """One frame of a tape, as `jukebox show --json` prints it."""

    seq: int
    kind: str
    time: float
    payload: Dict[str, Any] = field(default_factory=dict)


def _run(args: Sequence[str]) -> "subprocess.CompletedProcess[str]":
    import subprocess
    return subprocess.run([jukebox_bin(), *args], stdin=subprocess.DEVNULL, capture_output=True, text=True)


def _failed(args: Sequence[str], proc: "subprocess.CompletedProcess[str]") -> JukeboxError:
    msg = proc.stderr.strip() or f"exit {proc.returncode}"
    return JukeboxError(f"jukebox {args[0]}: {msg}")


class Tape:
    """A tape (.jbx) on disk."""

    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        self._frames: Optional[List[Frame]] = None

    @classmethod
    def load(cls, path: "Union[str, os.PathLike[str]]") -> "Tape":
        """Opens a tape; a missing, damaged or foreign file raises
        JukeboxError naming it; a path that is not a str or os.PathLike is
        a TypeError."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"Tape.load({path!r}): want the tape's path as a str or os.PathLike")
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise JukeboxError(f"no tape at {path}")
        tape = cls(path)
        tape._read()
        return tape

    def _read(self) -> List[Frame]:
        if self._frames is None:
            args = ["show", "--json", self.path]
            proc = _run(args)
            if proc.returncode != 0:
                raise _failed(args, proc)
            frames = []
            for line in proc.stdout.splitlines():
                if line.strip():
                    d = json.loads(line)
                    frames.append(Frame(d["seq"], d["kind"], d.get("time", 0.0), d.get("payload") or {}))
            self._frames = frames
        return self._frames

    @property
    def frames(self) -> List[Frame]:
        """Every frame, in order."""
        return list(self._read())

    def __len__(self) -> int:
        return len(self._read())

    @property
    def exit_code(self) -> Optional[int]:
        """The agent's exit code, from run.end (None for a tape without one:
        a run cut short)."""
        for f in reversed(self._read()):
            if f.kind == "run.end":
                return f.payload.get("exit_code", 0)
        return None

    @property
    def name(self) -> str:
        """The run's name, from run.start."""
        for f in self._read():
            if f.kind == "run.start":
                return f.payload.get("name", "")
        return ""

    def fork(self, frame: int, model: Optional[str] = None, system_prompt: Optional[str] = None,
             temperature: Optional[float] = None, output: Optional[str] = None, booth: bool = True,
             command: Optional[Sequence[str]] = None, upstreams: Optional[Dict[str, str]] = None,
             extra_args: Sequence[str] = ()) -> "Tape":
        """Drops the needle on frame: the first model call at or after it
        gets the new model (system prompt, temperature) and goes live, with
        the rest of the run; earlier calls come from this tape. The agent
        runs again (its recorded command, or command) in the Shadow Booth
        unless booth is False, in the environment of this process; its live
        calls go to upstreams ({"openai": URL}), else where that environment
        points (OPENAI_BASE_URL, ...), else the public APIs. Returns
        the fork's tape when the agent ended with exit 0. Raises Divergence
        when the agent asked for something the tape does not hold before
        the fork, BreakerTripped when the breaker stopped it, JukeboxError
        when the fork failed or the agent ended otherwise (the message
        says how, with the end of its stderr, and names the fork's tape)."""
        args = ["fork", self.path, "--frame", str(frame), "--json"]
        if model:
            args += ["--model", model]
        if temperature is not None:
            args += ["--temperature", str(temperature)]
        if output:
            args += ["-o", output]
        if not booth:
            args.append("--no-booth")
        for provider, url in (upstreams or {}).items():
            args += ["--upstream", f"{provider}={url}"]
        prompt_file = None
        try:
            if system_prompt is not None:
                import tempfile
                fd, prompt_file = tempfile.mkstemp(prefix="jukebox-prompt-", suffix=".txt")
                with os.fdopen(fd, "w") as f:
                    f.write(system_prompt + "\n")  # fork leaves a file's final newline out
                args += ["--system-prompt-file", prompt_file]
            args += list(extra_args)
            if command:
                args += ["--", *command]
            proc = _run(args)
        finally:
            if prompt_file:
                os.unlink(prompt_file)
        result: Dict[str, Any] = {}
        try:
            rows = json.loads(proc.stdout) if proc.stdout.strip() else []
            result = rows[0] if isinstance(rows, list) and rows else (rows if isinstance(rows, dict) else {})
        except ValueError:
            pass
        if proc.returncode == EXIT_DIVERGED or result.get("divergence"):
            d = result.get("divergence") or {}
            raise Divergence(proc.stderr.strip() or f"the fork diverged at frame {d.get('frame')}", d)
        if proc.returncode == EXIT_TRIPPED and result.get("breaker"):
            raise tripped(result["breaker"])
        if not result.get("tape"):
            raise _failed(args, proc)
        end = result.get("end") or {}
        if proc.returncode != 0 or end.get("exit_code", 0) != 0 or end.get("signal"):
            how = f"signal {end['signal']}" if end.get("signal") else f"exit {end.get('exit_code', proc.returncode)}"
            tail = "\n".join(proc.stderr.strip().splitlines()[-12:])
            raise JukeboxError(f"jukebox fork: the agent ended with {how} (the fork's tape: {result['tape']})"
                               + (f":\n{tail}" if tail else ""))
        return Tape.load(result["tape"])

    def diff(self, other: Union["Tape", str]) -> Dict[str, Any]:
        """The alignment of this timeline and other's (`jukebox diff
        --json`): pairs, the first divergence, totals."""
        other_path = other.path if isinstance(other, Tape) else os.path.abspath(other)
        args = ["diff", "--json", self.path, other_path]
        proc = _run(args)
        if proc.returncode != 0:
            raise _failed(args, proc)
        out: Dict[str, Any] = json.loads(proc.stdout)
        return out

    def __repr__(self) -> str:
        return f"Tape({self.path!r})"
