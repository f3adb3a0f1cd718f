"""One configuration resolver for every command.

Precedence, highest first: command-line flag > `RLFORGE_*` environment variable >
`rlforge.toml` > built-in default. Every setting rlforge knows is declared once in
`SETTINGS` (data, not code), so `rlforge init` can write a commented file and
`rlforge config show` can say where each value came from.

Secrets never live in the config file: a setting such as `run.api_key_env` holds the
*name* of the environment variable that carries the key, and `secret_from_env` reads it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar, dataclass_transform

from rlforge.errors import ConfigError

CONFIG_FILE = "rlforge.toml"


@dataclass(frozen=True)
class Setting:
    """One configurable value: its dotted key, default, type and help text."""

    key: str
    default: Any
    help: str
    kind: type = str
    choices: tuple[str, ...] = ()

    @property
    def env(self) -> str:
        """The environment variable that overrides this setting."""
        return "RLFORGE_" + self.key.upper().replace(".", "_")


# The registry. Keep keys grouped by the command that reads them; `rlforge init` writes
# the sections in this order.
SETTINGS: list[Setting] = [
    Setting("db", "rlforge.duckdb", "DuckDB file every command reads and writes"),
    Setting("cache_dir", "", "cache for prepared environments (default: $XDG_CACHE_HOME/rlforge "
            "or /var/tmp/rlforge-cache)"),
    Setting("redact", True, "redact PII and secrets before anything is written", bool),
    Setting("redaction.off", [], "redaction kinds left as they are, e.g. [\"ADDRESS\"] "
            "(kinds: README, Redaction)", list),
    Setting("redaction.patterns", {}, "extra patterns redacted first: KIND = regex, e.g. "
            "{ TICKET_REF = \"TCK-[0-9]+\" }", dict),
    Setting("redaction.recognizer", "", "a model-based name recognizer run after the rules, "
            "NAME:MODEL: spacy:<installed model>, gliner:<model dir>, presidio:<spaCy model> "
            "or a plug-in's; never downloaded (default: the rules alone)"),
    Setting("redaction.phone_regions", ["US", "GB", "DE", "FR", "NL", "IT", "ES", "PT", "PL"], "regions tried, "
            "in order, for phone numbers written without +country", list),
    Setting("ingest.tickets.format", "auto", "ticket export format: auto, a built-in "
            "(csv, json, jsonl, zendesk, jira-csv, jira-json) or a plug-in's"),
    Setting("ingest.tickets.mapping", {}, "normalised field -> column of your export "
            "(e.g. body = \"description\")", dict),
    Setting("ingest.tickets.on_conflict", "quarantine", "same ticket id with different content",
            choices=("quarantine", "replace")),
    Setting("ingest.commits.rev", "--all", "revision range to ingest (git rev-list syntax)"),
    Setting("ingest.logs.format", "auto", "log format: auto, jsonl, syslog, access, docker, "
            "or a header format string such as '<Date> <Time> <Level> <Component>: <Content>'"),
    Setting("ingest.logs.masks", [], "regexes masked in log content before template mining", list),
    Setting("ingest.logs.keys", {}, "JSON-lines key mapping, e.g. message = \"event\"", dict),
    Setting("ingest.logs.unparsed", "quarantine", "lines matching no format",
            choices=("quarantine", "message-only")),
    Setting("sandbox.mode", "bwrap", "how untrusted code runs: bwrap, or none (unsafe, explicit)",
            choices=("bwrap", "none")),
    Setting("sandbox.workers", 0, "concurrent sandboxes (0 = 2 x cores)", int),
    Setting("sandbox.timeout", 60.0, "default wall-clock seconds before a sandboxed command's "
            "whole process tree is killed (a task's own timeout wins)", float),
    Setting("sandbox.memory_mb", 1024, "memory of a whole sandbox, MB: a memory cgroup over "
            "its processes, page cache and tmpfs pages, no swap; also each process's address-"
            "space limit (0 = none)", int),
    Setting("sandbox.cpus", 1.0, "CPU quota of a whole sandbox, in CPUs (0 = none)", float),
    Setting("sandbox.max_processes", 128, "processes and threads a sandboxed command may have", int),
    Setting("sandbox.output_limit", 1_000_000, "bytes kept from each of stdout and stderr", int),
    Setting("sandbox.tmp_mb", 256, "size of a sandbox's private /tmp, and of its /dev/shm, MB", int),
    Setting("sandbox.tmp_inodes", 50_000, "files and directories /tmp (and /dev/shm) may hold", int),
    Setting("sandbox.workspace_mb", 1024, "size of the capped file system a sandbox's writable "
            "directories (workspace, logs) are copied onto, MB", int),
    Setting("sandbox.workspace_inodes", 100_000, "files and directories that file system may "
            "hold", int),
    Setting("sandbox.copy_file_mb", 16, "largest file copied back out of a sandbox, MB "
            "(larger: submission too large)", int),
    Setting("sandbox.copy_total_mb", 256, "bytes of changed files copied back out of a "
            "sandbox in all, MB", int),
    Setting("sandbox.copy_files", 20_000, "changed files copied back out of a sandbox in all", int),
    Setting("sandbox.host_uid", 2_147_000_000, "as root: the first unprivileged host uid "
            "sandboxes run as (never mapped onto root)", int),
    Setting("sandbox.host_uids", 64, "as root: how many host uids from sandbox.host_uid on "
            "sandboxes use, one per sandbox running at once", int),
    Setting("tasks.out", "tasks", "directory build-tasks writes task directories to"),
    Setting("tasks.seed", 0, "seed for task generation", int),
    Setting("tasks.templates", "", "directory of templates overriding the packaged ones"),
    Setting("tasks.generator_options", {}, "per-generator options, e.g. "
            "{ \"tickets.triage\" = { fields = [\"category\"] } }", dict),
    Setting("tasks.executor", "local", "where build-tasks and validate run their sandboxed "
            "checks: local (this machine) or ray (a worker on every node of a Ray cluster, "
            "ray.address)"),
    Setting("tasks.repair.last", 300, "commits.repair: most recent commits per repository "
            "considered (0 = all)", int),
    Setting("tasks.repair.max_files", 10, "commits.repair: most files a commit may change", int),
    Setting("tasks.repair.max_lines", 400, "commits.repair: most lines a commit may add and "
            "remove", int),
    Setting("tasks.repair.language", "python", "commits.repair: language of the source "
            "changes (the test command and result format must fit it)"),
    Setting("tasks.repair.file_hints", False, "commits.repair: name the files the fix touches "
            "in the instruction", bool),
    Setting("tasks.repair.p2p_scope", "suite", "commits.repair: pass-to-pass tests from the "
            "whole suite or only the test files the commit touches", choices=("suite", "files")),
    Setting("tasks.repair.max_p2p", 0, "commits.repair: most pass-to-pass tests per task; 0 (the "
            "default) runs every test that passes at the parent and with the fix, as a sample "
            "lets a patch break the tests left out", int),
    Setting("tasks.repair.per_test_timeout", 15.0, "commits.repair: seconds before a running "
            "test counts as hung (failed)", float),
    Setting("tasks.repair.forgeable_runners", [], "commits.repair: test runners whose results "
            "the tested code can forge (go) that may still make tasks; by default such a "
            "runner's commits are dropped. For evaluating models you trust, never for "
            "training: a policy can learn to forge a pass", list),
    Setting("tasks.repair.repos", {}, "commits.repair: per-repository settings by path or "
            "directory name, e.g. { parse = { test_command = \"python -m pytest -x\", "
            "result_format = \"pytest-junit\", requirements = [\"pytest\"] } }", dict),
    Setting("run.base_url", "", "OpenAI-compatible endpoint (empty = embedded local model)"),
    Setting("run.model", "", "model name sent to the endpoint"),
    Setting("run.adapter", "", "a LoRA adapter (GGUF) the embedded model is served with, e.g. "
            "one examples/gguf_adapter.py wrote from a trained checkpoint (not with run.base_url)"),
    Setting("run.api_key_env", "OPENAI_API_KEY", "NAME of the environment variable holding "
            "the API key (the key itself is never stored)"),
    Setting("run.samples", 1, "samples per task (a GRPO group)", int),
    Setting("run.concurrency", 8, "concurrent rollouts", int),
    Setting("run.temperature", 0.0, "sampling temperature", float),
    Setting("run.max_tokens", 512, "max tokens per completion", int),
    Setting("run.request_timeout", 60.0, "seconds before a request times out", float),
    Setting("run.min_pass_rate", 0.0, "exit 3 when the pass rate is below this", float),
    Setting("run.max_infra_error_rate", 0.2, "exit 4 when infra errors exceed this rate "
            "(or no rollout is valid)", float),
    Setting("run.executor", "local", "where rollouts run: local (this machine) or ray (a "
            "worker on every node of a Ray cluster, ray.address)"),
    Setting("run.runs_dir", "runs", "directory holding runs/<run_id>/"),
    Setting("run.top_p", 1.0, "nucleus sampling mass (1.0 = not sent)", float),
    Setting("run.stop", [], "stop sequences sent with every chat request", list),
    Setting("run.extra_body", {}, "extra fields sent with every chat request, e.g. "
            "{ top_k = 20 } for vLLM", dict),
    Setting("run.request_concurrency", 0, "requests in flight to the endpoint at most "
            "(0 = run.concurrency)", int),
    Setting("run.max_retries", 4, "retries per request on connection errors, timeouts, "
            "408/409/429/5xx", int),
    Setting("run.retry_budget", 0.2, "retries allowed client-wide per request sent, so a "
            "failing endpoint is not flooded with retries", float),
    Setting("run.seed", 0, "base seed; each (task, sample) gets its own seed derived from it", int),
    Setting("run.max_turns", 20, "policy turns per multi-turn (terminal) rollout", int),
    Setting("run.command_timeout", 30.0, "seconds before one of the policy's commands is killed",
            float),
    Setting("run.observation_chars", 4000, "characters of a command's output shown to the "
            "policy (head and tail kept)", int),
    Setting("run.time_budget", 0.0, "seconds per rollout before it ends as a timeout "
            "(0 = the task's [agent] timeout_sec)", float),
    Setting("run.generator_concurrency", {}, "per-generator limit on rollouts in flight, e.g. "
            "{ \"commits.repair\" = 4 }", dict),
    Setting("run.tool_protocol", "auto", "how a multi-turn policy runs commands: OpenAI tool "
            "calls (tools), fenced ```bash blocks (text), or tools accepting text too (auto)",
            choices=("auto", "tools", "text")),
    Setting("run.judge", True, "score reply tasks with the judge build-tasks checked on them "
            "(TASKS_DIR/judge.json): a `judge` component that moves the reward, never the "
            "pass", bool),
    Setting("run.judge_api_key_env", "RLFORGE_JUDGE_API_KEY", "NAME of the environment "
            "variable holding the judge endpoint's API key (unset: none sent)"),
    Setting("links.key_patterns", [], "extra regexes finding ticket keys in commit messages; "
            "the first group is the ticket's id as exported, e.g. \"SUPPORT-([0-9]+)\"", list),
    Setting("links.repos", {}, "repository (path or directory name) -> the ticket origin "
            "whose numbers its commits use, e.g. { app = \"zendesk\" }: a bare \"#53\" there "
            "is that help desk's ticket whenever it was committed, and no other origin's", dict),
    Setting("curriculum.stages", [], "the schedule of --difficulty auto: a list of "
            "{ until = MEAN_PASS_RATE, difficulty = \"LOW:HIGH\" }, the first stage whose until "
            "is above the model's latest mean pass rate applies (empty: rlforge's default, "
            "see rlforge.difficulty.SCHEDULE)", list),
    Setting("ray.address", "", "Ray cluster of executor = \"ray\": empty = a private instance on "
            "this machine, on 127.0.0.1 only; HOST:PORT = a cluster's head; auto = Ray's "
            "discovery (RAY_ADDRESS, or the cluster `ray start` runs here)"),
    Setting("ray.task_files", "auto", "how task directories reach Ray workers: auto = by path "
            "where a node has them (shared filesystem), else a copy through Ray's object store; "
            "ship = always a copy", choices=("auto", "ship")),
]

_BY_KEY = {s.key: s for s in SETTINGS}


def setting(key: str) -> Setting:
    """Look up a declared setting; unknown keys are a bug in the caller."""
    return _BY_KEY[key]


def _coerce(s: Setting, raw: Any, origin: str) -> Any:
    """Turn a raw value (string from env, TOML value, flag) into the setting's type."""
    try:
        if s.kind is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if s.kind in (int, float):
            return s.kind(raw)
        if s.kind in (list, dict):
            value = json.loads(raw) if isinstance(raw, str) else raw
            if not isinstance(value, s.kind):
                raise ValueError(raw)
            return value
        value = str(raw)
    except (ValueError, TypeError):
        raise ConfigError(
            f"{s.key} from {origin}: {raw!r} is not a valid {s.kind.__name__}"
        ) from None
    if s.choices and value not in s.choices and not (s.key == "ingest.logs.format"):
        raise ConfigError(f"{s.key} from {origin}: {value!r} is not one of {', '.join(s.choices)}")
    return value


