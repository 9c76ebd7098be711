# Tested repairs users install in their framework apps (docs/frameworks.md):
# each answers the tool calls a crash left unanswered, telling the model
# whether the call never started or may have run.  A recipe imports its
# framework; this package imports none.
from __future__ import annotations

__all__: list[str] = []
