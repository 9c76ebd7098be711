# A session-log reader a user writes for their own agent (`[session] reader
# = "module:function"` in an adapter, `inspect --reader module:function`):
# `function(path: pathlib.Path)` returns the conversation the file holds, as
# a `History` (read/histories.py), an `AgentLog`, or a list of messages in
# `History.to_json()` form.  The module is looked for beside the adapter file
# first (a `module.py` there), then on the lab's import path.  It is the
# user's own code, run in the lab's process like a pytest plugin; what it
# returns is checked, and anything it raises is one line naming the reader.
from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.histories import History

__all__ = ["USER_READER", "is_user_reader", "user_history"]

_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
USER_READER = re.compile(rf"^{_IDENTIFIER}(\.{_IDENTIFIER})*:{_IDENTIFIER}$")


def is_user_reader(name: str) -> bool:
    """Whether `name` is a `module:function` reader (not a bundled one's name)."""
    return USER_READER.match(name) is not None


def _module(name: str, near: Path | None) -> Any:
    beside = near / (name.replace(".", "/") + ".py") if near is not None else None
    if beside is not None and beside.is_file():
        spec = importlib.util.spec_from_file_location(f"faultlab_user_reader_{name}", beside)
        if spec is None or spec.loader is None:
            raise LabUsageError(f"session reader {name}: cannot load {beside}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(name)


def _function(spec: str, near: Path | None) -> Callable[[Path], Any]:
    module_name, _, function = spec.partition(":")
    try:
        module = _module(module_name, near)
    except LabUsageError:
        raise
    except Exception as exc:  # the user's module: any error it raises on import
        raise LabUsageError(f"session reader {spec}: cannot import {module_name}: "
                            f"{type(exc).__name__}: {exc}") from None  # fmt: skip
    found = getattr(module, function, None)
    if not callable(found):
        raise LabUsageError(f"session reader {spec}: {module_name} has no function {function}")
    return found  # type: ignore[no-any-return]


def user_history(spec: str, path: Path, *, near: Path | None = None) -> History:
    """The history user reader `spec` reads from `path`; LabUsageError (one
    line) when it cannot be loaded, raises, or returns something else."""
    reader = _function(spec, near)
    try:
        value = reader(path)
    except Exception as exc:  # the user's code: whatever it raises is its verdict on the file
        raise LabUsageError(f"session reader {spec} on {path}: {type(exc).__name__}: "
                            f"{exc}") from None  # fmt: skip
    history = getattr(value, "history", value)  # an AgentLog carries one
    if isinstance(history, History):
        return history
    if isinstance(history, list) and all(isinstance(m, dict) for m in history):
        try:
            return History.from_json(history)
        except (KeyError, TypeError, ValueError) as exc:
            raise LabUsageError(f"session reader {spec} on {path}: a message is not in "
                                f"History.to_json() form: {exc!r}") from None  # fmt: skip
    raise LabUsageError(f"session reader {spec} on {path}: returned {type(value).__name__}, "
                        "not a History, an AgentLog or a list of messages")  # fmt: skip
