# The plugin host: chain order, listener order, disposers, composite unload order.
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from faultlab.runtime.app import CompositeApp
from faultlab.runtime.host import AGENT_POST_STEP, LLM_STREAM, TOOLS_EXECUTE, Disposer, Host


def test_middleware_runs_in_registration_order_outermost_first() -> None:
    host = Host()
    trace: list[str] = []

    def layer(name: str) -> Any:
        async def middleware(ctx: Any, next_: Any) -> Any:
            trace.append(f"{name}>")
            result = await next_(ctx + name)
            trace.append(f"<{name}")
            return result

        return middleware

    host.use(TOOLS_EXECUTE, layer("a"))
    host.use(TOOLS_EXECUTE, layer("b"))

    async def terminal(ctx: Any) -> Any:
        trace.append(f"body:{ctx}")
        return ctx

    assert asyncio.run(host.call(TOOLS_EXECUTE, "", terminal)) == "ab"
    assert trace == ["a>", "b>", "body:ab", "<b", "<a"]


def test_listeners_run_in_order_and_disposers_remove_exactly_one() -> None:
    host = Host()
    seen: list[str] = []

    def listener(name: str) -> Any:
        async def on(_payload: Any) -> None:
            seen.append(name)

        return on

    first = listener("first")
    dispose_a = host.on(AGENT_POST_STEP, first)
    host.on(AGENT_POST_STEP, listener("second"))
    host.on(AGENT_POST_STEP, first)
    asyncio.run(host.emit(AGENT_POST_STEP, None))
    assert seen == ["first", "second", "first"]
    dispose_a()
    dispose_a()  # a second call is harmless
    seen.clear()
    asyncio.run(host.emit(AGENT_POST_STEP, None))
    assert seen == ["second", "first"]


def test_unknown_hooks_are_refused() -> None:
    host = Host()

    async def noop(*_args: Any) -> None:
        return None

    with pytest.raises(ValueError, match="not a middleware hook"):
        host.use(AGENT_POST_STEP, noop)
    with pytest.raises(ValueError, match="not an event hook"):
        host.on(LLM_STREAM, noop)


def test_composite_app_unloads_edges_then_quiesces_then_core_in_reverse() -> None:
    order: list[str] = []

    def part(name: str) -> Any:
        def install(_host: Host) -> Disposer:
            return lambda: order.append(f"unload {name}")

        return install

    async def main() -> None:
        app = CompositeApp()
        app.load("persistence", part("persistence"))
        app.load("policy", part("policy"))
        app.load("bridge", part("bridge"), edge=True)

        async def agent_work() -> None:
            await asyncio.sleep(0.01)
            order.append("agent persisted its closing events")

        app.spawn(agent_work())
        await app.unload()
        assert app.unloaded == ["bridge", "policy", "persistence"]

    asyncio.run(main())
    assert order == [
        "unload bridge",
        "agent persisted its closing events",
        "unload policy",
        "unload persistence",
    ]
