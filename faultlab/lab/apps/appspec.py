# An --app spec's module and factory, and the refusal of a spec that names
# another framework's app: the framework is told from the objects (a graph,
# an agent: the package their class comes from) and from the module's
# contract (pydantic-ai's load_history/save_history, the Agents SDK's
# make_session, ADK's make_session_service), never from names the user
# chose.  Framework-neutral: every app child imports it, none of the
# frameworks is imported here.  A refusal is an `AppSpecError`, which each
# child prints as one line and exits 2 on (the lab refuses the run):
# `run_child` is every child's way to end.
from __future__ import annotations

import importlib
import inspect
import sys
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = [
    "AppSpecError", "framework_of", "import_app", "module_frameworks", "refuse_other_framework",
    "run_child",
]  # fmt: skip

# The package an object's class comes from -> (its framework, what it is).
_PACKAGES = (
    ("langgraph.", "langgraph", "a LangGraph graph"),
    ("pydantic_ai.", "pydantic-ai", "a pydantic-ai app"),
    ("agents.", "openai-agents", "an OpenAI Agents SDK app"),
    ("google.adk.", "google-adk", "a Google ADK app"),
)
_WHAT = {framework: what for _prefix, framework, what in _PACKAGES}
# What each framework's app module must define beside its factory.
_CONTRACTS = (
    (("load_history", "save_history"), "pydantic-ai"),
    (("make_session_service",), "google-adk"),
    (("make_session",), "openai-agents"),
)


class AppSpecError(Exception):
    """The --app spec names no usable app of its framework (exit 2)."""


def run_child(framework: str, app: str, drive: Callable[[], int]) -> int:
    """An app child's exit status from its `drive`: a bad spec is one line
    naming it and exit 2 (the lab refuses the run); whatever the app raised
    is its traceback, then one line that names it, and exit 1."""
    try:
        return drive()
    except AppSpecError as error:
        print(f"faultlab: --app {framework}:{app}: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        traceback.print_exc()
        notes = " ".join(str(note) for note in getattr(error, "__notes__", ()))
        print(f"faultlab: the app raised {type(error).__name__}: {error}"
              + (f" ({notes})" if notes else ""), file=sys.stderr)  # fmt: skip
        return 1


def framework_of(value: Any) -> str | None:
    """The framework `value` belongs to, by the package it comes from (a
    class's or a function's own module, an instance's class's); None for
    anything else."""
    if isinstance(value, type) or inspect.isfunction(value) or inspect.isbuiltin(value):
        module = getattr(value, "__module__", None) or ""
    else:
        module = getattr(type(value), "__module__", None) or ""
    return next((f for prefix, f, _what in _PACKAGES if f"{module}.".startswith(prefix)), None)


def module_frameworks(module: ModuleType) -> set[str]:
    """The frameworks `module` is an app of: the contract its functions
    make (pydantic-ai's store, the Agents SDK's session, ADK's session
    service), and the packages of the graphs, agents, classes and
    functions it holds (a LangGraph module holds StateGraph, a pydantic-ai
    module an Agent)."""
    names = {k: v for k, v in vars(module).items() if not k.startswith("__")}
    found = {framework for needed, framework in _CONTRACTS
             if all(callable(names.get(n)) for n in needed)}  # fmt: skip
    found |= {f for v in names.values() if not isinstance(v, ModuleType)
              and (f := framework_of(v)) is not None}  # fmt: skip
    return found


def _use(framework: str, what: str) -> str:
    return f"this module defines {what}; use {framework}:MODULE:FACTORY"


def import_app(spec: str, framework: str, *,
               takes: str = "model, tools") -> tuple[ModuleType, Callable[..., Any]]:  # fmt: skip
    """The module and factory of MODULE:FACTORY for a `framework` app;
    refused (AppSpecError) when the module is missing or fails to import,
    defines another framework's app, or has no such factory."""
    module_name, _, name = spec.rpartition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and module_name.startswith(error.name):
            raise AppSpecError(f"no module named {module_name} (faultlab imports it with the "
                               "working directory on PYTHONPATH)") from None  # fmt: skip
        raise AppSpecError(f"importing {module_name} failed: {error}") from None
    except Exception as error:
        raise AppSpecError(f"importing {module_name} raised {type(error).__name__}: "
                           f"{error}") from None  # fmt: skip
    found = module_frameworks(module)
    if framework not in found and len(found) == 1:
        other = found.pop()
        raise AppSpecError(f"{module_name}: {_use(other, _WHAT[other])}")
    factory = getattr(module, name, None)
    if not callable(factory):
        raise AppSpecError(f"{module_name} defines no factory {name}(*, {takes})")
    return module, factory


def refuse_other_framework(built: Any, name: str, framework: str) -> None:
    """Refuse what the factory `name` built when it is another framework's
    app (the mistake a spec with the wrong prefix makes)."""
    other = framework_of(built)
    if other is not None and other != framework:
        raise AppSpecError(f"{name} returned {type(built).__name__}: "
                           f"{_use(other, _WHAT[other])}")  # fmt: skip
