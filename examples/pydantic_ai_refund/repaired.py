# The same app with faultlab's pydantic-ai recipe installed: before it runs
# its agent on a stored history, the unanswered tool calls are answered with
# TOOL_NOT_STARTED or TOOL_OUTCOME_UNKNOWN (faultlab/recipes/pydantic_ai.py).
# faultlab calls `before_resume` in its `hook` resume style; an app calls it
# on every history it loads.
from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.messages import ModelMessage

from examples.pydantic_ai_refund import build_agent, load_history, save_history
from faultlab.recipes.pydantic_ai import repair_dangling_calls

__all__ = ["before_resume", "build_agent", "load_history", "save_history"]


def before_resume(messages: Sequence[ModelMessage]) -> list[ModelMessage]:
    return repair_dangling_calls(messages)[0]
