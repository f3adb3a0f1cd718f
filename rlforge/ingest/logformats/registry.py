"""The log formats by name: the built-ins and third parties' (a `LogFormat` subclass,
registered with `register_log_format` from a module named in the `rlforge.log_formats`
entry-point group), making one from a name or a header format string, and detecting one
from a file's first lines."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Sequence

import polars as pl

from rlforge import plugins
from rlforge.errors import UserError
from rlforge.ingest.logformats.access import AccessFormat
from rlforge.ingest.logformats.base import LogFormat
from rlforge.ingest.logformats.cri import CriFormat
from rlforge.ingest.logformats.header import HeaderFormat
from rlforge.ingest.logformats.jsonl import DOCKER_KEYS, DockerFormat, JsonFormat
from rlforge.ingest.logformats.plain import PlainFormat
from rlforge.ingest.logformats.syslog import SyslogFormat
from rlforge.ingest.logformats.timestamps import share

ENTRY_POINT_GROUP = "rlforge.log_formats"


@dataclass(frozen=True)
class LogFormatInfo:
    """A named log format: `factory(keys)` makes its parser (`keys`: the user's field
    mapping, for formats that take one). A format with a `detect_rank` is tried by
    `detect`, lowest rank first: it wins when it parses more of the sample lines than
    those tried before it (and at least half)."""

    name: str
    version: int
    description: str
    factory: Callable[[dict[str, str] | None], LogFormat]
    aliases: tuple[str, ...] = ()
    detect_rank: int | None = None  # None: only used when named


_REGISTRY: dict[str, LogFormatInfo] = {}


def register_log_format(info: LogFormatInfo) -> LogFormatInfo:
    """Add a log format (a higher version of a name replaces a lower one)."""
    return plugins.add_versioned(_REGISTRY, info, "log format")


for _info in (
    LogFormatInfo("jsonl", 1, "JSON objects from structured loggers", JsonFormat, ("json",)),
    LogFormatInfo("syslog", 1, "RFC 5424 and RFC 3164 syslog", lambda keys: SyslogFormat(),
                  detect_rank=2),
    LogFormatInfo("access", 1, "nginx/Apache common and combined access logs",
                  lambda keys: AccessFormat(), ("nginx", "apache", "combined"), detect_rank=3),
    LogFormatInfo("docker", 1, "Docker json-file container logs", lambda keys: DockerFormat()),
    LogFormatInfo("cri", 1, "Kubernetes containerd/CRI-O container logs",
                  lambda keys: CriFormat(), detect_rank=1),
    LogFormatInfo("plain", 1, "anything else, one record per line", lambda keys: PlainFormat()),
):
    register_log_format(_info)

NAMED_FORMATS = tuple(_REGISTRY)  # the built-in names


def log_formats() -> dict[str, LogFormatInfo]:
    """Every log format by name (built-ins and plug-ins)."""
    plugins.load(ENTRY_POINT_GROUP)
    return dict(_REGISTRY)


def make_format(spec: str, keys: dict[str, str] | None = None) -> LogFormat:
    """A format from its name (or an alias) or a header format string."""
    for info in log_formats().values():
        if spec == info.name or spec in info.aliases:
            return info.factory(keys)
    if "<" in spec:
        return HeaderFormat(spec)
    raise UserError(f"unknown log format {spec!r}; valid: auto, {', '.join(log_formats())}, "
                    "or a header format string such as '<Date> <Time> <Level> <Component>: "
                    "<Content>'")


def detect(sample: Sequence[str], keys: dict[str, str] | None = None) -> LogFormat:
    """The format most of the sample lines parse in (`plain` when none fits half)."""
    lines = pl.Series([s for s in sample if s.strip()], dtype=pl.String)
    if lines.len() == 0:
        return PlainFormat()
    objs = []
    for s in lines.head(50).to_list():
        try:
            obj = json.loads(s)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            objs.append(obj)
    if objs and len(objs) >= 0.5 * min(lines.len(), 50):
        if sum(DOCKER_KEYS <= set(o) for o in objs) >= 0.8 * len(objs):
            return DockerFormat()
        return JsonFormat(keys)
    best: LogFormat = PlainFormat()
    best_score = 0.5
    ranked = sorted((i for i in log_formats().values() if i.detect_rank is not None),
                    key=lambda i: i.detect_rank or 0)
    for info in ranked:
        fmt = info.factory(keys)
        score = share(fmt._parse(lines)["ok"])
        if score > best_score:
            best, best_score = fmt, score
    return best
