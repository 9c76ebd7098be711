# The pytest plugin (entry point `pytest11`): glue only, cheap to import (the
# lab is imported when a scenario is collected or the fixture is used).
#
# Opt-in: with `--faultlab` (or ini `faultlab = true`) scenario files
# matching `faultlab_patterns` (default `scenarios/*.toml`; a file named on
# the command line always) are collected as one item per boundary occurrence
# x fault, `scenario.toml::tool/durable#2[power-loss]`, plus the scenario's
# coverage check `scenario.toml::coverage`.  Without it nothing changes in
# what pytest collects.  The `crashlab` fixture runs cases from Python tests.
# The engine behind both is `faultlab.lab.campaigns.pytest_glue`.
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from faultlab.lab import CrashLab, PluginOptions, ScenarioRun

__all__ = ["CaseItem", "ScenarioFile", "crashlab"]

_OPTIONS_KEY = pytest.StashKey["PluginOptions"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("faultlab", "crash-testing agent runtimes (faultlab)")
    group.addoption(
        "--faultlab",
        action="store_true",
        default=None,
        help="Collect scenario files (faultlab_patterns) as crash cases.",
    )
    group.addoption(
        "--faultlab-policy",
        metavar="POLICY",
        help="Checkpoint policy for the reference runtime (ini: faultlab_policy).",
    )
    group.addoption(
        "--faultlab-faults",
        metavar="LIST|all",
        help="Faults to inject, comma-separated or all (ini: faultlab_faults).",
    )
    group.addoption(
        "--faultlab-target",
        metavar="CMD",
        help="Crash-test this command instead of the reference runtime (ini: faultlab_target).",
    )
    group.addoption(
        "--faultlab-timeout",
        metavar="SECONDS",
        help="Seconds a child may take (ini: faultlab_timeout).",
    )
    group.addoption(
        "--faultlab-agent",
        metavar="NAME|FILE",
        help="Crash-test a black-box agent (docs/agents.md) instead (ini: faultlab_agent).",
    )
    group.addoption(
        "--faultlab-delays",
        metavar="MS,...",
        help="With an agent: kill delays in ms (default 0,50,200,1000; ini: faultlab_delays).",
    )
    group.addoption("--faultlab-shard", metavar="K/N",
                    help="Keep only shard K of N of the collected faultlab cases.")  # fmt: skip
    parser.addini(
        "faultlab",
        type="bool",
        default=False,
        help="Collect scenario files as crash cases (like --faultlab).",
    )
    parser.addini(
        "faultlab_patterns",
        type="linelist",
        default=["scenarios/*.toml"],
        help="Path patterns (matched from the right) of scenario files.",
    )
    parser.addini("faultlab_policy", default="", help="Policy (default: each scenario's).")
    parser.addini("faultlab_faults", default="all", help="Faults to inject (default: all).")
    parser.addini("faultlab_target", default="", help="Target (default: the reference runtime).")
    parser.addini("faultlab_timeout", default="60", help="Seconds a child may take.")  # fmt: skip
    parser.addini("faultlab_agent", default="", help="A black-box agent (default: none).")
    parser.addini("faultlab_delays", default="", help="Kill delays of an agent's cases (ms).")


def _setting(config: pytest.Config, name: str) -> str | None:
    given = config.getoption(f"--faultlab-{name}")
    if given is not None:
        return str(given)
    value = str(config.getini(f"faultlab_{name}")).strip()
    return value or None


def _options(config: pytest.Config) -> PluginOptions:
    options = config.stash.get(_OPTIONS_KEY, None)
    if options is None:
        from faultlab.lab import plugin_options

        try:
            options = plugin_options(
                enabled=bool(config.getoption("--faultlab") or config.getini("faultlab")),
                policy=_setting(config, "policy"), faults=_setting(config, "faults") or "all",
                target=_setting(config, "target"), timeout=_setting(config, "timeout") or "60",
                shard=config.getoption("--faultlab-shard"),
                basetemp=_basetemp(config), agent=_setting(config, "agent"),
                delays=_setting(config, "delays"),
            )  # fmt: skip
        except ValueError as exc:
            raise pytest.UsageError(f"faultlab: {exc}") from None
        config.stash[_OPTIONS_KEY] = options
    return options


def _basetemp(config: pytest.Config) -> Path | None:
    factory = getattr(config, "_tmp_path_factory", None)  # pytest's own, kept for 3 runs
    return None if factory is None else Path(factory.getbasetemp())


@pytest.hookimpl(trylast=True)  # after pytest's tmp_path factory exists
def pytest_configure(config: pytest.Config) -> None:
    named = any(config.getoption(f"--faultlab-{n}") is not None
                for n in ("policy", "faults", "target", "timeout", "shard", "agent",
                          "delays"))  # fmt: skip
    if named or config.getoption("--faultlab") or config.getini("faultlab"):
        _options(config)  # a bad option is a usage error now, not per item


def _is_scenario(config: pytest.Config, file_path: Path, session: pytest.Session) -> bool:
    if file_path.suffix != ".toml":
        return False
    if session.isinitpath(file_path):
        return True
    shown = PurePath(file_path.as_posix())
    return any(shown.match(p) for p in config.getini("faultlab_patterns"))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    config = parent.config
    if not (config.getoption("--faultlab") or config.getini("faultlab")):
        return None
    if not _is_scenario(config, file_path, parent.session):
        return None
    return ScenarioFile.from_parent(parent, path=file_path)


class ScenarioFile(pytest.File):
    """A scenario file: its fault-free dry run decides the items."""

    run: ScenarioRun

    def collect(self) -> Iterator[pytest.Item]:
        from faultlab.lab import ScenarioProblem, plan_scenario

        try:
            self.run = plan_scenario(self.path, _options(self.config))
        except ScenarioProblem as exc:
            raise self.CollectError(str(exc)) from None
        for case in self.run.cases:
            yield CaseItem.from_parent(self, name=self.run.item_name(case), case=case)


class CaseFailed(Exception):
    """A case broke a guarantee (or could not be judged)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class CaseItem(pytest.Item):
    """One case: kill the scenario's target at an occurrence with a fault."""

    def __init__(self, *, case: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        parent = self.parent
        assert isinstance(parent, ScenarioFile)
        text = parent.run.run(self.case)
        if text is not None:
            raise CaseFailed(text)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailed):
            return excinfo.value.text
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"faultlab {self.name}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--faultlab-shard") is None:
        return
    shard = _options(config).shard
    assert shard is not None
    cases = [item for item in items if isinstance(item, CaseItem)]
    dropped = {id(item) for i, item in enumerate(cases) if i % shard.count != shard.index - 1}
    if dropped:
        config.hook.pytest_deselected(items=[item for item in items if id(item) in dropped])
        items[:] = [item for item in items if id(item) not in dropped]


@pytest.fixture
def crashlab(request: pytest.FixtureRequest, tmp_path: Path) -> CrashLab:
    """Run faultlab cases from a test: `crashlab.run(scenario, "tool/durable#1")`
    returns the case's result; `crashlab.check(...)` fails the test with the
    evidence.  Defaults come from the --faultlab-* options and ini settings."""
    from faultlab.lab import CrashLab

    return CrashLab(_options(request.config), tmp_path / "crashlab")