def _dig(tree: dict, dotted: str) -> tuple[bool, Any]:
    node: Any = tree
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    # A table that is itself a section with sub-settings is not a value of this key,
    # unless the setting is declared as a dict.
    if isinstance(node, dict) and _BY_KEY[dotted].kind is not dict:
        return False, None
    return True, node


@dataclass
class Config:
    """Resolved configuration: file contents, environment, and flags given on the CLI."""

    file_path: Path | None = None
    file_values: dict = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    flags: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path | None = None, env: dict[str, str] | None = None) -> "Config":
        """Read the config file (explicit path, `RLFORGE_CONFIG`, or ./rlforge.toml if present)."""
        env = dict(os.environ) if env is None else env
        explicit = path or env.get("RLFORGE_CONFIG")
        candidate = Path(explicit) if explicit else Path(CONFIG_FILE)
        file_path: Path | None = candidate
        values: dict = {}
        if candidate.is_file():
            try:
                values = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{candidate}: not valid TOML ({exc}); fix or remove it") from None
        elif explicit:
            raise ConfigError(f"config file {candidate} does not exist; run `rlforge init` to create one")
        else:
            file_path = None
        return cls(file_path=file_path, file_values=values, env=env)

    def with_flags(self, **flags: Any) -> "Config":
        """Record flag values (None means 'not given') and return self for chaining."""
        for key, value in flags.items():
            dotted = key.replace("__", ".")
            if value is not None:
                self.flags[dotted] = value
        return self

    def resolve(self, key: str, flag: Any = None) -> tuple[Any, str]:
        """Return (value, source) where source is flag, env VAR, file PATH, or default."""
        s = _BY_KEY[key]
        if flag is not None:
            return _coerce(s, flag, "flag"), "flag"
        if key in self.flags:
            return _coerce(s, self.flags[key], "flag"), "flag"
        if s.env in self.env:
            return _coerce(s, self.env[s.env], s.env), f"env {s.env}"
        found, raw = _dig(self.file_values, key)
        if found:
            return _coerce(s, raw, str(self.file_path)), f"file {self.file_path}"
        return s.default, "default"

    def get(self, key: str, flag: Any = None) -> Any:
        """The resolved value of a setting."""
        return self.resolve(key, flag)[0]

    def settings(self) -> "Settings":
        """Every setting resolved once, as typed sections: what the CLI hands down."""
        sections: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for attr, cls in _SECTIONS.items():
            values: dict[str, Any] = {}
            given = set()
            for name in _section_fields(cls):
                key = _key(cls, name)
                values[name], sources[key] = self.resolve(key)
                if sources[key] != "default":
                    given.add(name)
            sections[attr] = cls(**values, given=frozenset(given))
        return Settings(**sections, env=dict(self.env), sources=sources)

    def secret_from_env(self, name_key: str) -> str | None:
        """Read a secret from the environment variable whose *name* the setting holds."""
        var = self.get(name_key)
        return self.env.get(var) if var else None

    def explain(self) -> list[dict[str, Any]]:
        """Every setting with its resolved value and where it came from."""
        rows = []
        for s in SETTINGS:
            value, source = self.resolve(s.key)
            rows.append({"key": s.key, "value": value, "source": source, "env": s.env})
            if s.key.endswith("_env"):
                present = bool(value) and value in self.env
                rows.append({"key": s.key[: -len("_env")] + " (secret)",
                             "value": mask(self.env.get(value, "")) if present else "(not set)",
                             "source": f"env {value}" if present else "-", "env": value})
        return rows

    def unknown_file_keys(self) -> list[str]:
        """Keys present in the config file that rlforge does not know (likely typos)."""
        unknown: list[str] = []

        def walk(node: dict, prefix: str) -> None:
            for k, v in node.items():
                dotted = f"{prefix}{k}"
                if dotted in _BY_KEY:
                    continue
                if isinstance(v, dict) and any(key.startswith(dotted + ".") for key in _BY_KEY):
                    walk(v, dotted + ".")
                else:
                    unknown.append(dotted)

        walk(self.file_values, "")
        return unknown


