# Agent adapters: the small declarative TOML file that says how one real agent
# (Claude Code, Codex, an Agents SDK app, ...) is installed, configured,
# launched for a first prompt and for a resume, and where its own session log
# lives.  Loading validates every field once, so a case never fails halfway
# on a typo; `render` fills the templates for one case.  The format is
# documented in docs/agents.md.
from __future__ import annotations

import os
import platform
import re
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.naming import DEFAULT_MCP_SERVER, check_tool_pattern
from faultlab.lab.read.userreaders import is_user_reader
from faultlab.userfiles import (
    MAX_SCENARIO_BYTES,
    TARGET_FILE_REFUSED,
    TargetFileError,
    UserFileError,
    read_bytes,
)

__all__ = ["API_KINDS", "BUNDLED_DIR", "INSTALL_KINDS", "READERS", "Adapter", "CaseVars",
           "FileSpec", "InstallSpec", "Launch", "SessionSpec", "bundled_adapters", "find_adapter",
           "load_adapter", "parse_adapter", "platform_variables", "render", "write_files"]

Api = Literal["anthropic", "chat", "responses", "gemini"]
InstallKind = Literal["npm", "pip", "builtin", "local"]
API_KINDS: tuple[Api, ...] = ("anthropic", "chat", "responses", "gemini")
# `local`: an app of the user's own, set up by them beside its adapter file.
INSTALL_KINDS: tuple[InstallKind, ...] = ("npm", "pip", "builtin", "local")
# The session-log readers faultlab.lab.read.agentlogs has (`faultlab-log`:
# faultlab's own log format, read by faultlab.lab.read.jsonl).
READERS = ("claude-code", "codex", "openai-agents-sqlite", "deepseek-harness", "gemini-cli",
           "qwen-code", "opencode-sqlite", "openai-chat-jsonl", "faultlab-log")
BUNDLED_DIR = Path(__file__).resolve().parent / "bundled"
APPS_DIR = Path(__file__).resolve().parent / "apps"
# The MCP server's name in every config (Claude Code's tools: mcp__faultlab__X).
MCP_SERVER_NAME = DEFAULT_MCP_SERVER

# Per-case template variables; each also has a `_json` form (its JSON
# encoding, quotes included), and `{mcp_args}` as a whole argv element
# splices the list.  `binary`, `install`, `apps` come from the installation.
CASE_VARIABLES = frozenset({"model_url", "model_key", "model", "mcp_command", "mcp_args",
                            "mcp_argv",
                            "mcp_config", "mcp_server", "home", "workdir", "session_id",
                            "prompt", "python", "binary", "install", "apps"})  # fmt: skip
# Only for `install.binary`: which platform package holds the native binary.
INSTALL_VARIABLES = frozenset({"npm_platform", "rust_triple"})
_VAR = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TOP = {"name", "version", "description", "api", "model", "cwd", "first", "resume", "install",
        "env", "files", "session", "tool_name"}  # fmt: skip
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass(frozen=True, slots=True)
class InstallSpec:
    """How the agent gets onto the machine: `packages` are pinned specs
    (npm `name@version`, pip `name==version`; none for `builtin` and
    `local`), `binary` the executable's path relative to the install directory
    (for `local`, the adapter file's folder; for `builtin`, a template such as
    `{python}`)."""

    kind: InstallKind
    packages: tuple[str, ...]
    binary: str


@dataclass(frozen=True, slots=True)
class FileSpec:
    """A config file written before each launch (both templated)."""

    path: str
    content: str


@dataclass(frozen=True, slots=True)
class SessionSpec:
    """Where the agent's own session log lands (a templated glob) and which
    reader understands it: a bundled one of faultlab.lab.read.agentlogs, a
    user's `module:function` (read/userreaders.py), or None (the files are
    copied into the report, not read)."""

    glob: str
    reader: str | None


