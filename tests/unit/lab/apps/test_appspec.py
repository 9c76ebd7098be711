# An --app spec with the wrong framework prefix (issue 32 item 6): each
# framework's child refuses a module that defines another framework's app
# with one line naming the right prefix, the framework told from the
# module's objects and contract (appspec.py), for every pair of the four
# frameworks; a module of none of them is not refused for that.  One pair
# runs end to end on the real example apps in tests/cli/test_app_prefix.py.
from __future__ import annotations

import sys
import types

import pytest

from faultlab.lab.apps.appspec import (
    AppSpecError,
    framework_of,
    import_app,
    module_frameworks,
    refuse_other_framework,
)

# Each framework: the package its apps' objects come from (what a module
# holds: a compiled graph, an Agent) and how a refusal names it.
FRAMEWORKS = {
    "langgraph": ("langgraph.graph.state", "a LangGraph graph"),
    "pydantic-ai": ("pydantic_ai.agent", "a pydantic-ai app"),
    "openai-agents": ("agents.agent", "an OpenAI Agents SDK app"),
    "google-adk": ("google.adk.agents.llm_agent", "a Google ADK app"),
}
PAIRS = [(given, defined) for given in FRAMEWORKS for defined in FRAMEWORKS if given != defined]


def _app_module(name: str, framework: str) -> types.ModuleType:
    """A module as a user writes one for `framework`: a factory beside an
    object of the framework (imported frameworks cost seconds each; the
    detection reads only where the object's class comes from)."""
    package, _what = FRAMEWORKS[framework]
    module = types.ModuleType(name)
    module.agent = _class_from(package)()  # type: ignore[attr-defined]
    module.build = lambda **given: module.agent  # type: ignore[attr-defined]
    return module


@pytest.mark.parametrize(("given", "defined"), PAIRS)
def test_a_module_of_another_framework_is_refused_naming_it(
    given: str, defined: str, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    name = f"an_app_of_{defined.replace('-', '_')}"
    monkeypatch.setitem(sys.modules, name, _app_module(name, defined))
    with pytest.raises(AppSpecError) as refused:
        import_app(f"{name}:build", given)
    what = FRAMEWORKS[defined][1]
    assert str(refused.value) == f"{name}: this module defines {what}; use {defined}:MODULE:FACTORY"
    module, factory = import_app(f"{name}:build", defined)  # its own prefix is taken
    assert module is sys.modules[name] and factory is module.build


def _module_holding(**names: object) -> types.ModuleType:
    module = types.ModuleType("an_app")
    vars(module).update(names)
    return module


def _class_from(package: str) -> type:
    return type("Thing", (), {"__module__": f"{package}.thing"})


def test_the_framework_is_told_from_objects_not_names() -> None:
    graph = _class_from("langgraph.graph.state")()
    assert framework_of(graph) == "langgraph"
    assert framework_of(_class_from("google.adk.agents")) == "google-adk"
    assert framework_of(_class_from("agentsmith")) is None  # a package that only starts alike
    assert framework_of(len) is None
    # A module holding a built graph under any name is a LangGraph module ...
    assert module_frameworks(_module_holding(app_graph=graph)) == {"langgraph"}
    # ... one of two frameworks is not refused (which one is meant is unclear) ...
    both = _module_holding(g=graph, a=_class_from("pydantic_ai.agent")())
    assert module_frameworks(both) == {"langgraph", "pydantic-ai"}
    # ... and the contract of a store counts without any framework import.
    store = _module_holding(load_history=lambda p: [], save_history=lambda p, m: None)
    assert module_frameworks(store) == {"pydantic-ai"}


def test_what_a_factory_built_is_refused_when_it_is_another_frameworks() -> None:
    agent = _class_from("pydantic_ai.agent")()
    with pytest.raises(AppSpecError, match="use pydantic-ai:MODULE:FACTORY"):
        refuse_other_framework(agent, "build", "google-adk")
    refuse_other_framework(agent, "build", "pydantic-ai")  # its own: not refused
    refuse_other_framework({"not": "an app"}, "build", "google-adk")  # the caller's to judge


def test_a_missing_module_or_factory_is_named() -> None:
    with pytest.raises(AppSpecError, match=r"no module named examples\.nosuch"):
        import_app("examples.nosuch:build", "google-adk")
    with pytest.raises(AppSpecError, match=r"defines no factory nosuch\(\*, model, tools\)"):
        import_app("faultlab.recipes.guidance:nosuch", "google-adk")
