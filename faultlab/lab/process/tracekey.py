# The key of a cached traced reference run (tracecache.py): what must be the
# same for an earlier run's system-call trace to stand for a new one.  The
# target's code (the files its command names, digested: its program, a
# script and the script's sibling sources, a `-m` module's package; faultlab's
# own sources, which hold the reference runtime, the zoo's patches' base and
# the lab's strace parser), the scenario's bytes, the run's backend, policy,
# spawn mode and strace, and the environment the target gets.  Choices and
# their limits: docs/decisions.md, "Trace cache".
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import orjson

from faultlab.lab.process.environment import trimmed_environment
from faultlab.lab.process.target import Target

__all__ = ["FORMAT", "trace_key"]

FORMAT = 1  # bumped when an entry's layout or meaning changes
_WHOLE = 64 << 20  # files up to this size are digested whole; larger: size, mtime, inode
_SIBLINGS = 200  # sibling sources of a script digested at most (more: the rest by stat)
_FAULTLAB = Path(__file__).resolve().parents[2]
_own: list[str] = []  # faultlab's own digest, once per process
_digests: dict[tuple[str, int, int, int, int], str] = {}  # by path and stat


def _file_digest(path: str) -> str:
    """A regular file's content digest (its stat for a very large file);
    "" if it is not a regular file.  Remembered per process while the
    file's stat is the same (the interpreter is digested once, not per
    scenario)."""
    try:
        info = os.stat(path)
    except OSError:
        return ""
    if not stat.S_ISREG(info.st_mode):
        return ""
    if info.st_size > _WHOLE:  # a 300 MB agent binary: its identity, not its bytes
        return f"stat:{info.st_size}:{info.st_mtime_ns}:{info.st_ino}"
    seen = (path, info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)
    if seen in _digests:
        return _digests[seen]
    _digests[seen] = digest = _content_digest(path)
    return digest


def _content_digest(path: str) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except OSError:
        return ""
    return digest.hexdigest()


def _tree_files(root: Path, suffixes: tuple[str, ...]) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):  # os.walk does not follow links to folders
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(suffixes):
                yield Path(folder) / name


def _tree_digest(root: Path, suffixes: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for path in _tree_files(root, suffixes):
        digest.update(f"{path.relative_to(root)}\0{_file_digest(str(path))}\n".encode())
    return digest.hexdigest()


def _faultlab_digest() -> str:
    """faultlab's own Python sources: the reference runtime, the base the
    zoo's scripts patch, and the parser that turned strace's text into facts."""
    if not _own:
        _own.append(_tree_digest(_FAULTLAB, (".py",)))
    return _own[0]


def _named_files(target: Target) -> dict[str, str]:
    """Every file the command names, digested: the program (found on PATH),
    each later word that is a file, with the sources beside a script (same
    suffix, the same folder: a Node or Python program's own modules), and
    the package of a `-m MODULE`."""
    command = list(target.command) + ([target.script] if target.script else [])
    found: dict[str, str] = {}
    program = shutil.which(command[0]) or command[0]
    found[os.path.realpath(program)] = _file_digest(program)
    for index, word in enumerate(command[1:], start=1):
        if command[index - 1] == "-m":
            found[f"-m {word}"] = _module_digest(word)
            continue
        if not os.path.isfile(word):
            continue
        path = Path(word).resolve()
        found[str(path)] = _file_digest(str(path))
        if path.suffix:
            siblings = sorted(p for p in path.parent.glob(f"*{path.suffix}") if p != path)
            for sibling in siblings[:_SIBLINGS]:
                found[str(sibling)] = _file_digest(str(sibling))
            for sibling in siblings[_SIBLINGS:]:
                info = sibling.stat()
                found[str(sibling)] = f"stat:{info.st_size}:{info.st_mtime_ns}"
    return found


def _module_digest(name: str) -> str:
    """The sources of `-m NAME`'s top-level package, as the lab finds it
    (faultlab's own modules are in faultlab's digest)."""
    top = name.partition(".")[0]
    if top == "faultlab":
        return "faultlab"
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return "not found"
    if spec is None or spec.origin is None:
        return "not found"
    origin = Path(spec.origin)
    if spec.submodule_search_locations:  # a package: all of its sources
        return _tree_digest(origin.parent, (".py", ".so", ".pyd"))
    return _file_digest(str(origin))


def trace_key(
    target: Target, scenario_path: str, *, backend: str, spawn: str, strace: str
) -> str | None:
    """The cache key of a traced reference run of `scenario_path` by
    `target`; None if the scenario cannot be read (then nothing is cached)."""
    scenario = _file_digest(scenario_path)
    if not scenario:
        return None
    parts = {
        "format": FORMAT,
        "faultlab": _faultlab_digest(),
        "command": list(target.command),
        "script": target.script,
        "code": _named_files(target),
        "scenario": scenario,
        "backend": backend,
        "policy": target.policy,
        # a forked reference runtime and an exec'd one make other calls
        "spawn": spawn if (target.reference or target.script) else "exec",
        "strace": [strace, _file_digest(strace)],
        "environment": trimmed_environment(),
        "cwd": None if target.reference else os.getcwd(),  # a --target runs in the user's cwd
    }
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()