@dataclass(frozen=True, slots=True)
class Adapter:
    name: str
    version: str
    api: Api
    install: InstallSpec
    first: tuple[str, ...]
    resume: tuple[str, ...]
    session: SessionSpec
    description: str = ""
    model: str = "faultlab-model"
    cwd: str = "{workdir}"
    env: tuple[tuple[str, str], ...] = ()
    files: tuple[FileSpec, ...] = ()
    source: str = "<string>"
    # How the agent names faultlab's MCP tools on the model wire, e.g.
    # "{mcp_server}_{tool}" (read/naming.py); none: the built-in rule.
    tool_name: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CaseVars:
    """What the lab gives one case: its servers, private directories and
    the session id (a UUID) the agent is asked to use where it takes one."""

    model_url: str
    mcp_command: str
    mcp_args: tuple[str, ...]
    home: Path
    workdir: Path
    session_id: str
    prompt: str
    python: str = sys.executable
    model_key: str = "faultlab"  # the model server's secret, as an API key


@dataclass(frozen=True, slots=True)
class Launch:
    """One rendered launch: run `argv` in `cwd` with `env` added to a minimal
    base environment, after writing `files` (the MCP JSON config included)."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    files: tuple[tuple[Path, str], ...]
    session_glob: str
    reader: str | None
    mcp_config: Path
    # The case's folders (home, workdir): no file is written outside them.
    roots: tuple[Path, ...] = ()


def _line_of(text: str, key: str, section: str | None) -> int | None:
    """The line a key is on (after its section header, if any); None if not found."""
    lines = text.splitlines()
    start = 0
    if section is not None:
        header = re.compile(r"^\s*\[\[?\s*" + re.escape(section) + r"\s*\]\]?\s*$")
        start = next((i + 1 for i, line in enumerate(lines) if header.match(line)), 0)
    pattern = re.compile(r"^\s*\"?" + re.escape(key) + r"\"?\s*=")
    for i in range(start, len(lines)):
        if pattern.match(lines[i]):
            return i + 1
    if section is not None and start:
        return start
    return None


class _Checker:
    def __init__(self, source: str, text: str) -> None:
        self.source, self.text = source, text

    def fail(self, key: str, why: str, section: str | None = None) -> LabUsageError:
        line = _line_of(self.text, key.rsplit(".", 1)[-1], section)
        where = f"{self.source}:{line}" if line else self.source
        dotted = f"{section}.{key}" if section else key
        return LabUsageError(f"{where}: field '{dotted}': {why}")

    def string(self, table: Mapping[str, Any], key: str, section: str | None = None, *,
               default: str | None = None) -> str:  # fmt: skip
        value = table.get(key, default)
        if value is None:
            raise self.fail(key, "missing (a string is required)", section)
        if not isinstance(value, str) or not value:
            raise self.fail(key, f"must be a non-empty string, not {value!r}", section)
        return value

    def argv(self, table: Mapping[str, Any], key: str) -> tuple[str, ...]:
        value = table.get(key)
        if (not isinstance(value, list) or not value
                or not all(isinstance(v, str) for v in value)):  # fmt: skip
            raise self.fail(key, "must be a non-empty list of strings (an argv)")
        return tuple(value)

    def templates(self, value: str, key: str, section: str | None,
                  allowed: frozenset[str]) -> None:  # fmt: skip
        for name in _VAR.findall(value):
            base = name.removesuffix("_json")
            if name not in allowed and base not in allowed:
                known = ", ".join(sorted(allowed))
                raise self.fail(key, f"unknown template variable {{{name}}} (known: {known})",
                                section)  # fmt: skip


def parse_adapter(text: str, *, source: str = "<string>") -> Adapter:
    """Validate an adapter file's text; LabUsageError names the file, line and field."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LabUsageError(f"{source}: not valid TOML: {exc}") from None
    c = _Checker(source, text)
    for key in data:
        if key not in _TOP:
            raise c.fail(key, f"unknown field (known: {', '.join(sorted(_TOP))})")
    name = c.string(data, "name")
    if not _NAME.match(name):
        raise c.fail("name", f"must be lower-case letters, digits and '-', not {name!r}")
    version = c.string(data, "version")
    api = c.string(data, "api")
    if api not in API_KINDS:
        raise c.fail("api", f"must be one of {', '.join(API_KINDS)}, not {api!r}")
    install = _install(c, data.get("install"), version)
    env = data.get("env", {})
    if not isinstance(env, dict):
        raise c.fail("env", "must be a table of strings")
    for key, value in env.items():
        if not isinstance(value, str):
            raise c.fail(key, f"must be a string, not {type(value).__name__} (top-level fields "
                         "such as first/resume must come before the [env] table)", "env")
    for key, value in env.items():
        c.templates(value, key, "env", CASE_VARIABLES)
    files = _files(c, data.get("files", []))
    first, resume = c.argv(data, "first"), c.argv(data, "resume")
    for key, argv in (("first", first), ("resume", resume)):
        for item in argv:
            c.templates(item, key, None, CASE_VARIABLES)
    session = _session(c, data.get("session"))
    tool_name = _tool_name(c, data.get("tool_name", []))
    cwd = c.string(data, "cwd", default="{workdir}")
    c.templates(cwd, "cwd", None, CASE_VARIABLES)
    return Adapter(name=name, version=version, api=api,
                   install=install, first=first, resume=resume, session=session,
                   description=str(data.get("description", "")),
                   model=c.string(data, "model", default="faultlab-model"), cwd=cwd,
                   env=tuple(env.items()), files=files, source=source,
                   tool_name=tool_name)  # fmt: skip


