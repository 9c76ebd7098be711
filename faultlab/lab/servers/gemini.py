# The Gemini API on the scripted model server: which paths are Gemini
# requests (`/v1beta/models/MODEL:generateContent`, `:streamGenerateContent`
# with `?alt=sse`, `:countTokens`), and a scripted answer as Gemini sends it:
# one GenerateContentResponse, or SSE `data:` events of partial ones, each
# text delta and each `functionCall` part a chunk the gate counts, as on the
# other wires (servers/wire.py).  Calls carry the server's fresh ids; Gemini
# CLI and the google-genai client send them back on `functionResponse`.
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from faultlab.lab.servers.script import Answer

__all__ = ["GeminiRoute", "gemini_error", "gemini_route", "render_gemini"]

# /v1beta/models/gemini-2.5-flash:streamGenerateContent (also v1, v1alpha;
# a `tunedModels/` or `publishers/google/models/` name is accepted too).
_PATH = re.compile(r"^/v1(?:alpha|beta)?/(?:[\w.-]+/)*?(?:models|tunedModels)/"
                   r"(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent|"
                   r"countTokens)$")  # fmt: skip


@dataclass(frozen=True, slots=True)
class GeminiRoute:
    """A Gemini request's path read: the model and the method."""

    model: str
    method: str

    @property
    def stream(self) -> bool:
        return self.method == "streamGenerateContent"


def gemini_route(path: str) -> GeminiRoute | None:
    """The route of a Gemini API path (its query taken off), or None."""
    found = _PATH.match(path)
    return GeminiRoute(found["model"], found["method"]) if found else None


def gemini_error(status: int, message: str) -> dict[str, Any]:
    kind = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND"}.get(status,
                                                                                "INTERNAL")
    return {"error": {"code": status, "message": message, "status": kind}}


def _response(parts: list[dict[str, Any]], model: str, rid: str, finish: str | None,
              usage: tuple[int, int] | None) -> dict[str, Any]:  # fmt: skip
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": model, "responseId": rid}
    if usage is not None:
        out["usageMetadata"] = {"promptTokenCount": usage[0], "candidatesTokenCount": usage[1],
                                "totalTokenCount": sum(usage)}  # fmt: skip
    return out


def _sse(data: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(data) + b"\r\n\r\n"


def render_gemini(answer: Answer, calls: Sequence[tuple[str, str, str | None, str]],
                  model: str, rid: str, stream: bool,
                  usage: tuple[int, int]) -> tuple[dict[str, Any] | None,
                                                   tuple[tuple[bool, bytes], ...]]:  # fmt: skip
    """(whole body, None) or (None, the stream's pieces): `calls` are
    (id, wire name, namespace, arguments JSON) as servers/wire.py builds them."""
    call_parts = [{"functionCall": {"id": cid, "name": name, "args": orjson.loads(args)}}
                  for cid, name, _, args in calls]  # fmt: skip
    # Gemini ends a turn with STOP whether or not it called functions.
    if not stream:
        parts = ([{"text": answer.text}] if answer.text else []) + call_parts
        return _response(parts, model, rid, "STOP", usage), ()
    events = [[{"text": text}] for text in answer.chunks if text] + [[p] for p in call_parts]
    # The last event carries the finish reason and the usage.
    return None, tuple(
        (True, _sse(_response(parts, model, rid, "STOP" if last else None,
                              usage if last else None)))
        for last, parts in ((i == len(events) - 1, p) for i, p in enumerate(events)))  # fmt: skip
