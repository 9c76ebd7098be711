# The plugin host: middleware chains around the hooks `llm/stream` and
# `tools/execute`, ordered async listeners on `agent/post-step` and
# `session/appended`.  Registration order is call order (the first middleware
# registered is the outermost).  Every registration returns its disposer, and
# a plugin is an effect: a function that registers on a host and returns one
# disposer for everything it registered.
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

__all__ = [
    "AGENT_POST_STEP",
    "HOOKS",
    "LLM_STREAM",
    "SESSION_APPENDED",
    "TOOLS_EXECUTE",
    "Disposer",
    "Host",
    "Listener",
    "Middleware",
    "Next",
    "Plugin",
    "combine",
]

LLM_STREAM: Final = "llm/stream"
TOOLS_EXECUTE: Final = "tools/execute"
AGENT_POST_STEP: Final = "agent/post-step"
SESSION_APPENDED: Final = "session/appended"
_CHAINS = (LLM_STREAM, TOOLS_EXECUTE)
_EVENTS = (AGENT_POST_STEP, SESSION_APPENDED)
HOOKS: Final = _CHAINS + _EVENTS

Next = Callable[[Any], Awaitable[Any]]
Middleware = Callable[[Any, Next], Awaitable[Any]]
Listener = Callable[[Any], Awaitable[None]]
Disposer = Callable[[], None]
Plugin = Callable[["Host"], Disposer]


def combine(disposers: list[Disposer]) -> Disposer:
    """One disposer that runs `disposers` in reverse registration order."""

    def dispose() -> None:
        while disposers:
            disposers.pop()()

    return dispose


class Host:
    """Holds the registered middleware and listeners."""

    def __init__(self) -> None:
        # Each registration is (token, function): the token tells apart two
        # registrations of the same function, so a disposer removes its own.
        self._middleware: dict[str, list[tuple[object, Middleware]]] = {h: [] for h in _CHAINS}
        self._listeners: dict[str, list[tuple[object, Listener]]] = {h: [] for h in _EVENTS}

    def use(self, hook: str, middleware: Middleware) -> Disposer:
        """Wrap `hook`'s chain with `middleware`; inner to those registered before."""
        if hook not in self._middleware:
            raise ValueError(f"{hook!r} is not a middleware hook (hooks: {', '.join(_CHAINS)})")
        return _register(self._middleware[hook], middleware)

    def on(self, hook: str, listener: Listener) -> Disposer:
        """Call `listener` when `hook` is emitted, after those registered before."""
        if hook not in self._listeners:
            raise ValueError(f"{hook!r} is not an event hook (hooks: {', '.join(_EVENTS)})")
        return _register(self._listeners[hook], listener)

    def load(self, plugin: Plugin) -> Disposer:
        return plugin(self)

    async def call(self, hook: str, context: Any, terminal: Next) -> Any:
        """Run `context` through `hook`'s middleware chain, ending in `terminal`."""
        chain = tuple(middleware for _token, middleware in self._middleware[hook])

        async def invoke(index: int, ctx: Any) -> Any:
            if index == len(chain):
                return await terminal(ctx)
            return await chain[index](ctx, lambda inner: invoke(index + 1, inner))

        return await invoke(0, context)

    async def emit(self, hook: str, payload: Any) -> None:
        """Call `hook`'s listeners one after the other, in registration order."""
        for _token, listener in tuple(self._listeners[hook]):
            await listener(payload)

    def has_listeners(self, hook: str) -> bool:
        return bool(self._listeners[hook])

    def count(self, hook: str) -> int:
        if hook in self._middleware:
            return len(self._middleware[hook])
        return len(self._listeners[hook])


def _register(registrations: list[tuple[object, Any]], function: Any) -> Disposer:
    token = object()
    registrations.append((token, function))

    def dispose() -> None:
        for index, (candidate, _function) in enumerate(registrations):
            if candidate is token:
                del registrations[index]
                return

    return dispose