def _tool_name(c: _Checker, value: Any) -> tuple[str, ...]:
    patterns = [value] if isinstance(value, str) else value
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise c.fail("tool_name", "must be a pattern such as \"{mcp_server}_{tool}\" or a list "
                     "of them")  # fmt: skip
    for pattern in patterns:
        problem = check_tool_pattern(pattern)
        if problem is not None:
            raise c.fail("tool_name", f"{pattern!r}: {problem}")
    return tuple(patterns)


def _install(c: _Checker, table: Any, version: str) -> InstallSpec:
    if not isinstance(table, dict):
        raise c.fail("install", "missing: an [install] table is required")
    for key in table:
        if key not in ("kind", "packages", "binary"):
            raise c.fail(key, "unknown field (known: binary, kind, packages)", "install")
    kind = c.string(table, "kind", "install")
    if kind not in INSTALL_KINDS:
        raise c.fail("kind", f"must be one of {', '.join(INSTALL_KINDS)}, not {kind!r}",
                     "install")  # fmt: skip
    packages = table.get("packages", [])
    if not isinstance(packages, list) or not all(isinstance(p, str) for p in packages):
        raise c.fail("packages", "must be a list of pinned package specs", "install")
    if kind == "local" and packages:
        raise c.fail("packages", "a local app installs nothing (its own setup, e.g. npm ci, "
                     "is yours): leave packages out", "install")  # fmt: skip
    if kind in ("npm", "pip"):
        if not packages:
            raise c.fail("packages", f"a {kind} install needs at least one package", "install")
        pin = "==" if kind == "pip" else "@"
        for spec in packages:
            if pin not in spec.lstrip("@"):
                raise c.fail("packages", f"{spec!r} is not pinned (write NAME{pin}VERSION)",
                             "install")  # fmt: skip
        if not packages[0].endswith(pin + version):
            raise c.fail("packages", f"the first package {packages[0]!r} must be pinned to "
                         f"version {version!r}", "install")  # fmt: skip
    binary = c.string(table, "binary", "install")
    allowed = INSTALL_VARIABLES | (CASE_VARIABLES if kind == "builtin" else frozenset())
    c.templates(binary, "binary", "install", allowed)
    return InstallSpec(kind, tuple(packages), binary)


