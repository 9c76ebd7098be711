# The cache of traced reference runs across runs of faultlab (issue 34,
# item 1): a scenario's fault-free run traced by strace costs a traced child
# (about a second exec'd); the same target code on the same scenario with
# the same options (tracekey.py) gives the same run, so the whole traced
# Reference (probe trace, log bytes, ledger, file facts, written bytes) is
# kept and served again without running anything.  Entries live in one
# folder (default ~/.cache/faultlab/traces; FAULTLAB_TRACE_CACHE=off turns
# the cache off, =DIR moves it), one JSON file per key, written atomically.
# A cache entry is untrusted input: read bounded, never through a link,
# only from a folder and files that are the user's own and not writable by
# others, and validated field by field, including every index the oracle
# will follow; anything wrong and it is ignored (the run is traced anew and
# the entry rewritten).  The folder is kept under a size bound, oldest
# entries out first.  Paths of the old run (its reference folder) are
# stored as a placeholder and put back as the new run's.
from __future__ import annotations

import base64
import contextlib
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import orjson

from faultlab.lab.errors import LabUsageError
from faultlab.lab.process.probereport import ProbeReport, report_problem
from faultlab.lab.process.records import LedgerRecord, ledger_record
from faultlab.lab.process.target import Target
from faultlab.lab.process.tracekey import FORMAT, trace_key

__all__ = ["ENV_TRACE_CACHE", "CachedRun", "TraceCache", "cache_and_key", "trace_cache"]

ENV_TRACE_CACHE = "FAULTLAB_TRACE_CACHE"
_OFF = ("off", "0", "no", "false")
MAX_ENTRY = 32 << 20  # bytes: a larger run is not cached
MAX_TOTAL = 512 << 20  # bytes the folder may hold before the oldest entries go
# The fields of each kind of file fact the strace parser makes
# (filemodel.py's `emit`), besides "fact", "after" and "via": strings are
# paths, the rest whole numbers >= 0.
_FACT_FIELDS: dict[str, frozenset[str]] = {
    "create": frozenset({"file", "size"}),
    "write": frozenset({"file", "offset", "bytes", "w"}),
    "fsync": frozenset({"file", "size"}),
    "dirsync": frozenset({"dir"}),
    "truncate": frozenset({"file", "size"}),
    "link": frozenset({"file", "source"}),
    "rename": frozenset({"file", "source"}),
    "unlink": frozenset({"file"}),
}
_PATH_FIELDS = frozenset({"file", "dir", "source"})
# Stands for the old run's reference folder in a stored entry: a path cannot
# hold a NUL, so no real path is ever mistaken for it.
_WHERE = "\u0000faultlab-reference\u0000"


@dataclass(frozen=True, slots=True)
class CachedRun:
    """What a traced reference run leaves that a later run may reuse."""

    trace: tuple[ProbeReport, ...]
    log_bytes: bytes
    ledger: tuple[LedgerRecord, ...]
    stderr: str
    syscalls: tuple[dict[str, Any], ...]
    written: tuple[bytes, ...]
    trace_unsupported: tuple[str, ...]


class TraceCache:
    """One cache folder (made 0700 if missing; refused if it is a link,
    not the user's own, or writable by others)."""

    def __init__(self, folder: Path, *, max_total: int = MAX_TOTAL) -> None:
        self.folder = folder
        self.max_total = max_total
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    def _open_folder(self) -> int | None:
        """An fd of the folder, or None if it is not safe to use."""
        with contextlib.suppress(OSError):
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return None
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() or info.st_mode & 0o022:
            os.close(fd)
            return None
        return fd

    def load(self, key: str, where: Path, backend: str) -> CachedRun | None:
        """The entry of `key`, its paths made `where`'s; None if there is
        none or it is not one faultlab could have written."""
        folder = self._open_folder()
        if folder is None:
            return None
        try:
            data = _read_entry(folder, f"{key}.json")
        finally:
            os.close(folder)
        run = None
        if data is not None:
            text = data.replace(_escaped(_WHERE), _escaped(str(where)))
            with contextlib.suppress(ValueError, TypeError, KeyError, orjson.JSONDecodeError):
                run = _validated(orjson.loads(text), key, backend)
        with self._lock:
            self.hits += run is not None
            self.misses += run is None
        return run

    def store(self, key: str, where: Path, run: CachedRun, backend: str) -> None:
        """Keep `run` under `key` (its paths under `where` made a placeholder)."""
        entry = {
            "format": FORMAT, "key": key, "backend": backend,
            "trace": list(run.trace), "syscalls": list(run.syscalls),
            "written": [base64.b64encode(w).decode() for w in run.written],
            "log": base64.b64encode(run.log_bytes).decode(), "ledger": list(run.ledger),
            "stderr": run.stderr, "unsupported": list(run.trace_unsupported),
        }  # fmt: skip
        try:
            data = orjson.dumps(entry)
        except TypeError:  # a value orjson cannot write: not cached
            return
        # the longer first: one may hold the other (a /tmp that is a link)
        for path in sorted({str(where), os.path.realpath(where)}, key=len, reverse=True):
            data = data.replace(_escaped(path), _escaped(_WHERE))
        if len(data) > MAX_ENTRY:
            return
        folder = self._open_folder()
        if folder is None:
            return
        try:
            _write_entry(folder, f"{key}.json", data)
            self._prune(folder)
        finally:
            os.close(folder)

    def _prune(self, folder: int) -> None:
        """Remove the oldest entries until the folder holds at most max_total bytes."""
        entries = []
        for name in os.listdir(folder):
            with contextlib.suppress(OSError):
                info = os.stat(name, dir_fd=folder, follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and name.endswith(".json"):
                    entries.append((info.st_mtime_ns, info.st_size, name))
        total = sum(size for _, size, _ in entries)
        for _, size, name in sorted(entries):
            if total <= self.max_total:
                break
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=folder)
                total -= size


