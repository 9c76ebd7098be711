# Framework app runs (`--app langgraph:MODULE:FACTORY`, `pydantic-ai:`,
# `openai-agents:`, `google-adk:`): the user's graph or agent runs in a child
# process (faultlab/lab/apps/lgchild.py, pachild.py, oachild.py, adkchild.py) with faultlab's
# scripted model, the scenario's tools and a reporting proxy around its
# checkpointer or history store; every boundary the child reports goes
# through the gate.  Owned here: the options, one case's rig of children
# (`AppRig`), the fault-free run and the kill points a fault is planned at;
# the drive's faults and how each runs a case are the table in apps/faults.py.
from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from faultlab.lab.apps.fork import app_server, fork_app
from faultlab.lab.apps.lgstate import PersistedThread, read_thread
from faultlab.lab.apps.storeread import (
    READ_BY_APP,
    STORE_SUFFIXES,
    read_adk_database,
    read_by_app,
)
from faultlab.lab.errors import LabUsageError
from faultlab.lab.oracle.case import Case
from faultlab.lab.process.reference import Reference, read_ledger, slug
from faultlab.lab.process.tree import ContainedProcess
from faultlab.lab.read.view import LogView
from faultlab.lab.servers.points import KillPoint
from faultlab.lab.servers.records import as_trace
from faultlab.lab.servers.rig import POLL, ServerRig
from faultlab.scenario import Scenario
from faultlab.userfiles import copy_target

__all__ = [
    "DURABILITIES",
    "FRAMEWORKS",
    "MODES",
    "RESUME_STYLES",
    "SAVE_POLICIES",
    "SPAWNS",
    "STORE_WRITES",
    "WRITES",
    "AppOptions",
    "AppRig",
    "parse_app",
    "plan_app_points",
    "run_app_reference",
    "style_refusal",
]

DURABILITIES = ("exit", "async", "sync")
# A pydantic-ai app's store saves after every node that changed the
# messages, or once after the run.
SAVE_POLICIES = ("node", "run")
# The child module of each framework; every one exposes `main(argv)` and
# `preload(app)` (a fork server preloads once, then runs main per child).
_CHILD_MODULES = {"langgraph": "faultlab.lab.apps.lgchild",
                  "pydantic-ai": "faultlab.lab.apps.pachild",
                  "openai-agents": "faultlab.lab.apps.oachild",
                  "google-adk": "faultlab.lab.apps.adkchild"}  # fmt: skip
FRAMEWORKS = tuple(_CHILD_MODULES)
# Each framework's comparison dimension (the child's `--durability` slot):
# its name in `--compare NAME=...`, its values, the default.
MODES = {"langgraph": ("durability", DURABILITIES, "async"),
         "pydantic-ai": ("save", SAVE_POLICIES, "node"),
         "openai-agents": ("runner", ("run",), "run"),
         "google-adk": ("runner", ("run",), "run")}  # fmt: skip
_STORES = {"langgraph": "checkpoints.sqlite", "pydantic-ai": "history.json",
           "openai-agents": "session.sqlite", "google-adk": "sessions.sqlite"}  # fmt: skip
# resume: the framework's own (invoke(None); agent.run(None, history));
# resend: the user sends their last message again; hook: the app's
# `before_resume` (its installed repair), then the framework's resume;
# repair (pydantic-ai): the framework's own `repair_messages`, then the
# message again, as pydantic-ai tells an app to; invocation (ADK): a
# resumable App's crashed invocation resumed by its id, no new message.
RESUME_STYLES = ("resume", "resend", "hook", "repair", "invocation")
_STYLES = {"langgraph": ("resume", "resend", "hook"),
           "pydantic-ai": ("resume", "resend", "hook", "repair"),
           "openai-agents": ("resume", "resend", "hook"),
           # ADK goes back into a session by running it again on its id
           # with the user's message: resend is its resume; a resumable App
           # also resumes an invocation by its id.
           "google-adk": ("resend", "hook", "invocation")}  # fmt: skip
# The boundaries of a store's writes (checkpoints, pending writes, a saved history).
WRITES = ("checkpoint/put", "checkpoint/writes", "history/save")
# The write every run of a framework's app must reach (its coverage case).
STORE_WRITES = {"langgraph": "checkpoint/put", "pydantic-ai": "history/save",
                "google-adk": "history/save"}  # fmt: skip
SPAWNS = ("fork", "exec")
# Frameworks whose fork server preloads the framework alone (and warms it
# up), shared by every app of the framework: the app's module, imported by
# each child, costs milliseconds once the framework is loaded, and a server
# start costs seconds (ADK: its import and first run, about 3 s here).
_SERVER_PER_FRAMEWORK = ("google-adk",)
_THREAD = "faultlab-case"
ADK_USER = "faultlab-user"  # the user an ADK app's session belongs to (adkchild.USER_ID)