def _files(c: _Checker, items: Any) -> tuple[FileSpec, ...]:
    if not isinstance(items, list):
        raise c.fail("files", "must be an array of tables ([[files]] path = ..., content = ...)")
    out = []
    for item in items:
        if not isinstance(item, dict) or set(item) - {"path", "content"}:
            raise c.fail("files", "each [[files]] has exactly `path` and `content`")
        path, content = c.string(item, "path", "files"), c.string(item, "content", "files")
        c.templates(path, "path", "files", CASE_VARIABLES)
        if not path.startswith(("{home}/", "{workdir}/")) or ".." in path.split("/"):
            raise c.fail("path", f"{path!r} must lie in the case's folders: start with "
                         "{home}/ or {workdir}/, without '..'", "files")  # fmt: skip
        c.templates(content, "content", "files", CASE_VARIABLES)
        out.append(FileSpec(path, content))
    return tuple(out)


def _session(c: _Checker, table: Any) -> SessionSpec:
    if not isinstance(table, dict):
        raise c.fail("session", "missing: a [session] table (glob, reader) is required")
    glob = c.string(table, "glob", "session")
    c.templates(glob, "glob", "session", CASE_VARIABLES)
    for key in table:
        if key not in ("glob", "reader"):
            raise c.fail(key, "unknown field (known: glob, reader)", "session")
    if "reader" not in table:
        return SessionSpec(glob, None)  # copied into the report, not read
    reader = c.string(table, "reader", "session")
    if reader not in READERS and not is_user_reader(reader):
        raise c.fail("reader", f"must be one of {', '.join(READERS)} or a reader of your own "
                     f"as module:function, not {reader!r}", "session")  # fmt: skip
    return SessionSpec(glob, reader)


def load_adapter(path: str | Path) -> Adapter:
    where = Path(path)
    try:  # faultlab.userfiles: a FIFO, a device, a loop or a huge file is refused by name
        text = read_bytes(where, what="agent adapter", limit=MAX_SCENARIO_BYTES).decode("utf-8")
    except UserFileError as exc:
        raise LabUsageError(f"{where}: cannot read the agent adapter: {exc.problem}") from None
    except UnicodeDecodeError as exc:
        raise LabUsageError(f"{where}: not UTF-8 (byte offset {exc.start})") from None
    return parse_adapter(text, source=str(where))


def bundled_adapters() -> list[Adapter]:
    return [load_adapter(p) for p in sorted(BUNDLED_DIR.glob("*.toml"))]


def find_adapter(name_or_path: str) -> Adapter:
    """A bundled adapter by name, or a user's adapter file by path."""
    if name_or_path.endswith(".toml") or "/" in name_or_path:
        return load_adapter(name_or_path)
    where = BUNDLED_DIR / f"{name_or_path}.toml"
    if not where.is_file():
        names = ", ".join(sorted(p.stem for p in BUNDLED_DIR.glob("*.toml")))
        raise LabUsageError(f"unknown agent {name_or_path!r} (bundled: {names}; or give a "
                            "path to an adapter .toml)")  # fmt: skip
    return load_adapter(where)


def platform_variables() -> dict[str, str]:
    """The npm platform package suffix and the Rust target of this machine."""
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine().lower())
    triple_arch = "x86_64" if arch == "x64" else "aarch64"
    system = sys.platform if sys.platform != "darwin" else "darwin"
    triple = (f"{triple_arch}-unknown-linux-musl" if system.startswith("linux")
              else f"{triple_arch}-apple-darwin")  # fmt: skip
    return {"npm_platform": f"{'linux' if system.startswith('linux') else system}-{arch}",
            "rust_triple": triple}  # fmt: skip


