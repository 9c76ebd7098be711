# The one schema of a report's files as `report merge` (and `replay`) read
# them: every record of cases.jsonl, summary.json and run.json.  A report
# handed to faultlab is untrusted input (docs/security.md): it may come from
# another machine, an older faultlab, or someone who edited it.  Every field
# the merge uses is checked here, before anything is written, and a record
# that breaks the schema is one `LabUsageError` naming the report, the file,
# the line and the field (exit 2), never a traceback deep in the merge.
# Fields the schema does not name are kept as they are (a newer faultlab's);
# `artifacts.dir` must be a relative path inside the report (`failures/...`).
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import Any

from faultlab.lab.errors import LabUsageError

__all__ = [
    "RECORD_FIELDS",
    "RUN_FIELDS",
    "SUMMARY_FIELDS",
    "ShardSchemaError",
    "check_fields",
    "confined_dir",
]

Check = Callable[[Any], str | None]  # None: the value is fine; else what it must be


class ShardSchemaError(LabUsageError):
    """A report's file breaks the schema: names the report, file, line, field."""


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _string(value: Any) -> str | None:
    return None if isinstance(value, str) else f"must be a string, not {_show(value)}"


def _name(value: Any) -> str | None:
    """A short one-line string (an id, a fault, a code)."""
    if not isinstance(value, str) or not value:
        return f"must be a non-empty string, not {_show(value)}"
    if len(value) > 4096 or any(c in value for c in "\x00\n\r"):
        return "must be one line of at most 4096 characters, without NUL"
    return None


def _number(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number, not {_show(value)}"
    if not math.isfinite(value) or value < 0:
        return f"must be a finite number >= 0, not {_show(value)}"
    return None


def _whole(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return f"must be a whole number >= 0, not {_show(value)}"
    return None


def _boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else f"must be true or false, not {_show(value)}"


def _table(value: Any) -> str | None:
    return None if isinstance(value, dict) else f"must be an object, not {_show(value)}"


def _optional(check: Check) -> Check:
    def optional(value: Any) -> str | None:
        problem = check(value) if value is not None else None
        return None if problem is None else problem + " (or null)"

    return optional


def _list_of(check: Check) -> Check:
    def items(value: Any) -> str | None:
        if not isinstance(value, list):
            return f"must be a list, not {_show(value)}"
        for index, item in enumerate(value):
            problem = check(item)
            if problem is not None:
                return f"item {index} {problem}"
        return None

    return items


def _one_of(*allowed: str) -> Check:
    def one_of(value: Any) -> str | None:
        if value in allowed:
            return None
        return f"must be one of {', '.join(allowed)}, not {_show(value)}"

    return one_of


def confined_dir(value: str) -> str | None:
    """Why `value` is not a folder inside a report (None: it is): relative,
    no `..`, no empty or NUL part."""
    path = PurePosixPath(value)
    if not value or path.is_absolute() or "\x00" in value or "\\" in value:
        return f"must be a relative path inside the report, not {_show(value)}"
    if any(part in ("..", "") for part in value.split("/")) or path.parts[:1] == (".",):
        return f"must be a relative path inside the report, not {_show(value)}"
    return None


def _artifacts(value: Any) -> str | None:
    if not isinstance(value, dict):
        return f"must be an object, not {_show(value)}"
    for key, item in value.items():
        if not isinstance(item, str):
            return f"'{key}' must be a string, not {_show(item)}"
    where = value.get("dir")
    if where is not None:
        problem = confined_dir(where)
        if problem is not None:
            return f"'dir' {problem}"
    return None


def _violation(value: Any) -> str | None:
    if not isinstance(value, dict):
        return f"must be an object, not {_show(value)}"
    for key, check in (("code", _name), ("message", _string)):
        problem = check(value.get(key))
        if problem is not None:
            return f"'{key}' {problem}"
    if not isinstance(value.get("evidence", {}), dict):
        return f"'evidence' must be an object, not {_show(value.get('evidence'))}"
    return None


# field -> (required, check)
RECORD_FIELDS: Mapping[str, tuple[bool, Check]] = {
    "id": (True, _name),
    "scenario": (True, _name),
    "occurrence": (True, _name),
    "fault": (True, _name),
    "verdict": (True, _one_of("pass", "fail", "drift", "hung", "error", "unsupported")),
    "codes": (False, _list_of(_name)),
    "violations": (False, _list_of(_violation)),
    "seconds": (False, _number),
    "detail": (False, _string),
    "artifacts": (False, _artifacts),
    "replay": (False, _string),
    "run": (False, _string),
    "lookAt": (False, _list_of(_string)),
    "stream": (False, _whole),
    "example": (False, _whole),
}
SUMMARY_FIELDS: Mapping[str, tuple[bool, Check]] = {
    "runId": (True, _name),
    "kind": (False, _one_of("explore", "fuzz")),
    "shard": (False, _optional(_name)),
    "passed": (True, _boolean),
    "seconds": (False, _number),
    "complete": (False, _boolean),
    "python": (False, _optional(_string)),
    "seed": (False, _whole),
    "examples": (False, _whole),
    "streamSize": (False, _whole),
    "faults": (False, _list_of(_name)),
    "streams": (False, _list_of(_whole)),
    "findings": (False, _list_of(_table)),
    "checkDeterminism": (False, _boolean),
}
RUN_FIELDS: Mapping[str, tuple[bool, Check]] = {
    "runId": (True, _name),
    "argv": (False, _list_of(_string)),
    "target": (False, _optional(_list_of(_string))),
    "policy": (False, _optional(_name)),
    "timeout": (False, _number),
    "spawn": (False, _one_of("fork", "exec")),
    "backend": (False, _optional(_name)),
    "drive": (False, _one_of("classic", "acp", "agent", "app")),
    "driveOptions": (False, _table),
}


def check_fields(value: Any, fields: Mapping[str, tuple[bool, Check]], where: str) -> None:
    """Raise ShardSchemaError (`where: field 'x': problem`) unless `value` is
    an object whose fields hold what `fields` says."""
    if not isinstance(value, dict):
        raise ShardSchemaError(f"{where}: must be a JSON object, not {type(value).__name__}")
    for name, (required, check) in fields.items():
        if name not in value:
            if required:
                raise ShardSchemaError(f"{where}: field '{name}': missing")
            continue
        problem = check(value[name])
        if problem is not None:
            raise ShardSchemaError(f"{where}: field '{name}': {problem}")
