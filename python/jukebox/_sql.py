"""Placeholders of stage_sql: PostgreSQL's own ($1, $2, ...) and the
DB-API styles its Python drivers use (psycopg's %s and %(name)s)."""

import json
import re
from typing import Any, Dict, List, Mapping, Sequence, Tuple, Union

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
        try:
            json.dumps(v)
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