def mask(secret: str) -> str:
    """Show that a secret is set without revealing it."""
    if not secret:
        return ""
    return "****" if len(secret) < 12 else f"{secret[:3]}…{'*' * 4}"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)


def render_default_file() -> str:
    """A commented rlforge.toml listing every setting at its default."""
    lines = [
        "# rlforge configuration. Precedence: flag > RLFORGE_* env > this file > default.",
        "# Uncomment a line to change it. Secrets do not go here: name their env variable.",
        "",
    ]
    section = None
    for s in SETTINGS:
        parts = s.key.split(".")
        head, leaf = ".".join(parts[:-1]), parts[-1]
        if head != section:
            if section is not None or head:
                lines.append("")
            if head:
                lines.append(f"[{head}]")
            section = head
        choices = f" ({' | '.join(s.choices)})" if s.choices else ""
        lines.append(f"# {s.help}{choices}; env {s.env}")
        lines.append(f"# {leaf} = {_toml_value(s.default)}")
    return "\n".join(lines) + "\n"


def default_cache_dir(settings: "Settings") -> Path:
    """Where prepared environments live; outside /root so sandboxed code can use them."""
    configured = settings.general.cache_dir
    if configured:
        return Path(configured)
    xdg = settings.env.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "rlforge"
    return Path("/var/tmp/rlforge-cache")


