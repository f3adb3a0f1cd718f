"""The generator registry: data, versioned ids, and a clear error for unknown names.

A generator is one module under `rlforge/tasks/generators/` whose class is decorated with
`@register(name, version, description)`. Third parties add theirs through the
`rlforge.generators` entry-point group (the entry point names a module or a class; importing
it registers it; see `rlforge.plugins` for what happens when one is broken), with their
templates in a directory of their own package (`templates="pkg/dir"`).
`get("tickets.triage")` or `get("tickets.triage@1")` returns the entry; an unknown name
raises `UnknownName` listing the valid ones.
"""

from __future__ import annotations

import importlib
import importlib.resources
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar

from rlforge import plugins
from rlforge.errors import UserError

BUILTIN_MODULES = tuple(f"rlforge.tasks.generators.{name}" for name in (
    "tickets_triage", "tickets_reply", "logs_diagnose", "logs_script", "commits_repair",
    "incidents_repair", "incidents_diagnose"))
ENTRY_POINT_GROUP = "rlforge.generators"


@dataclass(frozen=True)
class GeneratorInfo:
    """A registered generator: `name@version`, what it makes, and how to build one."""

    name: str
    version: int
    description: str
    verifier: str
    factory: Callable[..., Any]  # called with build=<build-tasks' options>, **options
    templates: str | None = None  # "package/dir" holding <name>/<file>.j2 (plug-ins)
    opt_in: str = ""  # why it is built only when named (`Generator.opt_in`); "" for none

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}"

    def template_dir(self) -> Path | None:
        """The directory of the generator's own templates, when it ships some."""
        if not self.templates:
            return None
        package, _, sub = self.templates.partition("/")
        root = importlib.resources.files(package).joinpath(*filter(None, sub.split("/")))
        if not isinstance(root, Path) or not root.is_dir():
            raise UserError(f"generator {self.id}: its templates {self.templates!r} are not a "
                            "directory in the installed package")
        return root


class Generator:
    """A base for generator classes that only declares, for type checkers, the attributes
    `@register` sets on the class; the registry does not require it."""

    name: ClassVar[str]
    version: ClassVar[int]
    description: ClassVar[str]
    verifier: ClassVar[str]
    #: the tables its rows come from (`build-tasks --list` says which is empty)
    sources: ClassVar[tuple[str, ...]] = ()
    #: why its reward can be passed without doing the task, when a red team has shown a
    #: bound rlforge cannot close: such a generator is built only when `--generators` names
    #: it, never by default ("" for none)
    opt_in: ClassVar[str] = ""


_REGISTRY: dict[str, GeneratorInfo] = {}
_loaded = False


def register(name: str, version: int, description: str, verifier: str,
             templates: str | None = None):
    """Class decorator adding a generator to the registry under `name@version`;
    `templates`: "package/dir" of its own templates (`<name>/instruction.md.j2`, ...),
    searched after `--templates` and rlforge's own."""

    def wrap(cls):
        existing = _REGISTRY.get(name)
        if existing is not None and existing.version >= version and existing.factory is not cls:
            if existing.version == version:
                raise UserError(f"generator {name}@{version} is registered twice "
                                f"({existing.factory.__module__} and {cls.__module__})")
            return cls
        cls.name, cls.version, cls.description, cls.verifier = name, version, description, verifier
        _REGISTRY[name] = GeneratorInfo(name, version, description, verifier, cls, templates,
                                        getattr(cls, "opt_in", ""))
        return cls

    return wrap


def _load() -> None:
    global _loaded
    if not _loaded:
        for module in BUILTIN_MODULES:
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:
                if exc.name != module:
                    raise
        _loaded = True
    plugins.load(ENTRY_POINT_GROUP)


def registry() -> dict[str, GeneratorInfo]:
    """Every registered generator by name (built-ins and plug-ins)."""
    _load()
    return dict(sorted(_REGISTRY.items()))


def get(name: str) -> GeneratorInfo:
    """The generator called `name` or `name@version`; UnknownName lists the valid ones."""
    return plugins.get_versioned(registry(), name, "generator")
