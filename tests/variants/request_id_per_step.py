"""Variant: request ids are unique within a turn only.

Bug imitated: the request id is built from the step number alone
(`req-s<step>`), so every turn's first request is `req-s0`: a provider-side
idempotency key, or a trace that joins requests to responses by id, then
mixes two requests up.

The oracle must report: REQUEST_DUPLICATE (G5).
Shows at: multi-turn.toml turn/started#2 and every later kill point of it
(the crashed log holds both turns' `request/header` for `req-s0` once the
second turn's request checkpoint ran; at `turn/started#2` the resumed log
does).
"""

from __future__ import annotations

import inspect
import textwrap
from typing import Any

from _common import run

from faultlab.runtime import agent

# The reference's step body with only its request id changed (the probe, the
# header and the model request all use the one local): compiled from its source.
_SOURCE = textwrap.dedent(inspect.getsource(agent.Agent._step_body))
_BROKEN = _SOURCE.replace('f"req-t{turn}-s{step}"', 'f"req-s{step}"')
assert _BROKEN != _SOURCE, "the reference no longer names requests req-t<turn>-s<step>"
_namespace: dict[str, Any] = {}
exec(compile(_BROKEN, agent.__file__, "exec"), vars(agent), _namespace)

agent.Agent._step_body = _namespace["_step_body"]  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