# --- typed sections ----------------------------------------------------------------------
# One frozen dataclass per section of `SETTINGS`: its fields are the section's settings,
# each `= TABLE`, which the table's default replaces; `Config.settings` fills them.

_S = TypeVar("_S")
#: A section field's default: the one `SETTINGS` declares for it.
TABLE: Any = object()


@dataclass_transform(frozen_default=True, kw_only_default=True)
def _section(prefix: str) -> Callable[[type[_S]], type[_S]]:
    """A frozen dataclass of the settings `<prefix>.<field>`, defaults from the table; a
    field the table lacks (or a setting of the section left out) fails at import."""

    def make(cls: type[_S]) -> type[_S]:
        names = [n for n in cls.__annotations__ if n != "given"]
        declared = {_join(prefix, n) for n in names}
        table = {s.key for s in SETTINGS if s.key.rpartition(".")[0] == prefix}
        if declared != table:
            raise TypeError(f"section {prefix or '(top level)'} does not match SETTINGS: "
                            f"{sorted(declared ^ table)}")
        for name in names:
            if cls.__dict__.get(name) is not TABLE:
                raise TypeError(f"{cls.__name__}.{name}: the default is the table's (= TABLE)")
            default = _BY_KEY[_join(prefix, name)].default
            setattr(cls, name, field(default_factory=_copier(default))
                    if isinstance(default, (list, dict)) else default)
        cls.__annotations__["given"] = frozenset[str]
        cls.prefix = prefix  # type: ignore[attr-defined]
        return dataclass(frozen=True, kw_only=True)(cls)

    return make


