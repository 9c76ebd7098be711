# The least HTTP/1.1 the model server needs, on asyncio streams: requests
# with a Content-Length or chunked body (and `Expect: 100-continue`),
# keep-alive, JSON answers and chunked SSE streams that can be cut mid-way.
# Every head, body and chunk is bounded before it is buffered (MAX_HEAD,
# MAX_BODY), and a request's head is read apart from its body (`read_head`),
# so a server can refuse a request without reading what it sends.
# Chosen over starlette + uvicorn by measurement (docs/decisions.md, issue
# 20): no dependency, and a cut or a parked request is one line here.
from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import urlsplit

__all__ = ["MAX_BODY", "MAX_HEAD", "BadRequest", "Exchange", "Head", "Request", "read_body",
           "read_head", "read_request"]

MAX_HEAD = 64 * 1024  # the request line and headers (the stream reader's limit)
MAX_BODY = 64 * 1024 * 1024  # agents resend the whole conversation each time


class BadRequest(Exception):
    """The bytes are not an HTTP/1.1 request we serve: answer 400, then close."""


@dataclass(frozen=True, slots=True)
class Head:
    """A request's line and headers, read before any of its body: a server
    decides from these whether the body is worth reading."""

    method: str
    target: str  # the path with its query string, as sent
    path: str
    headers: dict[str, str]  # lower-cased names


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    target: str  # the path with its query string, as sent
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes

    @property
    def keep_alive(self) -> bool:
        return self.headers.get("connection", "").lower() != "close"


async def read_head(reader: asyncio.StreamReader) -> Head | None:
    """The next request's head on a connection (at most MAX_HEAD bytes, the
    reader's limit); None when the peer closed it."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as error:
        if error.partial.strip():
            raise BadRequest("the connection closed inside a request head") from None
        return None
    except asyncio.LimitOverrunError:
        raise BadRequest("request head too large") from None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(f"bad request line {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, sep, value = line.partition(":")
            if not sep:
                raise BadRequest(f"bad header line {line[:80]!r}")
            headers[name.strip().lower()] = value.strip()
    return Head(parts[0].upper(), parts[1], urlsplit(parts[1]).path, headers)


async def read_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    head: Head) -> bytes:  # fmt: skip
    """The body of the request `head` began, at most MAX_BODY bytes: every
    length and chunk size is checked before its bytes are read."""
    if head.headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    return await _read_body(reader, head.headers)


async def read_request(reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> Request | None:  # fmt: skip
    """The next request on a connection; None when the peer closed it."""
    head = await read_head(reader)
    if head is None:
        return None
    body = await read_body(reader, writer, head)
    return Request(head.method, head.target, head.path, head.headers, body)


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    try:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = bytearray()
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":
                        pass  # trailers
                    return bytes(body)
                # Checked before the chunk is read: a huge chunk size is refused
                # without buffering a byte of it.
                if size < 0 or len(body) + size > MAX_BODY:
                    raise BadRequest("request body too large")
                body += await reader.readexactly(size)
                await reader.readexactly(2)
        length = int(headers.get("content-length", "0"))
        if not 0 <= length <= MAX_BODY:
            raise BadRequest(f"bad content-length {length}")
        return await reader.readexactly(length)
    except ValueError:
        raise BadRequest("bad content-length or chunk size") from None
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        raise BadRequest("the connection closed inside a request body") from None


class Exchange:
    """The answer side of one request: a whole body, or a chunked stream."""

    def __init__(self, writer: asyncio.StreamWriter, keep_alive: bool) -> None:
        self._writer = writer
        self.keep_alive = keep_alive

    def _head(self, status: int, content_type: str, extra: str) -> bytes:
        reason = HTTPStatus(status).phrase
        connection = "keep-alive" if self.keep_alive else "close"
        return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
                f"Connection: {connection}\r\n{extra}\r\n").encode()  # fmt: skip

    async def send(self, status: int, body: bytes,
                   content_type: str = "application/json") -> None:  # fmt: skip
        self._writer.write(self._head(status, content_type, f"Content-Length: {len(body)}\r\n")
                           + body)  # fmt: skip
        await self._writer.drain()

    async def start_stream(self, content_type: str = "text/event-stream") -> None:
        extra = "Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\n"
        self._writer.write(self._head(200, content_type, extra))

    async def write_chunk(self, data: bytes) -> None:
        self._writer.write(b"%x\r\n%b\r\n" % (len(data), data))
        await self._writer.drain()

    async def end_stream(self) -> None:
        self._writer.write(b"0\r\n\r\n")
        await self._writer.drain()

    def drop(self) -> None:
        """Close the connection with no (more) answer: a parked request or a
        cut stream, as a model provider's connection lost mid-way looks."""
        self.keep_alive = False
        with contextlib.suppress(Exception):
            self._writer.close()
