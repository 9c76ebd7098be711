"""Shared patch helpers of the broken runtime variants.

Every variant is a script run exactly like ``python -m faultlab.runtime``: it
imports this module (which makes the repository importable from any cwd),
patches the reference runtime in-process, then calls :func:`run`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from faultlab.runtime import app, checkpoints  # noqa: E402
from faultlab.runtime.events import Event  # noqa: E402
from faultlab.runtime.host import Disposer, Host, Plugin  # noqa: E402
from faultlab.runtime.persistence import PersistenceCoordinator  # noqa: E402
from faultlab.runtime.repair import RepairAction, SafetyLookup  # noqa: E402

# hook -> edit: given the reference registration, return its replacement or
# None to drop it.
Edit = Callable[[Any], Any | None]
Planner = Callable[[Sequence[Event], SafetyLookup], list[RepairAction]]


class _EditedHost:
    """A view of a host through which a policy registers edited middleware."""

    def __init__(self, host: Host, edits: dict[str, Edit]) -> None:
        self._host = host
        self._edits = edits

    def _register(self, register: Callable[[str, Any], Disposer], hook: str, fn: Any) -> Disposer:
        edit = self._edits.get(hook)
        replacement = fn if edit is None else edit(fn)
        if replacement is None:
            return lambda: None
        return register(hook, replacement)

    def use(self, hook: str, middleware: Any) -> Disposer:
        return self._register(self._host.use, hook, middleware)

    def on(self, hook: str, listener: Any) -> Disposer:
        return self._register(self._host.on, hook, listener)


def edit_semantic_policy(edits: Callable[[PersistenceCoordinator], dict[str, Edit]]) -> None:
    """Replace the `semantic` policy by the reference one with `edits` applied."""
    reference = checkpoints.POLICIES["semantic"]

    def broken(coordinator: PersistenceCoordinator) -> Plugin:
        install = reference(coordinator)
        hook_edits = edits(coordinator)

        def edited(host: Host) -> Disposer:
            return install(_EditedHost(host, hook_edits))  # type: ignore[arg-type]

        return edited

    checkpoints.POLICIES["semantic"] = broken


def wrap_plan_repair(wrapper: Callable[[Planner, Sequence[Event], SafetyLookup], Any]) -> None:
    """Make the runner repair with `wrapper(reference_plan_repair, events, safety)`."""
    reference: Planner = app.plan_repair

    def planned(events: Sequence[Event], safe_to_retry: SafetyLookup) -> list[RepairAction]:
        return list(wrapper(reference, events, safe_to_retry))

    app.plan_repair = planned  # type: ignore[assignment]


def run() -> NoReturn:
    """Run the (patched) runtime with this process's arguments and exit with its code."""
    from faultlab.runtime.__main__ import main

    sys.exit(main())


def run_httpagent() -> NoReturn:
    """Run the (patched) black-box agent (`python -m faultlab.runtime.httpagent`)."""
    from faultlab.runtime.httpagent.__main__ import main

    sys.exit(main())


def run_acp() -> NoReturn:
    """Serve the (patched) runtime as an ACP agent (`python -m faultlab.runtime.acp`)."""
    from faultlab.runtime.acp.__main__ import main

    sys.exit(main())
