"""Third-party extensions: entry points loaded once, a broken one skipped with a warning.

A package extends rlforge by declaring entry points in a group of `GROUPS` (e.g.
`rlforge.generators`); each names a module or an object, and importing it registers what
it defines with the registry of that extension point. `load(group)` imports a group's
entry points once per process:

- a plugin that fails to import is skipped, with a warning that names it and says why,
  and the others still load; `RLFORGE_PLUGINS_STRICT=1` makes that an error instead;
- `RLFORGE_NO_PLUGINS=1` loads none (the built-ins only), as when a broken plugin must
  be bypassed to run at all.

`problems()` lists what was skipped (shown by `build-tasks --list`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from rlforge.errors import UnknownName, UserError

GROUPS = {
    "rlforge.generators": "task generators (`rlforge.tasks.registry.register`)",
    "rlforge.verifiers": "verifier kinds (`rlforge.verify.kinds.register_kind`)",
    "rlforge.log_formats": "log formats "
                           "(`rlforge.ingest.logformats.registry.register_log_format`)",
    "rlforge.ticket_formats": "ticket export formats "
                              "(`rlforge.ingest.ticket_formats.register_format`)",
    "rlforge.recognizers": "model-based person-name recognizers "
                           "(`rlforge.ingest.redaction.recognizers.register_recognizer`)",
    "rlforge.test_runners": "language test runners of repair tasks "
                            "(`rlforge.tasks.generators.repair.runners.register_runner`)",
}
OFF_ENV = "RLFORGE_NO_PLUGINS"
STRICT_ENV = "RLFORGE_PLUGINS_STRICT"

logger = logging.getLogger("rlforge.plugins")


@dataclass(frozen=True)
class Problem:
    group: str
    name: str
    value: str
    error: str

    def __str__(self) -> str:
        return f"plug-in {self.name!r} ({self.value}, {self.group}) was skipped: {self.error}"


_loaded: set[str] = set()
_problems: list[Problem] = []


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def enabled() -> bool:
    return not _flag(OFF_ENV)


def load(group: str) -> list[EntryPoint]:
    """Import every entry point of `group` (once per process); those that loaded."""
    if group not in GROUPS:
        raise ValueError(f"unknown plug-in group {group!r}")
    if group in _loaded or not enabled():
        return []
    loaded = []
    try:
        for ep in entry_points(group=group):
            try:
                ep.load()
            except Exception as exc:  # a plugin's own bug: it must not take the built-ins down
                problem = Problem(group, ep.name, ep.value, f"{type(exc).__name__}: {exc}")
                if _flag(STRICT_ENV):
                    raise UserError(f"{problem} ({STRICT_ENV} is set; unset it, or set "
                                    f"{OFF_ENV}=1 to load no plug-in)") from exc
                _problems.append(problem)
                logger.warning("%s; set %s=1 to make this an error", problem, STRICT_ENV)
            else:
                loaded.append(ep)
    finally:
        _loaded.add(group)  # after trying each: a failure above is not retried every call
    return loaded


def add_versioned(registry: dict[str, Any], item: Any, what: str) -> Any:
    """Add `item` (which has `.name` and `.version`) to a registry of `what`s: a higher
    version of a name replaces a lower one, a lower one is ignored, the same version
    registered twice is an error. The item now registered under its name."""
    existing = registry.get(item.name)
    if existing is not None and existing != item:
        if existing.version == item.version:
            raise UserError(f"{what} {item.name}@{item.version} is registered twice")
        if existing.version > item.version:
            return existing
    registry[item.name] = item
    return item


def get_versioned(registry: dict[str, Any], name: str, what: str) -> Any:
    """The item of a registry of `what`s called `name` or `name@version` (each item has
    `.version` and `.id`); UnknownName lists the valid ones."""
    base, _, version = name.partition("@")
    item = registry.get(base)
    if item is None:
        raise UnknownName(what, name, [i.id for i in registry.values()])
    if version and version != str(item.version):
        raise UnknownName(f"{what} version", name, [item.id])
    return item


def problems() -> list[Problem]:
    """The plug-ins skipped so far, in the order they failed."""
    return list(_problems)