def parse_app(spec: str) -> tuple[str, str]:
    """`langgraph:MODULE:FACTORY` (or `pydantic-ai:...`) -> (framework,
    MODULE:FACTORY)."""
    framework, _, target = spec.partition(":")
    module, _, factory = target.rpartition(":")
    if framework not in _CHILD_MODULES:
        raise LabUsageError(f"--app {spec}: the supported frameworks are langgraph "
                            "(langgraph:MODULE:FACTORY), pydantic-ai "
                            "(pydantic-ai:MODULE:FACTORY), openai-agents "
                            "(openai-agents:MODULE:FACTORY) and google-adk "
                            "(google-adk:MODULE:FACTORY)")  # fmt: skip
    if not module or not factory.isidentifier():
        raise LabUsageError(f"--app {spec}: expected {framework}:MODULE:FACTORY")
    return framework, target


@dataclass(frozen=True, slots=True)
class AppOptions:
    """How app cases run: the app, its mode (LangGraph's durability, a
    pydantic-ai store's save policy; empty: the framework's default), the
    resume styles planned, the work dir, the per-process budget and how a
    child starts."""

    app: str
    workdir: Path
    durability: str = ""
    styles: tuple[str, ...] = RESUME_STYLES
    timeout: float = 60.0
    # fork: the children come from a fork server that imported the framework
    # and the app once (faultlab/lab/apps/forkserver.py); exec: a fresh
    # interpreter per child under its supervisor (the fidelity reference).
    spawn: str = "fork"

    @property
    def framework(self) -> str:
        return parse_app(self.app)[0]

    @property
    def target(self) -> str:
        """MODULE:FACTORY, as the child takes it."""
        return parse_app(self.app)[1]

    def __post_init__(self) -> None:
        name, modes, default = MODES[self.framework]
        if not self.durability:
            object.__setattr__(self, "durability", default)
        if self.durability not in modes:
            raise LabUsageError(f"{name} {self.durability!r}: one of {', '.join(modes)}")
        if self.spawn not in SPAWNS:
            raise LabUsageError(f"spawn {self.spawn!r}: one of {', '.join(SPAWNS)}")
        for style in self.styles:
            if style not in RESUME_STYLES:
                raise LabUsageError(f"resume style {style!r}: one of {', '.join(RESUME_STYLES)}")


@dataclass(frozen=True, slots=True)
class _Run:
    """One started child of a case: its process, its name in the case's
    directory, its number, and when it has run out of time."""

    process: ContainedProcess
    name: str
    number: int
    deadline: float


class AppRig(ServerRig):
    """One case's rig (the gate, the ledger, the records) with the app: its
    store and its child runs."""

    def __init__(self, scenario_path: str, options: AppOptions, where: Path,
                 armed: KillPoint | None) -> None:  # fmt: skip
        super().__init__(where, armed, timeout=options.timeout)
        self.options, self.scenario_path = options, scenario_path
        self.framework = options.framework
        self.db = where / _STORES[self.framework]
        self.runs = 0

    def run(self, action: str, *, turn: int = 0, fail: str | None = None,
            armed: bool = False) -> tuple[int | None, bool, str | None]:  # fmt: skip
        """One child to its exit, or to the kill when `armed` fires: (status,
        killed, hung message)."""
        return self.finish(self.start(action, turn=turn, fail=fail), armed=armed)

    def start(self, action: str, *, turn: int = 0, fail: str | None = None,
              extra: Sequence[str] = ()) -> _Run:  # fmt: skip
        """Start one child of the case (`extra`: more of its arguments; a
        repeated option's last value wins)."""
        self.runs += 1
        name = f"run{self.runs}-{action}"
        argv = [sys.executable, "-m", _CHILD_MODULES[self.framework], self.scenario_path,
                "--app", self.options.target, "--db", str(self.db),
                "--ledger", str(self.ledger), "--gate", str(self.bridge.path),
                "--durability", self.options.durability, "--action", action,
                "--from-turn", str(turn), *(["--fail", fail] if fail else []), *extra]  # fmt: skip
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (os.getcwd(), env.get("PYTHONPATH")) if p)
        self.gate.note("app/start", run=self.runs, action=action)
        stdout, stderr = self.outputs(name)
        process: ContainedProcess
        if self.options.spawn == "fork":
            # argv is [python, -m, CHILD_MODULE, *arguments]: the server
            # preloads the child module and the app once, forks one per run.
            preloaded = "" if self.framework in _SERVER_PER_FRAMEWORK else self.options.target
            server = app_server(argv[2], preloaded, cwd=os.getcwd(), env=env)
            process = fork_app(server, argv[3:], cwd=Path.cwd(), env=env,
                               stdout_path=stdout, stderr_path=stderr)  # fmt: skip
        else:
            process = ContainedProcess.start(argv, cwd=Path.cwd(), env=env, stdin_path=None,
                                             stdout_path=stdout, stderr_path=stderr)  # fmt: skip
        return _Run(process, name, self.runs, time.monotonic() + self.options.timeout)

    def held(self, run: _Run) -> bool:
        """Wait until `run` is held at the armed point (True) or has exited
        or run out of time (False; `finish` then says which)."""
        while not self.gate.fired.is_set():
            if run.process.wait(POLL) is not None or time.monotonic() > run.deadline:
                return False
        return True

    def finish(self, run: _Run, *, armed: bool = False) -> tuple[int | None, bool, str | None]:
        """`run` to its exit, or to the kill when `armed` fires: (status,
        killed, hung message)."""
        process, name = run.process, run.name
        killed, hung, status = False, None, None
        try:
            ending, status = self.watch(process, run.deadline, armed=armed)
            if ending == "fired":
                process.kill_tree()
                self.gate.release()
                killed, status = True, process.wait(self.options.timeout)
            elif ending == "late":
                hung = f"{name} did not finish in {self.options.timeout:g} s"
        finally:
            process.close()
            self.gate.note("app/exit", run=run.number, status=status, killed=killed)
        return status, killed, hung

    def persisted(self, name: str) -> PersistedThread:
        """The thread now, read with the framework's serializer; the raw
        store and the reading are kept beside the records."""
        for suffix in STORE_SUFFIXES:  # bounded, never through a link
            source = self.db.with_name(self.db.name + suffix)
            copy_target(source, self.where / f"{name}{self.db.suffix}{suffix}",
                        what="app store")  # fmt: skip
        adk = None
        if self.framework == "google-adk":  # ADK's database service's tables, read here
            adk = read_adk_database(self, name, user_id=ADK_USER, session_id=_THREAD)
        if adk is not None:
            thread = adk
        elif self.framework in READ_BY_APP:  # the app's own loader, in a child
            thread = read_by_app(self, name)
        else:
            # The state key the app keeps its conversation in, as its child said.
            keys = [r.get("messagesKey") for r in self.gate.snapshot()
                    if r.get("fact") == "app/state"]  # fmt: skip
            key = keys[-1] if keys and isinstance(keys[-1], str) else "messages"
            thread = read_thread(self.db, _THREAD, messages_key=key)
        self.write_json(f"{name}.thread.json", thread.to_json())
        return thread


