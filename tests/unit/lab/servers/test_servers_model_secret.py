# Only the case's agent is served (issue 31, docs/security.md), over real
# HTTP on 127.0.0.1: a request without the server's secret, or under a
# guessed one, is answered 401 before its body is read, noted as a
# FOREIGN_REQUEST fact and never counted as a model/request; the secret in
# the URL's path or as the API key is served; a chunk size over the body
# limit is refused at its size line, before a byte of it is buffered.
from __future__ import annotations

import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import orjson
import pytest

from faultlab.lab.servers import Gate, ModelServer
from faultlab.lab.servers.http import MAX_BODY
from faultlab.lab.servers.model import FOREIGN_REQUEST
from faultlab.scenario import load_scenario
from tests.conftest import SCENARIOS

BODY = orjson.dumps({"model": "m", "stream": False, "max_tokens": 64,
                     "messages": [{"role": "user", "content": "Deploy api v2."}]})  # fmt: skip


@pytest.fixture
def served() -> Iterator[tuple[ModelServer, Gate]]:
    gate = Gate()
    with ModelServer(load_scenario(SCENARIOS / "deploy-careful.toml"), gate) as server:
        yield server, gate


def exchange(server: ModelServer, head: bytes, body: bytes = b"") -> bytes:
    """Send `head` (and `body`) on a fresh connection; what came back until
    the server closed it or answered one response."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return data


def post_head(path: str, length: int, *extra: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: x", "Connection: close",
             f"Content-Length: {length}", *extra]  # fmt: skip
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def kinds(gate: Gate) -> list[str]:
    return [str(r.get("boundary") or r.get("fact")) for r in gate.snapshot()]


def test_its_url_carries_a_fresh_secret_per_server(served: tuple[ModelServer, Gate]) -> None:
    server, _ = served
    other = ModelServer(server.scenario, Gate())
    assert urlsplit(server.url).path == f"/faultlab-{server.key}"
    assert len(server.key) == 32 and other.secret != server.secret


@pytest.mark.parametrize("path", ["/v1/messages", "/faultlab-0123456789abcdef/v1/messages",
                                  "/v1/faultlab-x/messages"])  # fmt: skip
def test_a_request_without_the_secret_is_refused_and_never_counted(
    served: tuple[ModelServer, Gate], path: str
) -> None:
    server, gate = served
    # The head announces a body it never sends: a 401 that waited for the
    # body would never come (the server answers before reading it).
    got = exchange(server, post_head(path, 1 << 20, "x-api-key: dummy"))
    assert got.startswith(b"HTTP/1.1 401 "), got[:200]
    assert kinds(gate) == [FOREIGN_REQUEST]
    fact = gate.snapshot()[0]
    assert fact["path"] == path and fact["method"] == "POST"


@pytest.mark.parametrize("how", ["path", "x-api-key", "bearer"])
def test_the_secret_in_the_path_or_as_the_key_is_served(
    served: tuple[ModelServer, Gate], how: str
) -> None:
    server, gate = served
    path = urlsplit(server.url).path + "/v1/messages" if how == "path" else "/v1/messages"
    extra = {"path": (), "x-api-key": (f"x-api-key: {server.key}",),
             "bearer": (f"Authorization: Bearer {server.key}",)}[how]  # fmt: skip
    got = exchange(server, post_head(path, len(BODY), *extra), BODY)
    assert got.startswith(b"HTTP/1.1 200 "), got[:200]
    assert kinds(gate)[0] == "model/request" and FOREIGN_REQUEST not in kinds(gate)
    assert gate.snapshot()[0]["path"] == "/v1/messages"  # the secret is not recorded


def test_a_chunk_over_the_body_limit_is_refused_at_its_size_line(
    served: tuple[ModelServer, Gate],
) -> None:
    server, gate = served
    path = urlsplit(server.url).path + "/v1/messages"
    head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            f"{MAX_BODY + 1:x}\r\n").encode()  # fmt: skip
    # No byte of the chunk is sent: the answer comes from its size alone.
    got = exchange(server, head)
    assert got.startswith(b"HTTP/1.1 400 ") and b"too large" in got, got[:300]
    assert "model/request" not in kinds(gate)
    small = (f"POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
             f"Connection: close\r\n\r\n{len(BODY):x}\r\n").encode()  # fmt: skip
    small += BODY + b"\r\n0\r\n\r\n"
    assert exchange(server, small).startswith(b"HTTP/1.1 200 ")
