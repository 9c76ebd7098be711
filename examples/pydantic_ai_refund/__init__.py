# A small pydantic-ai app to copy: an Agent with the tools it is given, and
# its own history store (one JSON file in pydantic-ai's serialization,
# replaced atomically and fsynced on every save).  faultlab crash-tests it
# with `faultlab explore --app
# pydantic-ai:examples.pydantic_ai_refund:build_agent scenarios/payment.toml`.
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

__all__ = ["build_agent", "load_history", "save_history"]


def build_agent(*, model: Any, tools: list[Any]) -> Agent[None, str]:
    """The app's agent: the model answers, its tool calls run, repeat."""
    return Agent(model, tools=tools, system_prompt="You handle refunds and charges.")


def load_history(path: Path) -> list[ModelMessage]:
    """The conversation so far (none before the first save)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    return list(ModelMessagesTypeAdapter.validate_json(raw))


def save_history(path: Path, messages: Sequence[ModelMessage]) -> None:
    """Replace the stored conversation: write a temporary file, fsync it,
    rename it over the old one, fsync the directory."""
    scratch = path.with_name(path.name + ".tmp")
    with open(scratch, "wb") as out:
        out.write(ModelMessagesTypeAdapter.dump_json(list(messages)))
        out.flush()
        os.fsync(out.fileno())
    os.replace(scratch, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
