"""task.toml parsed fast: rlforge's own flat files with `json.loads`, any other with
tomllib (see `read_toml`)."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

_TABLE = re.compile(r"\[([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)\]")


class _NotFlat(Exception):
    pass


def read_toml(text: str) -> dict[str, Any]:
    """Parse TOML; the flat files rlforge renders take a fast path, anything else tomllib.

    A run reads every task's task.toml before it starts, and tomllib spends ~0.3 ms on one.
    The files rlforge writes hold only `[table]` headers and `key = value` lines whose
    values are JSON-compatible scalars or arrays (see `rlforge.tasks.render.toml_value`);
    those lines are parsed with `json.loads` (~8x faster). The first line outside that
    subset (comments after values, inline tables, dates, multi-line values, dotted or
    quoted keys, repeated keys or tables, ...) sends the whole file to tomllib.
    """
    try:
        return _read_flat_toml(text)
    except _NotFlat:
        return tomllib.loads(text)


def _read_flat_toml(text: str) -> dict[str, Any]:
    root: dict[str, Any] = {}
    table = root
    tables: set[str] = set()
    slots: list[tuple[dict, str]] = []
    raw: list[str] = []
    for line in text.split("\n"):
        if not line or line[0] == "#":
            continue
        if line[0] == "[":
            found = _TABLE.fullmatch(line)
            if not found or found.group(1) in tables:
                raise _NotFlat
            tables.add(found.group(1))
            table = root
            for part in found.group(1).split("."):
                table = table.setdefault(part, {})
                if not isinstance(table, dict):
                    raise _NotFlat
            continue
        key, sep, value = line.partition(" = ")
        if not sep or key in table or not (key.isascii() and key.replace("-", "_").isidentifier()):
            raise _NotFlat
        table[key] = None  # taken (a repeated key is not flat)
        slots.append((table, key))
        raw.append(value)
    joined = "[" + ",".join(raw) + "]"
    try:  # every value at once: one JSON array
        values = json.loads(joined)
    except ValueError:
        raise _NotFlat from None
    if len(values) != len(slots):  # a value held a top-level comma, e.g. `1, 2`
        raise _NotFlat
    if ("{" in joined or "null" in joined) and not _toml_compatible(values):
        raise _NotFlat
    for (table, key), value in zip(slots, values):
        table[key] = value
    return root


def _toml_compatible(value: Any) -> bool:
    """A JSON value that means the same written as TOML (no objects, no null)."""
    if isinstance(value, list):
        return all(_toml_compatible(v) for v in value)
    return value is not None and not isinstance(value, dict)
