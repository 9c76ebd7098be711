"""`faultlab bench`'s syscall_trace section times real traced runs: the cache
of traced runs (tracecache.py) must not serve them, or every round after
the first times a cache hit (it printed "exec'd under strace 1 ms" once).
Real reference runs under strace; skipped where strace cannot trace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from faultlab.bench.syscalltrace import syscall_trace
from faultlab.lab.process.syscalls import strace_path, strace_unusable
from faultlab.lab.process.tracecache import ENV_TRACE_CACHE

pytestmark = [
    pytest.mark.realprocess,
    pytest.mark.skipif(
        strace_path() is None or strace_unusable(strace_path() or "") is not None,
        reason="strace cannot trace here",
    ),
]


def test_the_traced_runs_bypass_the_trace_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "traces"
    monkeypatch.setenv(ENV_TRACE_CACHE, str(cache))
    result = syscall_trace(True)
    assert result.syscall_facts > 0 and len(result.traced_seconds) == result.rounds
    assert not cache.exists() or not any(cache.iterdir()), sorted(cache.rglob("*"))
    assert os.environ[ENV_TRACE_CACHE] == str(cache)  # put back
