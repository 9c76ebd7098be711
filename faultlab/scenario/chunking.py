# Streamed text -> the chunks a scripted model sends, and the options for it.
#
# This module owns the one chunking rule of the format (docs/scenario-format.md:
# `chunks`, `chunk_size` or the default split after whitespace).  The parser
# applies it to every step and branch, the writer (`faultlab.scenario.write`)
# uses it to pick the option that reproduces a step's chunks, and the scenario
# generator (`faultlab.lab.campaigns.shapes`) builds its chunks with it, so a
# generated scenario's chunks are always ones a file can state.
from __future__ import annotations

import itertools
import re

__all__ = ["chunk_text"]

_WORD = re.compile(r"\s*\S+\s*|\s+")


def chunk_text(
    text: str, *, chunks: int | None = None, chunk_size: int | None = None
) -> tuple[str, ...]:
    """Split `text` into stream chunks; joining them gives `text` back.

    Default: split after each run of whitespace.  `chunks=N`: N near-equal pieces
    (at most one per character).  `chunk_size=K`: pieces of K characters.
    """
    if not text:
        return ()
    if chunk_size is not None:
        return tuple(text[i : i + chunk_size] for i in range(0, len(text), chunk_size))
    if chunks is not None:
        count = min(chunks, len(text))
        small, extra = divmod(len(text), count)
        bounds = [i * small + min(i, extra) for i in range(count + 1)]
        return tuple(text[a:b] for a, b in itertools.pairwise(bounds))
    return tuple(_WORD.findall(text))