def _copier(default: Any) -> Callable[[], Any]:
    return lambda: copy.deepcopy(default)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _key(cls: type, name: str) -> str:
    return _join(cls.prefix, name)  # type: ignore[attr-defined]


def _section_fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.name != "given"]


class _Given:
    #: The fields set by a flag, an `RLFORGE_*` variable or rlforge.toml (not defaults).
    given: frozenset[str] = frozenset()


@_section("")
class GeneralSettings(_Given):
    """The database, the cache of prepared environments, redaction on or off."""

    db: str = TABLE
    cache_dir: str = TABLE
    redact: bool = TABLE


@_section("redaction")
class RedactionSettings(_Given):
    off: list[str] = TABLE
    patterns: dict[str, str] = TABLE
    phone_regions: list[str] = TABLE
    recognizer: str = TABLE


@_section("ingest.tickets")
class TicketIngestSettings(_Given):
    format: str = TABLE
    mapping: dict[str, str] = TABLE
    on_conflict: str = TABLE


@_section("ingest.commits")
class CommitIngestSettings(_Given):
    rev: str = TABLE


@_section("ingest.logs")
class LogIngestSettings(_Given):
    format: str = TABLE
    masks: list[str] = TABLE
    keys: dict[str, str] = TABLE
    unparsed: str = TABLE


@_section("sandbox")
class SandboxSettings(_Given):
    """The mode and limits of every sandbox (`rlforge.sandbox.sandbox_settings`)."""

    mode: str = TABLE
    workers: int = TABLE
    timeout: float = TABLE
    memory_mb: int = TABLE
    cpus: float = TABLE
    max_processes: int = TABLE
    output_limit: int = TABLE
    tmp_mb: int = TABLE
    tmp_inodes: int = TABLE
    workspace_mb: int = TABLE
    workspace_inodes: int = TABLE
    copy_file_mb: int = TABLE
    copy_total_mb: int = TABLE
    copy_files: int = TABLE
    host_uid: int = TABLE
    host_uids: int = TABLE


