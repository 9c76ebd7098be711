# The model server's HTTP stack, measured side by side (docs/decisions.md,
# "Issue 20: the model server's HTTP stack"): faultlab's ModelServer on the
# standard library's asyncio streams against the same scripted answers served
# by starlette + uvicorn.  Start time, and the latency of streamed Anthropic
# requests on one keep-alive connection, in alternating rounds; prints
# medians and ratios.  Standalone (not a `faultlab bench` section); ~20 s.
from __future__ import annotations

import http.client
import statistics
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.read.wire import history_from_anthropic
from faultlab.lab.servers import Gate, ModelServer
from faultlab.lab.servers.script import choose_answer
from faultlab.lab.servers.wire import render, tool_names
from faultlab.scenario import Scenario, load_scenario

__all__: list[str] = []

ROUNDS, PER_ROUND, STARTS = 6, 50, 5  # 300 streamed requests per stack
BODY = orjson.dumps({"model": "m", "stream": True, "max_tokens": 64,
                     "messages": [{"role": "user", "content": "Deploy api v2."}]})  # fmt: skip


class Uvicorn:
    """The same answers (same gate reports) behind starlette + uvicorn."""

    def __init__(self, scenario: Scenario, gate: Gate) -> None:
        import uvicorn
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import StreamingResponse
        from starlette.routing import Route

        async def messages(request: Request) -> StreamingResponse:
            body = orjson.loads(await request.body())
            history = history_from_anthropic(body, scenario.tool_names)
            answer = choose_answer(scenario, history)
            n = gate.reach("model/request", api="anthropic", path=request.url.path,
                           history=history.to_json(), digest=history.digest(),
                           step=answer.step)["n"]  # fmt: skip
            rendered = render("anthropic", answer, body, request_id=history.digest(),
                              stream=True, names=tool_names("anthropic", body, ()))  # fmt: skip

            async def pieces() -> AsyncIterator[bytes]:
                index = 0
                for is_chunk, data in rendered.pieces:
                    if is_chunk:
                        gate.reach("model/chunk", request=n, index=index)
                        index += 1
                    yield data

            return StreamingResponse(pieces(), media_type="text/event-stream")

        app = Starlette(routes=[Route("/v1/messages", messages, methods=["POST"])])
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                lifespan="off", access_log=False)  # fmt: skip
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.001)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def stdlib(scenario: Scenario, gate: Gate) -> Any:
    return ModelServer(scenario, gate).start()


def requests(url: str, count: int) -> list[float]:
    conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=10)
    times = []
    for _ in range(count):
        start = time.perf_counter()
        conn.request("POST", "/v1/messages?beta=true", body=BODY,
                     headers={"content-type": "application/json"})  # fmt: skip
        raw = conn.getresponse().read()
        times.append(time.perf_counter() - start)
        assert raw.rstrip().endswith(b'{"type":"message_stop"}'), raw[-200:]
    conn.close()
    return times


def main() -> int:
    scenario = load_scenario(Path(__file__).resolve().parent.parent / "scenarios"
                             / "deploy-careful.toml")  # fmt: skip
    stacks: dict[str, Callable[[Scenario, Gate], Any]] = {"stdlib": stdlib,
                                                          "uvicorn": Uvicorn}  # fmt: skip
    starts: dict[str, list[float]] = {name: [] for name in stacks}
    latency: dict[str, list[float]] = {name: [] for name in stacks}
    cold = {}
    for name, make in stacks.items():  # warm-up: the first start pays the imports
        start = time.perf_counter()
        server = make(scenario, Gate())
        cold[name] = time.perf_counter() - start
        requests(server.url, 20)
        server.stop()
    for round_ in range(max(ROUNDS, STARTS)):
        order = list(stacks) if round_ % 2 == 0 else list(reversed(stacks))
        for name in order:
            start = time.perf_counter()
            server = stacks[name](scenario, Gate())
            started = time.perf_counter() - start
            if round_ < STARTS:
                starts[name].append(started)
            if round_ < ROUNDS:
                latency[name] += requests(server.url, PER_ROUND)
            server.stop()
    print(f"{'stack':<10}{'cold ms':>9}{'start ms':>10}{'median ms':>11}{'p95 ms':>9}"
          f"{'req/s':>8}")  # fmt: skip
    row = {}
    for name in stacks:
        times = sorted(latency[name])
        median, p95 = statistics.median(times), times[int(len(times) * 0.95)]
        row[name] = (statistics.median(starts[name]), median)
        print(
            f"{name:<10}{cold[name] * 1e3:>9.1f}{row[name][0] * 1e3:>10.2f}"
            f"{median * 1e3:>11.3f}{p95 * 1e3:>9.3f}{len(times) / sum(times):>8.0f}"
        )
    print(f"uvicorn/stdlib: start {row['uvicorn'][0] / row['stdlib'][0]:.2f}x, "
          f"median request {row['uvicorn'][1] / row['stdlib'][1]:.2f}x "
          f"({len(latency['stdlib'])} streamed requests each)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
