"""`jsonl`: JSON objects from structured loggers (common keys found by themselves, or a
key mapping); `docker`: Docker json-file container logs (`log`, `stream`, `time`)."""

from __future__ import annotations

import json
from typing import Sequence

import polars as pl

from rlforge.errors import UserError
from rlforge.ingest.logformats.base import CONTINUATION, LogFormat
from rlforge.ingest.logformats.levels import normalise_level, sniff_level, sniff_missing

# JSON keys tried, in order, for each role (a dotted name reaches into nested objects).
JSON_KEYS = {
    "ts_text": ("@timestamp", "timestamp", "time", "ts", "@t", "Time", "datetime", "date", "t",
                "Timestamp", "eventTime"),
    "level": ("level", "severity", "@l", "lvl", "loglevel", "log.level", "Level.Name", "Level",
              "levelname", "level_name", "Severity", "severity_text"),
    "message": ("msg", "message", "@m", "Message", "text", "log", "event", "MessageTemplate",
                "@mt", "body"),
    "component": ("logger", "loggerName", "logger_name", "component", "module", "caller",
                  "context", "Function", "source", "category", "name", "log.logger"),
    "host": ("host", "hostname", "MachineName", "host.name", "Host", "node", "server"),
}
DOCKER_KEYS = {"log", "stream", "time"}


def _json_path(key: str) -> str:
    return "$" + "".join(f"[{json.dumps(part)}]" for part in key.split("."))


def _has_key(obj: dict, key: str) -> bool:
    node = obj
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return not isinstance(node, (dict, list)) or key in ("message", "msg")


class JsonFormat(LogFormat):
    """One JSON object per line; `keys` maps roles (ts, level, message, component, host)
    to keys, the rest is found from a sample of lines."""

    def __init__(self, keys: dict[str, str] | None = None, name: str = "jsonl"):
        super().__init__()
        self.name = name
        self.user_keys = {("ts_text" if k in ("ts", "time", "timestamp") else k): v
                          for k, v in (keys or {}).items()}
        unknown = set(self.user_keys) - set(JSON_KEYS)
        if unknown:
            raise UserError(f"unknown log key role(s) {', '.join(sorted(unknown))}; valid: "
                            "ts, level, message, component, host")
        self.keys: dict[str, str] | None = None

    def choose_keys(self, sample: Sequence[str]) -> None:
        objs = []
        for line in sample:
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(obj, dict):
                objs.append(obj)
        keys = {}
        for role, candidates in JSON_KEYS.items():
            if role in self.user_keys:
                keys[role] = self.user_keys[role]
                continue
            best = max(candidates, key=lambda k: (sum(_has_key(o, k) for o in objs),
                                                  -candidates.index(k)), default=None)
            if best and any(_has_key(o, best) for o in objs):
                keys[role] = best
        self.keys = keys

    def continuation(self, lines: pl.Series) -> pl.Series:
        return lines.str.contains(CONTINUATION) & ~lines.str.starts_with("{")

    def raw_levels(self, sample: pl.Series) -> tuple[str, pl.Series] | None:
        if self.keys is None:
            self.choose_keys(sample.head(200).to_list())
        key = (self.keys or {}).get("level")
        if key is None or sample.len() == 0:
            return None
        return f"key {key!r}", sample.str.json_path_match(_json_path(key))

    def _parse(self, lines: pl.Series) -> pl.DataFrame:
        if self.keys is None:
            self.choose_keys(lines.head(200).to_list())
        assert self.keys is not None
        is_obj = lines.str.contains(r"^\s*\{.*\}\s*$")
        valid = is_obj & lines.str.json_path_match("$").is_not_null()
        cols = {"fields": pl.select(pl.when(valid).then(lines)).to_series()}
        for role in ("ts_text", "level", "message", "component", "host"):
            key = self.keys.get(role)
            cols[role] = (lines.str.json_path_match(_json_path(key)) if key else
                          pl.Series([None] * len(lines), dtype=pl.String))
        frame = pl.DataFrame(cols)
        level = sniff_missing(normalise_level(frame["level"]), frame["message"])
        return frame.select(
            pl.lit(valid).alias("ok"), "ts_text", "host", "component",
            pl.col("message").fill_null(pl.lit(lines)),  # no message key: the whole object
        ).with_columns(level.alias("level"), frame["fields"], pl.lit(False).alias("continues"))


_ANSI = r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"


class DockerFormat(JsonFormat):
    """Docker json-file logs; a `log` without a trailing newline continues in the next
    line (Docker splits long lines)."""

    def __init__(self):
        super().__init__({"ts": "time", "message": "log"}, name="docker")

    def _parse(self, lines: pl.Series) -> pl.DataFrame:
        self.keys = {"ts_text": "time", "message": "log"}
        out = super()._parse(lines)
        msg = out["message"]
        stream = lines.str.json_path_match("$.stream")
        continues = out["ok"] & ~msg.str.ends_with("\n") & (msg != "")
        clean = msg.str.strip_suffix("\n").str.strip_suffix("\r")
        fields = pl.select(pl.when(stream.is_not_null()).then(
            pl.struct(stream.alias("stream")).struct.json_encode())).to_series()
        return out.with_columns(clean.alias("message"), continues.alias("continues"),
                                fields.alias("fields"),
                                sniff_level(clean.str.replace_all(_ANSI, "")).alias("level"))
