# What one line of a version-1 session log is, judged on its own: a valid
# event object, a valid session header, or a description of what is wrong with
# it.  Shared by the JSONL reader's reference loop (jsonl.py), its bulk fast
# path (fastpath.py) and the SQLite reader (sqlite.py, which checks each row's
# event the same way), so every reader of the lab draws the line between a
# good and a bad event in one place.  Each check decodes with the `loads` it
# is given (`Loads`: orjson's by default).
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeGuard

from faultlab.lab.read.view import EVENT_TYPES

__all__ = [
    "Loads",
    "decode_event",
    "header_problem",
    "is_event",
    "what_is_wrong",
]

_FORMAT = 1

Loads = Callable[[bytes], Any]
# What a `loads` may raise on a bad line: orjson.JSONDecodeError and
# json.JSONDecodeError are ValueErrors (as is a UnicodeDecodeError); the
# standard library's decoder raises RecursionError on very deep nesting.
_DECODE_ERRORS = (ValueError, RecursionError)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_event(obj: object) -> TypeGuard[dict[str, Any]]:
    """Whether a decoded line is a valid event object.  orjson and json build
    exact dict/int/float/str objects, and `type(x) is int` also rules out
    booleans; anything else (a subclass too) is left to `what_is_wrong`."""
    if type(obj) is not dict:
        return False
    kind = obj.get("type")
    moment = type(obj.get("time"))
    seq = obj.get("seq")
    return (
        type(seq) is int
        and seq >= 0
        and type(kind) is str
        and kind in EVENT_TYPES
        and (moment is float or moment is int)
        and type(obj.get("data")) is dict
    )


def decode_event(raw: bytes, loads: Loads) -> dict[str, Any] | str:
    """The event object of one line, or a description of what is wrong with it."""
    try:
        obj = loads(raw)
    except _DECODE_ERRORS as exc:
        return f"line is not JSON ({exc})"
    if is_event(obj):
        return obj
    return what_is_wrong(obj)


def what_is_wrong(obj: object) -> str:
    if not isinstance(obj, dict):
        return f"line is a JSON {type(obj).__name__}, not an object"
    if not _is_int(obj.get("seq")):
        return f"field 'seq' is missing or not an integer ({_show(obj.get('seq'))})"
    if obj["seq"] < 0:  # not a duplicate of anything: seqs count from 0
        return f"field 'seq' is negative ({_show(obj['seq'])}); seqs count from 0"
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in EVENT_TYPES:
        return f"field 'type' is not one of the ten event types ({_show(kind)})"
    if not _is_number(obj.get("time")):
        return f"field 'time' is missing or not a number ({_show(obj.get('time'))})"
    return f"field 'data' is missing or not an object ({_show(obj.get('data'))})"


def _show(value: object) -> str:
    text = "missing" if value is None else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def header_problem(raw: bytes, loads: Loads) -> dict[str, Any] | str:
    try:
        obj = loads(raw)
    except _DECODE_ERRORS as exc:
        return f"header is not JSON ({exc})"
    if not isinstance(obj, dict) or obj.get("type") != "session":
        return "first line is not a session header"
    fmt = obj.get("format")
    if not (_is_int(fmt) and fmt == _FORMAT):
        return f"header field 'format' is {_show(fmt)}; this reader knows {_FORMAT}"
    if not isinstance(obj.get("id"), str):
        return "header field 'id' is missing or not a string"
    return obj
