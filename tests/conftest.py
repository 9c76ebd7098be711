# Shared test helpers: build scenarios from TOML snippets and assemble the
# reference runtime's parts in-process for unit tests (real files, real fsync).
from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from faultlab.runtime.agent import Agent
from faultlab.runtime.backends import JsonlBackend
from faultlab.runtime.checkpoints import policy_plugin
from faultlab.runtime.host import Disposer, Host
from faultlab.runtime.ledger import WorldLedger
from faultlab.runtime.model import ScriptedModel
from faultlab.runtime.persistence import PersistenceCoordinator
from faultlab.runtime.session import SessionLog
from faultlab.runtime.tools import ScriptedTools
from faultlab.scenario import Scenario, parse_scenario

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "scenarios"


def scenario_from(toml: str, *, name: str = "t") -> Scenario:
    return parse_scenario(f'name = "{name}"\n' + textwrap.dedent(toml), path=f"<{name}>")


@dataclass
class Runtime:
    """The runtime's parts, wired like SessionRunner but open to inspection."""

    scenario: Scenario
    log: SessionLog
    backend: JsonlBackend
    coordinator: PersistenceCoordinator
    host: Host
    model: ScriptedModel
    tools: ScriptedTools
    agent: Agent
    policy_disposer: Disposer | None

    async def run_turn(self, index: int = 0) -> str:
        turn = self.scenario.turns[index]
        return await self.agent.run_turn(turn.user, script_turn=index, script_step=0)

    def close(self) -> None:
        self.backend.close()
        self.tools.ledger.close()


RuntimeFactory = Callable[..., Runtime]


@pytest.fixture
def make_runtime(tmp_path: Path) -> Iterator[RuntimeFactory]:
    made: list[Runtime] = []

    def make(
        scenario: Scenario,
        *,
        policy: str | None = None,
        before_policy: Callable[[Host], object] | None = None,
        directory: Path | None = None,
    ) -> Runtime:
        where = directory or tmp_path / f"session{len(made)}"
        backend = JsonlBackend(where)
        loaded = backend.open(session_id="test", create=True, resume=True)
        log = SessionLog(loaded.session_id, loaded.events)
        coordinator = PersistenceCoordinator(log, backend)
        host = Host()
        if before_policy is not None:
            before_policy(host)
        dispose = host.load(policy_plugin(policy or scenario.policy, coordinator))
        model = ScriptedModel(scenario)
        tools = ScriptedTools(scenario, WorldLedger(where / "world-ledger.jsonl"))
        agent = Agent(
            log=log,
            coordinator=coordinator,
            host=host,
            model=model,
            tools=tools,
            pool_size=scenario.max_parallel_tools,
        )
        runtime = Runtime(scenario, log, backend, coordinator, host, model, tools, agent, dispose)
        made.append(runtime)
        return runtime

    yield make
    for runtime in made:
        runtime.close()
