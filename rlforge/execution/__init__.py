"""Where sandboxed work runs: one backend protocol, every backend, chosen from one table.

Three kinds of work run untrusted code in sandboxes: rollouts (`rlforge run`), task
validation (`rlforge validate`, build-tasks), and the commits.repair build-time check of
each commit. A `Backend` (`rlforge.execution.protocol`) does all three. The CLI (and the
Python API's entry points) pick one with `choose`, by the name in `run.executor` /
`tasks.executor`, and hand it down: the run loop, validation and the build take it as a
required argument and never pick one themselves. `BACKENDS` is the only place that
knows which backends exist.

- `local`: this machine, through one sandbox pool (`rlforge.execution.local`);
- `ray`: a worker on every node of a Ray cluster (`rlforge.execution.ray`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rlforge.errors import ConfigError

if TYPE_CHECKING:  # the protocol imports the layers it serves; the table stays light
    from rlforge.config import Config
    from rlforge.execution.protocol import Backend


@dataclass(frozen=True)
class BackendInfo:
    name: str
    target: str  # "module:Class"; the class has `from_config(cfg) -> Backend`
    description: str


BACKENDS: dict[str, BackendInfo] = {b.name: b for b in (
    BackendInfo("local", "rlforge.execution.local:LocalBackend",
                "this machine, through one pool of sandbox.workers sandboxes"),
    BackendInfo("ray", "rlforge.execution.ray.backend:RayBackend",
                "a worker on every node of a Ray cluster (ray.address); needs rlforge[ray]"),
)}


def choose(cfg: Config, setting: str) -> Backend:
    """The backend named by `setting` (`run.executor` or `tasks.executor`) in `cfg`, set
    up from `cfg`.

    Raises:
        ConfigError: the name is not in `BACKENDS`; the message says where it came from
            and lists the known names.
    """
    name, source = cfg.resolve(setting)
    info = BACKENDS.get(name)
    if info is None:
        origin = source.partition(" ")[2] or source
        raise ConfigError(f"{setting} from {origin}: {name!r} is not one of "
                          f"{', '.join(BACKENDS)}")
    module, _, attr = info.target.partition(":")
    return getattr(importlib.import_module(module), attr).from_config(cfg)
