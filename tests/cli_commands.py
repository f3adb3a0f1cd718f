"""Every `rlforge` command, found two independent ways, for the help and README tests.

The walk goes by the `commands` attribute: typer builds its groups on its own copy of
click, so an `isinstance(cmd, click.Group)` test is false for every one of them and a walk
by type silently stops at the top level. typer's own registry (`registered_commands`,
`registered_groups`) counts the same commands without click, so a walk that misses a group
disagrees with it.
"""

from __future__ import annotations

from typing import Any, Iterator

import typer

from rlforge.cli import app


def walk(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any, bool]]:
    """(path, command, is_group) for every command under a click-style group, depth first."""
    for name, cmd in group.commands.items():
        subgroup = hasattr(cmd, "commands")
        yield prefix + (name,), cmd, subgroup
        if subgroup:
            yield from walk(cmd, prefix + (name,))


def registered_count(typer_app: typer.Typer) -> int:
    """Commands and groups declared on a typer app and its sub-apps, counted from typer."""
    count = len(typer_app.registered_commands)
    for info in typer_app.registered_groups:
        count += 1 + registered_count(info.typer_instance)
    return count


ROOT_COMMAND = typer.main.get_command(app)
ALL = list(walk(ROOT_COMMAND))
"""Every command and group: (path, command, is_group)."""
LEAVES = [path for path, _, is_group in ALL if not is_group]
"""Every command a user runs (groups left out): the paths the README must name."""
