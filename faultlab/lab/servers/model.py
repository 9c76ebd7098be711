# The scripted model server: a scenario's scripted model over HTTP on
# 127.0.0.1 as the Anthropic Messages, OpenAI Chat Completions and OpenAI
# Responses APIs and the Gemini API (servers/gemini.py), for black-box agents
# that cannot be told about faultlab.
# Each request it receives is ground truth: the gate records the history it
# carried (normalised, with a digest) before anything is answered, and every
# streamed chunk before it is sent, so a kill point can park a request or cut
# a stream.  It runs its own event loop in a thread, so the lab's synchronous
# case code can start it, read its URL and stop it (docs/model-server.md).
# Only the case's agent is served (docs/security.md): each server has a
# secret, sent as the first part of the URL's path (`url` carries it) or as
# the API key; a request without it is answered 401 before its body is
# read, recorded as a `FOREIGN_REQUEST` fact and never counted.
from __future__ import annotations

import asyncio
import contextlib
import hmac
import secrets
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

import orjson

from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.histories import History
from faultlab.lab.read.naming import BUILT_IN_NAMING, ToolNaming
from faultlab.lab.read.wire import (
    WireError,
    history_from_anthropic,
    history_from_chat,
    history_from_gemini,
    history_from_responses,
)
from faultlab.lab.servers.gate import Gate
from faultlab.lab.servers.gemini import gemini_route
from faultlab.lab.servers.http import (
    MAX_HEAD,
    BadRequest,
    Exchange,
    Head,
    Request,
    read_body,
    read_head,
)
from faultlab.lab.servers.script import choose_answer
from faultlab.lab.servers.wire import (
    API_PATHS,
    CALL_PREFIX,
    Api,
    declared_tools,
    error_body,
    render,
    tool_names,
)
from faultlab.scenario import Scenario

__all__ = ["FOREIGN_REQUEST", "TOOL_NOT_OFFERED", "ModelServer"]

FOREIGN_REQUEST = "FOREIGN_REQUEST"  # the gate fact of a request without the secret
# The gate fact of an answer that calls a tool its request did not offer.
TOOL_NOT_OFFERED = "model/tool-not-offered"

_PARSERS: dict[Api, Callable[..., History]] = {  # (body, known, *, naming)
    "anthropic": history_from_anthropic,
    "chat": history_from_chat,
    "responses": history_from_responses,
    "gemini": history_from_gemini,
}
_COUNT_TOKENS = "/v1/messages/count_tokens"
_HOLD_POLL_S = 0.01  # how often a parked request looks whether the gate released it