@_section("tasks")
class TaskSettings(_Given):
    out: str = TABLE
    seed: int = TABLE
    templates: str = TABLE
    generator_options: dict[str, dict[str, Any]] = TABLE
    executor: str = TABLE


@_section("tasks.repair")
class RepairSettings(_Given):
    """commits.repair's selection and test settings (`rlforge.tasks.generators.repair.options`)."""

    last: int = TABLE
    max_files: int = TABLE
    max_lines: int = TABLE
    language: str = TABLE
    file_hints: bool = TABLE
    p2p_scope: str = TABLE
    max_p2p: int = TABLE
    per_test_timeout: float = TABLE
    forgeable_runners: list[str] = TABLE
    repos: dict[str, dict[str, Any]] = TABLE


@_section("run")
class RunSettings(_Given):
    """The policy, sampling, loop and gate settings of `rlforge run`."""

    base_url: str = TABLE
    model: str = TABLE
    adapter: str = TABLE
    api_key_env: str = TABLE
    samples: int = TABLE
    concurrency: int = TABLE
    temperature: float = TABLE
    max_tokens: int = TABLE
    request_timeout: float = TABLE
    min_pass_rate: float = TABLE
    max_infra_error_rate: float = TABLE
    executor: str = TABLE
    runs_dir: str = TABLE
    top_p: float = TABLE
    stop: list[str] = TABLE
    extra_body: dict[str, Any] = TABLE
    request_concurrency: int = TABLE
    max_retries: int = TABLE
    retry_budget: float = TABLE
    seed: int = TABLE
    max_turns: int = TABLE
    command_timeout: float = TABLE
    observation_chars: int = TABLE
    time_budget: float = TABLE
    generator_concurrency: dict[str, int] = TABLE
    tool_protocol: str = TABLE
    judge: bool = TABLE
    judge_api_key_env: str = TABLE


@_section("links")
class LinkSettings(_Given):
    key_patterns: list[str] = TABLE
    repos: dict[str, str] = TABLE


@_section("curriculum")
class CurriculumSettings(_Given):
    stages: list[dict[str, Any]] = TABLE


@_section("ray")
class RaySettings(_Given):
    address: str = TABLE
    task_files: str = TABLE


@dataclass(frozen=True)
class Settings:
    """Every setting, resolved once (`Config.settings`), by section; the CLI makes it and
    hands each layer the section it needs. `env` is the environment it was resolved in:
    secrets are read from it by name (`secret`), never stored; `sources` says where each
    dotted key's value came from (flag, env VAR, file PATH, default)."""

    general: GeneralSettings = field(default_factory=GeneralSettings)
    redaction: RedactionSettings = field(default_factory=RedactionSettings)
    tickets: TicketIngestSettings = field(default_factory=TicketIngestSettings)
    commits: CommitIngestSettings = field(default_factory=CommitIngestSettings)
    logs: LogIngestSettings = field(default_factory=LogIngestSettings)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    tasks: TaskSettings = field(default_factory=TaskSettings)
    repair: RepairSettings = field(default_factory=RepairSettings)
    run: RunSettings = field(default_factory=RunSettings)
    links: LinkSettings = field(default_factory=LinkSettings)
    curriculum: CurriculumSettings = field(default_factory=CurriculumSettings)
    ray: RaySettings = field(default_factory=RaySettings)
    env: Mapping[str, str] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)

    def secret(self, name: str) -> str | None:
        """The secret in the environment variable called `name` (None: unset or no name)."""
        return self.env.get(name) if name else None

    def record(self) -> dict[str, dict[str, Any]]:
        """Every setting's value and source, by dotted key (a run's plan keeps it)."""
        out = {}
        for attr, cls in _SECTIONS.items():
            section = getattr(self, attr)
            for name in _section_fields(cls):
                key = _key(cls, name)
                out[key] = {"value": getattr(section, name),
                            "source": self.sources.get(key, "default")}
        return {s.key: out[s.key] for s in SETTINGS}


#: Settings' attribute of each section.
_SECTIONS: dict[str, type] = {
    "general": GeneralSettings, "redaction": RedactionSettings, "tickets": TicketIngestSettings,
    "commits": CommitIngestSettings, "logs": LogIngestSettings, "sandbox": SandboxSettings,
    "tasks": TaskSettings, "repair": RepairSettings, "run": RunSettings, "links": LinkSettings,
    "curriculum": CurriculumSettings, "ray": RaySettings}
