"""Placeholders of stage_sql: PostgreSQL's own ($1, $2, ...) and the
DB-API styles its Python drivers use (psycopg's %s and %(name)s)."""

import json
import math
import re
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple, Union

Params = Union[Sequence[Any], Mapping[str, Any]]

_PYFORMAT = re.compile(r"%(%|\((\w+)\)s|s)")


def check_params(params: Any) -> None:
    """A TypeError unless params is a sequence or a mapping (not text)."""
    if isinstance(params, (str, bytes)) or not isinstance(params, (Sequence, Mapping)):
        raise TypeError(f"stage_sql(params={params!r}): want a sequence (tuple, list) or a mapping")


_NATIVE = re.compile(r"\$[0-9]")


def _json_values(values: List[Any]) -> List[Any]:
    """values, each of a type the control API carries as JSON; a
    TypeError naming stage_sql and the value otherwise (it was the json
    module's "Object of type bytes is not JSON serializable")."""
    for i, v in enumerate(values):
        if isinstance(v, float) and not math.isfinite(v):
            # JSON has no NaN or infinity (json.dumps wrote NaN, which the
            # server refused: "invalid character 'N'"): PostgreSQL's text
            # of them, which a float8 or numeric parameter reads.
            values[i] = "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
            continue
        try:
            json.dumps(v, allow_nan=False)
        except (TypeError, ValueError):
            raise TypeError(f"stage_sql: params[{i}] = {v!r}: a {type(v).__name__} does not go to PostgreSQL; "
                            "pass text, a number, a bool or None (str() of a date or a Decimal, "
                            "text or hex for bytes)") from None
    return values


def postgres(sql: str, params: Params) -> Tuple[str, List[Any]]:
    """sql and params for the server: %s and %(name)s become $1.. and the
    values a list, %% becomes %, as psycopg does. With a sequence, a
    statement that has PostgreSQL's own placeholders ($1) goes as written,
    every % in it kept (' %s' in a string stays ' %s'), as does one
    without %, and one with no params."""
    if isinstance(params, Mapping):
        return _named(sql, params)
    if not params or "%" not in sql or _NATIVE.search(sql):
        return sql, _json_values(list(params))
    count = 0

    def sub(m: "re.Match[str]") -> str:
        nonlocal count
        if m.group(1) == "%":
            return "%"
        if m.group(2) is not None:
            raise ValueError(f"stage_sql: %({m.group(2)})s needs params as a mapping, not a sequence")
        count += 1
        return f"${count}"
    out = _PYFORMAT.sub(sub, sql)
    if count and count != len(params):
        raise ValueError(f"stage_sql: {count} %s placeholders but {len(params)} params")
    return out, _json_values(list(params))


def _named(sql: str, params: Mapping[str, Any]) -> Tuple[str, List[Any]]:
    order: Dict[str, int] = {}

    def sub(m: "re.Match[str]") -> str:
        if m.group(1) == "%":
            return "%"
        name = m.group(2)
        if name is None:
            raise ValueError("stage_sql: %s needs params as a sequence, not a mapping")
        if name not in params:
            raise ValueError(f"stage_sql: %({name})s has no value in params")
        order.setdefault(name, len(order) + 1)
        return f"${order[name]}"
    out = _PYFORMAT.sub(sub, sql)
    return out, _json_values([params[name] for name in order])


def _bytea(v: str) -> bytes:
    import base64
    return base64.b64decode(v)


def _decimal(v: str) -> Any:
    import decimal
    return decimal.Decimal(v)


def _date(v: str) -> Any:
    import datetime
    return datetime.date.fromisoformat(v)


def _datetime(v: str) -> Any:
    import datetime
    return datetime.datetime.fromisoformat(v)


def _time(v: str) -> Any:
    import datetime
    return datetime.time.fromisoformat(v)


def _uuid(v: str) -> Any:
    import uuid
    return uuid.UUID(v)


# PostgreSQL types whose values the control API gives as text (a bytea as
# base64), with what reads each into the type psycopg returns.
_READERS: Dict[str, Callable[[str], Any]] = {"bytea": _bytea, "numeric": _decimal, "date": _date, "timestamp": _datetime,
            "timestamptz": _datetime, "time": _time, "uuid": _uuid, "float4": float, "float8": float}


def _read(v: Any, typ: str) -> Any:
    if v is None:
        return None
    if typ.startswith("_") and isinstance(v, list):  # an array
        return [_read(x, typ[1:]) for x in v]
    reader = _READERS.get(typ)
    if reader is None or not isinstance(v, str):
        return v
    try:
        return reader(v)
    except ValueError:  # a date's "infinity", a year before 1
        return v


def rows(answer: Dict[str, Any]) -> List[Tuple[Any, ...]]:
    """The rows of a sql answer as psycopg returns them: a bytea as bytes,
    a numeric as a Decimal, dates and times as datetime's, a uuid as a
    UUID (an interval, a date's "infinity" and other types stay text). An
    answer without types (a tape recorded before them) is as it came."""
    types = answer.get("types")
    out = []
    for r in answer.get("rows", []):
        if types and len(types) == len(r):
            r = [_read(v, t) for v, t in zip(r, types)]
        out.append(tuple(r))
    return out