def run_app_reference(scenario_path: str, scenario: Scenario, options: AppOptions) -> Reference:
    """The fault-free run: its boundaries are the kill points of the cases."""
    where = options.workdir / f"app-reference-{options.durability}" / slug(Path(scenario_path).name)
    rig = AppRig(scenario_path, options, where, None)
    try:
        status, _, hung = rig.run("run")
    finally:
        rig.close()
    records = rig.gate.snapshot()
    # A child that could not use the --app spec says so in one line and
    # exits 2: the run is refused as a usage error, before any case.
    said = rig.tail("run1-run.stderr", 3000).strip().splitlines()[-1:]
    if status == 2 and said and said[0].startswith("faultlab: --app "):
        raise LabUsageError(said[0].removeprefix("faultlab: "))
    return Reference(
        scenario=scenario, scenario_path=scenario_path, trace=as_trace(records),
        log=LogView(str(where), False, None, (), 0, 0, 0, ()), ledger=read_ledger(rig.ledger),
        returncode=-9 if hung else status or 0, log_bytes=b"",
        stderr=(hung or "") + rig.tail("run1-run.stderr", 3000), hung=hung is not None,
        ground_truth="servers",
    )  # fmt: skip


def style_refusal(reference: Reference, options: AppOptions, style: str) -> str | None:
    """Why the app's cases cannot run in resume `style` (None: they can):
    a style its framework does not offer, `hook` without the module's
    `before_resume`, `invocation` without a resumable ADK `App` (as the
    fault-free run's child noted)."""
    if style not in _STYLES[options.framework]:
        return (f"resume style {style!r}: {options.framework} apps offer "
                f"{', '.join(_STYLES[options.framework])}")  # fmt: skip
    facts = {r.get("fact") for r in reference.trace}
    if style == "hook" and "app/hook" not in facts:
        return f"resume style 'hook': {options.target}'s module defines no before_resume"
    if style == "invocation" and "app/resumable" not in facts:
        return (f"resume style 'invocation': {options.target} is not resumable (ADK resumes an "
                "invocation by its id only in an App built with "
                "resumability_config=ResumabilityConfig(is_resumable=True))")  # fmt: skip
    return None


def plan_app_points(
    reference: Reference, options: AppOptions, fault: str, *,
    where: tuple[str, ...] | None = None, styles: tuple[str, ...] | None = None,
) -> list[Case]:  # fmt: skip
    """The cases of `fault` (its name): every boundary occurrence of the
    fault-free run (of a boundary in `where`, when given) with every resume
    style the framework offers and `options` plans (`style_refusal`: `hook`
    only where the app has a `before_resume`, `invocation` only where it is
    resumable), or with `styles` alone when given."""
    if styles is None:
        styles = tuple(s for s in options.styles if style_refusal(reference, options, s) is None)
    cases = []
    for occurrence in dict.fromkeys(reference.occurrences):
        if occurrence.startswith("invoke/end") and occurrence != reference.occurrences[-1]:
            continue  # the next turn's first boundary is the same point
        if where is not None and occurrence.partition("#")[0] not in where:
            continue
        cases += [Case(reference.scenario_path, occurrence, f"{fault}/{style}/{options.durability}")
                  for style in styles]  # fmt: skip
    return cases