class ModelServer:
    """`with ModelServer(scenario, gate) as server:` serves on `server.url`."""

    def __init__(self, scenario: Scenario, gate: Gate, *, host: str = "127.0.0.1",
                 unix_path: str | None = None, secret: str | None = None,
                 naming: ToolNaming = BUILT_IN_NAMING) -> None:  # fmt: skip
        """`unix_path`: also serve on that Unix socket, for an agent in a network
        namespace of its own (its supervisor relays 127.0.0.1:port there);
        `secret`: what a request must carry (default: a fresh random one);
        `naming`: how the agent names the MCP tools (its adapter's `tool_name`)."""
        self.scenario, self.gate, self.host = scenario, gate, host
        self.naming = naming
        self.unix_path = unix_path
        self.secret = secret or secrets.token_hex(16)
        self._prefix = f"/faultlab-{self.secret}"
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._unix: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    @property
    def url(self) -> str:
        """The base URL the case's agent is given: the secret is its path."""
        if not self.port:
            raise LabUsageError("the model server is not running: start() it first")
        return f"http://{self.host}:{self.port}{self._prefix}"

    @property
    def key(self) -> str:
        """The secret as an API key (x-api-key, Authorization: Bearer)."""
        return self.secret

    def _admitted(self, head: Head) -> Head | None:
        """`head` with the secret's path prefix taken off, when it carries
        the secret (in its path, or as its API key); None when it does not."""
        target = head.target
        if target == self._prefix or target.startswith((self._prefix + "/",
                                                        self._prefix + "?")):  # fmt: skip
            rest = target[len(self._prefix) :] or "/"
            rest = rest if rest.startswith("/") else "/" + rest
            return Head(head.method, rest, head.path[len(self._prefix) :] or "/", head.headers)
        bearer = head.headers.get("authorization", "").removeprefix("Bearer ").strip()
        for given in (head.headers.get("x-api-key", ""), bearer,
                      head.headers.get("x-goog-api-key", "")):  # fmt: skip
            if given and hmac.compare_digest(given.encode(), self.secret.encode()):
                return head
        return None

    async def _refuse(self, head: Head, writer: asyncio.StreamWriter) -> None:
        """A request without the secret: recorded (never as a boundary),
        answered 401 without its body being read, the connection closed."""
        peer = writer.get_extra_info("peername")
        self.gate.note(FOREIGN_REQUEST, method=head.method[:16], path=head.path[:200],
                       peer=list(peer) if isinstance(peer, tuple) else str(peer or "unix"))
        api: Api | None = API_PATHS.get(head.path.rstrip("/")) or (
            "gemini" if gemini_route(head.path.rstrip("/")) else None)
        await Exchange(writer, False).send(401, orjson.dumps(error_body(
            api, 401, "this model server answers only the faultlab case's own agent")))

    def start(self) -> ModelServer:
        if self._thread is not None:
            raise LabUsageError("the model server is already started")
        self._thread = threading.Thread(target=self._run, name="faultlab-model", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise LabUsageError(f"the model server could not listen on {self.host}: "
                                f"{self._failure}")  # fmt: skip
        return self

    def stop(self) -> None:
        """Close the listener and every connection (parked ones too); idempotent."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
        with contextlib.suppress(Exception):
            future.result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:  # fmt: skip
        self.stop()

    # -- the loop's thread

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._server = loop.run_until_complete(asyncio.start_server(
                self._connection, self.host, 0, limit=MAX_HEAD))  # fmt: skip
            self.port = int(self._server.sockets[0].getsockname()[1])
            if self.unix_path is not None:
                self._unix = loop.run_until_complete(asyncio.start_unix_server(
                    self._connection, self.unix_path, limit=MAX_HEAD))  # fmt: skip
        except OSError as error:
            self._failure = error
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _shutdown(self) -> None:
        for server in (self._server, self._unix):
            if server is not None:
                server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:  # fmt: skip
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            while True:
                try:
                    head = await read_head(reader)
                    if head is None:
                        break
                    admitted = self._admitted(head)
                    if admitted is None:
                        await self._refuse(head, writer)
                        break
                    body = await read_body(reader, writer, admitted)
                except BadRequest as error:
                    await Exchange(writer, False).send(
                        400, orjson.dumps(error_body(None, 400, str(error)))
                    )
                    break
                request = Request(admitted.method, admitted.target, admitted.path,
                                  admitted.headers, body)  # fmt: skip
                exchange = Exchange(writer, request.keep_alive)
                await self._serve(request, exchange)
                if not exchange.keep_alive:
                    break
        except (ConnectionError, asyncio.CancelledError):
            pass  # the agent went away (it was killed) or the server stops
        finally:
            self._writers.discard(writer)
            self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _json(self, exchange: Exchange, status: int, data: Any) -> None:
        await exchange.send(status, orjson.dumps(data))

    async def _serve(self, request: Request, exchange: Exchange) -> None:
        path = request.path.rstrip("/") or "/"
        if request.method == "GET" and path in ("/v1/models", "/models"):
            await self._json(exchange, 200, {"object": "list", "data": [
                {"id": "faultlab-scripted", "object": "model", "created": 0,
                 "owned_by": "faultlab", "type": "model",
                 "display_name": "faultlab scripted model"}]})  # fmt: skip
            return
        gemini = gemini_route(path)  # Gemini names its model and method in the path
        api: Api | None = API_PATHS.get(path) or (
            "anthropic" if path == _COUNT_TOKENS else "gemini" if gemini else None)
        if api is None or request.method != "POST":
            await self._json(exchange, 404, error_body(api, 404,
                             f"no route {request.method} {request.path}"))  # fmt: skip
            return
        try:
            body = orjson.loads(request.body)
        except orjson.JSONDecodeError as error:
            await self._json(exchange, 400, error_body(api, 400, f"body is not JSON: {error}"))
            return
        if gemini is not None and gemini.method == "countTokens":
            await self._json(exchange, 200, {"totalTokens": max(1, len(request.body) // 4)})
            return
        if gemini is not None and isinstance(body, dict):
            body = {**body, "model": gemini.model, "stream": gemini.stream}
        known = self.scenario.tool_names
        try:
            history = _PARSERS[api](body, known, naming=self.naming)
        except WireError as error:
            await self._json(exchange, 400, error_body(api, 400, str(error)))
            return
        if path == _COUNT_TOKENS:
            await self._json(exchange, 200, {"input_tokens": max(1, len(request.body) // 4)})
            return
        await self._answer(api, request, body, history, exchange)

    async def _hold(self, exchange: Exchange) -> None:
        """Parked at the kill point: no answer until the lab killed the agent,
        then the connection is dropped."""
        while not self.gate.released.is_set():
            await asyncio.sleep(_HOLD_POLL_S)
        exchange.drop()

    async def _answer(self, api: Api, request: Request, body: dict[str, Any], history: History,
                      exchange: Exchange) -> None:  # fmt: skip
        answer = choose_answer(self.scenario, history)
        digest = history.digest()
        stream = bool(body.get("stream"))
        record = self.gate.reach("model/request", api=api, path=request.target,
                                 history=history.to_json(), digest=digest, step=answer.step,
                                 turn=answer.turn, branch=answer.branch, stream=stream,
                                 model=str(body.get("model") or "")[:200])  # fmt: skip
        n = int(record["n"])
        if record.get("hold"):
            await self._hold(exchange)
            return
        if answer.delay_ms:
            await asyncio.sleep(answer.delay_ms / 1000)
        names = tool_names(api, body, self.scenario.tool_names, self.naming)
        missing = [c.tool for c in answer.calls if c.tool not in names]
        if missing:
            # The script calls a tool this request did not offer (the agent
            # had not registered it yet, or names it in a way the adapter's
            # `tool_name` does not say): answered by the adapter's rule all
            # the same, and noted, so the case says why the agent balked.
            offered = [name for name, _ in declared_tools(api, body)][:50]
            self.gate.note(TOOL_NOT_OFFERED, request=n, tools=missing, offered=offered)
            names = {**names, **{t: (self.naming.wire(t), None) for t in missing}}
        # Fresh ids per answer (the request's n): a step answered again
        # after a kill gets new ones, as a real model's answer would.
        ids = [answer.call_id(i, CALL_PREFIX[api], answer=n) for i in range(len(answer.calls))]
        rendered = render(api, answer, body, request_id=f"fl{n}d{digest}s{answer.step}",
                          stream=stream, names=names, call_ids=ids)  # fmt: skip
        calls = [{"id": cid, "name": c.tool, "arguments": dict(c.arguments)}
                 for cid, c in zip(ids, answer.calls, strict=True)]  # fmt: skip
        if rendered.body is not None:
            await self._json(exchange, 200, rendered.body)
        else:
            await exchange.start_stream()
            index = 0
            for is_chunk, data in rendered.pieces:
                if is_chunk and index and answer.chunk_delay_ms:
                    await asyncio.sleep(answer.chunk_delay_ms / 1000)
                await exchange.write_chunk(data)
                if is_chunk:
                    # After the chunk went out: model/chunk#k@0 leaves the
                    # agent holding k chunks of a stream that never ends.
                    chunk = self.gate.reach("model/chunk", request=n, index=index)
                    index += 1
                    if chunk.get("hold"):
                        await self._hold(exchange)
                        return
            await exchange.end_stream()
        self.gate.note("model/response", request=n, api=api, text=answer.text, calls=calls)