def _escaped(text: str) -> bytes:
    """`text` as it stands inside a JSON string."""
    return orjson.dumps(text)[1:-1]


def _read_entry(folder: int, name: str) -> bytes | None:
    """The entry's bytes: a regular file of ours, never through a link,
    never blocking, at most MAX_ENTRY bytes; None otherwise."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            return None
        if info.st_size > MAX_ENTRY:
            return None
        chunks, left = [], MAX_ENTRY + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= MAX_ENTRY else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _write_entry(folder: int, name: str, data: bytes) -> None:
    """Write atomically: a private temp file, then a rename over the old entry
    (a corrupt one, or a link in its place, is replaced, never followed)."""
    temp = f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        fd = os.open(temp, flags, 0o600, dir_fd=folder)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=folder)


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("not a list of strings")
    return tuple(value)


def _objects(value: object) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ValueError("not a list of objects")
    return value


def _fact_ok(fact: dict[str, Any], reports: int, written: int) -> bool:
    """Whether `fact` is one the strace parser could have made: its kind's
    fields and no other, paths as strings, sizes as whole numbers, placed
    within the trace (`after`), its bytes (`w`) among the written buffers."""
    fields = _FACT_FIELDS.get(fact.get("fact"))  # type: ignore[arg-type]
    if fields is None or fact.keys() != fields | {"fact", "after", "via"}:
        return False
    if fact["via"] != "strace" or type(fact["after"]) is not int:
        return False
    for name in fields:
        value = fact[name]
        if name in _PATH_FIELDS and not isinstance(value, str):
            return False
        if name not in _PATH_FIELDS and (type(value) is not int or value < 0):
            return False
    return 0 <= fact["after"] <= reports and ("w" not in fact or fact["w"] < written)


def _validated(entry: object, key: str, backend: str) -> CachedRun | None:
    """The run an entry holds if it is one a traced run could have left:
    its key and backend, its fields' types, every boundary report named and
    numbered, every file fact placed within the trace and pointing at a
    written buffer that exists.  None otherwise."""
    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        return None
    if entry.get("key") != key or entry.get("backend") != backend:
        return None
    trace = _objects(entry["trace"])
    if any(report_problem(report) is not None for report in trace):
        return None
    written = tuple(base64.b64decode(w, validate=True) for w in _strings(entry["written"]))
    syscalls = _objects(entry["syscalls"])
    if not all(_fact_ok(fact, len(trace), len(written)) for fact in syscalls):
        return None
    unsupported = _strings(entry["unsupported"])
    if unsupported and syscalls:  # a run the file model cannot judge has no facts
        return None
    if not isinstance(entry["stderr"], str) or not isinstance(entry["log"], str):
        return None
    ledger = tuple(r for r in map(ledger_record, _objects(entry["ledger"])) if r is not None)
    return CachedRun(
        trace=tuple(cast(ProbeReport, r) for r in trace), log_bytes=base64.b64decode(entry["log"],
        validate=True), ledger=ledger, stderr=entry["stderr"], syscalls=tuple(syscalls),
        written=written, trace_unsupported=unsupported,
    )  # fmt: skip


_caches: dict[Path, TraceCache] = {}
_caches_lock = threading.Lock()


def trace_cache() -> TraceCache | None:
    """The cache the environment names (FAULTLAB_TRACE_CACHE: unset, the
    default folder; off, none; else a folder), one object per folder."""
    chosen = os.environ.get(ENV_TRACE_CACHE)
    if chosen is not None and chosen.strip().lower() in (*_OFF, ""):
        return None
    if chosen is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = Path(base) / "faultlab" / "traces"
    else:
        folder = Path(chosen).expanduser()
        if not folder.is_absolute():
            raise LabUsageError(f"{ENV_TRACE_CACHE}={chosen!r}: expected off or an absolute folder")
    with _caches_lock:
        return _caches.setdefault(folder, TraceCache(folder))


def cache_and_key(
    target: Target, scenario_path: str, *, backend: str, spawn: str, strace: str | None
) -> tuple[TraceCache | None, str | None]:
    """The cache of traced runs and this run's key, where a traced run is
    wanted (`strace` found) and the cache is on; (None, None) otherwise."""
    if strace is None:
        return None, None
    cache = trace_cache()
    if cache is None:
        return None, None
    return cache, trace_key(target, scenario_path, backend=backend, spawn=spawn, strace=strace)
