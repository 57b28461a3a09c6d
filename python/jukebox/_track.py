"""Tracks: `@jb.track` (bare or with a name) on sync, async and generator
functions, and `with jb.track("name"):`. One call is one track; tracks
that run inside one another nest (the inner one's path names the outer),
tracks that run at once share the run and tell their turns apart by their
paths, held in a context variable (so asyncio tasks and threads each have
their own)."""

import contextlib
import contextvars
import functools
import inspect
from types import TracebackType
from typing import (TYPE_CHECKING, Any, AsyncGenerator, Callable, Generator, Iterator, List, Optional,
                    Type, TypeVar, cast)

if TYPE_CHECKING:
    from ._core import Jukebox

F = TypeVar("F", bound=Callable[..., Any])


class _Call:
    """One call of a track: begun once, ended once."""

    def __init__(self, jb: "Jukebox", name: str) -> None:
        self._jb, self._name = jb, name
        self.path = ""
        self._marked = False
        self._ended = True
        #: The context variable's token, for the context manager's exit.
        self.token: "Optional[contextvars.Token[Optional[str]]]" = None

    def begin(self) -> None:
        self.path, self._marked = self._jb._begin_track(self._name)
        self._ended = False

    def end(self, exc: Optional[BaseException]) -> None:
        if not self._ended:
            self._ended = True
            self._jb._end_track(self.path, self._marked, exc)

    @contextlib.contextmanager
    def current(self) -> Iterator[None]:
        """This track is the current one (turns name it) inside."""
        token = self._jb._current.set(self.path)
        try:
            yield
        finally:
            self._jb._current.reset(token)

    @contextlib.contextmanager
    def tracked(self) -> Iterator[None]:
        """Begins, is current inside, and ends with the exception (raised
        again) or without."""
        self.begin()
        try:
            with self.current():
                yield
        except BaseException as e:
            self.end(e)
            raise
        self.end(None)


class Track:
    """What ``jb.track(name)`` returns: a decorator (sync, async, generator
    and async generator functions) and a context manager (``with`` and
    ``async with``), each call or block a track named name."""

    def __init__(self, jb: "Jukebox", name: Optional[str]) -> None:
        self._jb, self.name = jb, name
        self._open: List[_Call] = []

    def __call__(self, fn: F) -> F:
        if not callable(fn):
            raise TypeError(f"track: want a function to decorate, got {type(fn).__name__}")
        name = self.name or getattr(fn, "__name__", "") or "track"
        jb = self._jb
        if inspect.isasyncgenfunction(fn):
            wrapper: Callable[..., Any] = _async_gen(jb, name, fn)
        elif inspect.isgeneratorfunction(fn):
            wrapper = _gen(jb, name, fn)
        elif inspect.iscoroutinefunction(fn):
            async def async_run(*args: Any, **kwargs: Any) -> Any:
                with _Call(jb, name).tracked():
                    return await fn(*args, **kwargs)
            wrapper = async_run
        else:
            def run(*args: Any, **kwargs: Any) -> Any:
                with _Call(jb, name).tracked():
                    return fn(*args, **kwargs)
            wrapper = run
        return cast(F, functools.wraps(fn)(wrapper))

    def __enter__(self) -> "Track":
        if not self.name:
            raise TypeError("with jb.track(...): name the track (jb.track(\"name\"))")
        call = _Call(self._jb, self.name)
        call.begin()
        call.token = self._jb._current.set(call.path)
        self._open.append(call)
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        call = self._open.pop()
        if call.token is not None:
            self._jb._current.reset(call.token)
        call.end(exc)

    async def __aenter__(self) -> "Track":
        return self.__enter__()

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        self.__exit__(exc_type, exc, tb)


def _gen(jb: "Jukebox", name: str, fn: Callable[..., Generator[Any, Any, Any]]) -> Callable[..., Any]:
    """A generator function's track: from the first item asked for to the
    last; the track is current only while the generator runs."""

    def run(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        call = _Call(jb, name)
        call.begin()
        try:
            with call.current():
                gen = fn(*args, **kwargs)
            step: Callable[[Any], Any] = gen.send
            arg: Any = None
            while True:
                try:
                    with call.current():
                        item = step(arg)
                except StopIteration as stop:
                    call.end(None)
                    return stop.value
                try:
                    arg, step = (yield item), gen.send
                except GeneratorExit:
                    with call.current():
                        gen.close()
                    call.end(None)
                    raise
                except BaseException as e:
                    arg, step = e, gen.throw
        except BaseException as e:
            call.end(e)
            raise
    return run


def _async_gen(jb: "Jukebox", name: str, fn: Callable[..., AsyncGenerator[Any, Any]]) -> Callable[..., Any]:
    """An async generator function's track, as _gen's."""

    async def run(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        call = _Call(jb, name)
        call.begin()
        try:
            with call.current():
                agen = fn(*args, **kwargs)
            step: Callable[[Any], Any] = agen.asend
            arg: Any = None
            while True:
                try:
                    with call.current():
                        item = await step(arg)
                except StopAsyncIteration:
                    call.end(None)
                    return
                try:
                    arg, step = (yield item), agen.asend
                except GeneratorExit:
                    with call.current():
                        await agen.aclose()
                    call.end(None)
                    raise
                except BaseException as e:
                    arg, step = e, agen.athrow
        except BaseException as e:
            call.end(e)
            raise
    return run
