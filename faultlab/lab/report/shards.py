# A report handed back to faultlab (a shard for `report merge`), read as
# untrusted input: its folder is the run directory given (or its `latest`,
# only when that names a run folder beside it), its three files are read
# bounded and never through a link (faultlab.userfiles) and checked against
# the one schema (shardschema.py); `replay`, `--lf` and the findings read a
# report through `read_shard` too.  Its artifact folders are copied
# file by file: regular files only (a symlink, a FIFO, a device is refused,
# never followed or opened), each at most MAX_ARTIFACT_BYTES and all of a
# merge at most MAX_MERGE_BYTES (docs/cli.md, "Limits").
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.campaigns.explore import Shard, parse_shard
from faultlab.lab.errors import LabUsageError
from faultlab.lab.report.shardschema import (
    RECORD_FIELDS,
    RUN_FIELDS,
    SUMMARY_FIELDS,
    ShardSchemaError,
    check_fields,
)
from faultlab.userfiles import (
    MAX_LOG_BYTES,
    MAX_TARGET_BYTES,
    UserFileError,
    copy_user_file,
    file_kind,
    read_bytes,
)

__all__ = [
    "MAX_ARTIFACT_BYTES",
    "MAX_JSON_BYTES",
    "MAX_MERGE_BYTES",
    "CopyBudget",
    "ReportMissing",
    "ShardFiles",
    "copy_tree",
    "read_shard",
]

MAX_JSON_BYTES = 16 << 20  # summary.json, run.json
MAX_ARTIFACT_BYTES = MAX_TARGET_BYTES  # one file of a failure's folder
MAX_MERGE_BYTES = 4 << 30  # every artifact a merge copies, all shards together
_MAX_ENTRIES = 100_000  # files and folders a merge copies


class ReportMissing(LabUsageError):
    """The folder holds no report (one of its three files is missing)."""


@dataclass(frozen=True, slots=True)
class ShardFiles:
    """A report's run directory and its checked files."""

    path: Path
    summary: dict[str, Any]
    info: dict[str, Any]
    records: list[dict[str, Any]]
    given: Path  # the folder as the user named it (in messages)

    @property
    def kind(self) -> str:
        return str(self.summary.get("kind", "explore"))

    @property
    def shard(self) -> Shard | None:
        shard = self.summary.get("shard")
        if shard is None:
            return None
        try:
            return parse_shard(str(shard))
        except LabUsageError as exc:
            raise ShardSchemaError(f"report {self.given}: summary.json: field 'shard': {exc}") \
                from None  # fmt: skip


@dataclass
class CopyBudget:
    """What a merge may still copy (bytes, entries)."""

    bytes_left: int = MAX_MERGE_BYTES
    entries_left: int = _MAX_ENTRIES
    copied: list[str] = field(default_factory=list)


def _run_dir(given: Path) -> Path:
    """The run directory of `given`: itself, or its `latest` when that is a
    link to a folder beside it (as faultlab writes it), nothing else."""
    if os.path.lexists(given / "summary.json"):
        return given
    latest = given / "latest"
    if not os.path.islink(latest):
        return given  # its missing summary.json is said by the reader
    name = os.readlink(latest)
    if "/" in name or name in ("", ".", ".."):
        raise LabUsageError(f"{given}: its 'latest' points outside the report folder ({name!r})")
    return given / name


def _json(path: Path, shard: Path, limit: int) -> Any:
    try:
        data = read_bytes(path, what="report file", limit=limit, follow=False)
    except UserFileError as exc:
        if exc.problem.startswith("no such"):
            raise ReportMissing(f"{shard}: not a faultlab report ({path.name} is missing)") \
                from None  # fmt: skip
        raise LabUsageError(f"report {shard}: {path.name}: {exc.problem}") from None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ShardSchemaError(f"report {shard}: {path.name}: not JSON: {exc}") from None


def read_shard(given: Path) -> ShardFiles:
    """The report at `given`, checked; ShardSchemaError / LabUsageError
    name the report, the file, the line and the field."""
    run = _run_dir(given)
    summary = _json(run / "summary.json", given, MAX_JSON_BYTES)
    check_fields(summary, SUMMARY_FIELDS, f"report {given}: summary.json")
    info = _json(run / "run.json", given, MAX_JSON_BYTES)
    check_fields(info, RUN_FIELDS, f"report {given}: run.json")
    try:
        data = read_bytes(run / "cases.jsonl", what="report file", limit=MAX_LOG_BYTES,
                          follow=False)  # fmt: skip
    except UserFileError as exc:
        if exc.problem.startswith("no such"):
            raise ReportMissing(f"{given}: not a faultlab report (cases.jsonl is missing)") \
                from None  # fmt: skip
        raise LabUsageError(f"report {given}: cases.jsonl: {exc.problem}") from None
    records = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        where = f"report {given}: cases.jsonl:{number}"
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ShardSchemaError(f"{where}: not JSON: {exc}") from None
        check_fields(record, RECORD_FIELDS, where)
        records.append(record)
    return ShardFiles(run.resolve(), summary, info, records, given)


def copy_tree(source: Path, into: Path, budget: CopyBudget, *, root: Path,
              shard: Path) -> None:  # fmt: skip
    """Copy the folder `source` of the report in `root` (named `shard` in
    messages) into `into`, merged with what is there: folders and regular
    files only, bounded by `budget`; anything else is a LabUsageError naming
    it, before it is opened."""
    try:
        info = os.lstat(source)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        raise LabUsageError(f"report {shard}: {source.relative_to(root)}: is "
                            f"{file_kind(info.st_mode)}, not a folder")  # fmt: skip
    into.mkdir(parents=True, exist_ok=True)
    with os.scandir(source) as entries:
        found = sorted(entries, key=lambda entry: entry.name)
    for entry in found:
        budget.entries_left -= 1
        if budget.entries_left < 0:
            raise LabUsageError(f"report {shard}: more than {_MAX_ENTRIES} files to merge")
        path = Path(entry.path)
        shown = path.relative_to(root)
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode):
            copy_tree(path, into / entry.name, budget, root=root, shard=shard)
            continue
        if not stat.S_ISREG(mode):
            raise LabUsageError(f"report {shard}: {shown}: is {file_kind(mode)}; a report holds "
                                "only regular files and folders (nothing was merged)")  # fmt: skip
        size = entry.stat(follow_symlinks=False).st_size
        if size > MAX_ARTIFACT_BYTES:
            raise LabUsageError(f"report {shard}: {shown}: is {size} bytes, more than the "
                                f"{MAX_ARTIFACT_BYTES}-byte limit for a report artifact "
                                "(docs/cli.md)")  # fmt: skip
        if size > budget.bytes_left:
            raise LabUsageError(f"report {shard}: {shown}: the merge would copy more than "
                                f"{MAX_MERGE_BYTES} bytes of artifacts (docs/cli.md)")  # fmt: skip
        try:  # bounded again: the file may grow while it is copied
            budget.bytes_left -= copy_user_file(path, into / entry.name, what="report artifact",
                                                limit=min(MAX_ARTIFACT_BYTES, budget.bytes_left))
        except UserFileError as exc:
            raise LabUsageError(f"report {shard}: {shown}: {exc.problem}") from None
        budget.copied.append(str(shown))