def _fill(template: str, values: Mapping[str, str | tuple[str, ...]]) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in values:
            value = values[name]
            return value if isinstance(value, str) else orjson.dumps(list(value)).decode()
        base = name.removesuffix("_json")
        if base in values:
            raw = values[base]
            return orjson.dumps(raw if isinstance(raw, str) else list(raw)).decode()
        raise LabUsageError(f"template variable {{{name}}} has no value here")

    return _VAR.sub(one, template)


def render(adapter: Adapter, case: CaseVars, *, resume: bool,
           install_dir: Path | None = None, binary: Path | None = None) -> Launch:  # fmt: skip
    """Fill the adapter's templates for one case (first prompt or resume)."""
    mcp_config = case.home / ".faultlab" / "mcp.json"
    values: dict[str, str | tuple[str, ...]] = {
        "model_url": case.model_url, "model_key": case.model_key, "model": adapter.model,
        "mcp_command": case.mcp_command,
        "mcp_args": case.mcp_args, "mcp_argv": (case.mcp_command, *case.mcp_args),
        "mcp_config": str(mcp_config), "mcp_server": MCP_SERVER_NAME,
        "home": str(case.home), "workdir": str(case.workdir), "session_id": case.session_id,
        "prompt": case.prompt, "python": case.python, "apps": str(APPS_DIR),
        "install": str(install_dir or ""),
    }  # fmt: skip
    if binary is None and adapter.install.kind == "builtin":
        values["binary"] = _fill(adapter.install.binary, values)
    elif binary is None:
        raise LabUsageError(f"agent {adapter.name} {adapter.version} is not installed "
                            f"(run: faultlab agents install {adapter.name})")  # fmt: skip
    else:
        values["binary"] = str(binary)
    argv: list[str] = []
    for item in adapter.resume if resume else adapter.first:
        if item in ("{mcp_args}", "{mcp_argv}"):  # a list as a whole element: spliced
            argv.extend(values[item[1:-1]])
        else:
            argv.append(_fill(item, values))
    mcp_json = orjson.dumps({"mcpServers": {MCP_SERVER_NAME: {
        "type": "stdio", "command": case.mcp_command, "args": list(case.mcp_args), "env": {}}}},
        option=orjson.OPT_INDENT_2).decode()  # fmt: skip
    files = [(mcp_config, mcp_json)]
    files += [(Path(_fill(f.path, values)), _fill(f.content, values)) for f in adapter.files]
    return Launch(argv=tuple(argv), env={k: _fill(v, values) for k, v in adapter.env},
                  cwd=Path(_fill(adapter.cwd, values)), files=tuple(files),
                  session_glob=_fill(adapter.session.glob, values), reader=adapter.session.reader,
                  mcp_config=mcp_config, roots=(case.home, case.workdir))  # fmt: skip


def write_files(launch: Launch) -> None:
    """Create the case's directories and config files (before each launch).
    Each file must land in the case's folders once every link is resolved
    (an earlier run of the agent may have put a link in its home), and is
    never written through a link itself."""
    launch.cwd.mkdir(parents=True, exist_ok=True)
    roots = [os.path.realpath(root) for root in launch.roots]
    for path, content in launch.files:
        # Checked before its folder is made: a link on the way would have
        # mkdir create folders outside too.  (realpath resolves the parts
        # that exist; the rest cannot be links, and `..` is refused on load.)
        where = os.path.realpath(path.parent)
        if roots and not any(os.path.commonpath([where, root]) == root for root in roots):
            raise TargetFileError(path, f"would be written outside the case's folders (its "
                                  f"folder resolves to {where})", TARGET_FILE_REFUSED)  # fmt: skip
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(path, flags, 0o600)
        except OSError as exc:  # a link the agent put there, a folder, ...
            raise TargetFileError(path, f"cannot be written: {exc.strerror}",
                                  TARGET_FILE_REFUSED) from None  # fmt: skip
        with open(fd, "w", encoding="utf-8") as file:
            file.write(content)
