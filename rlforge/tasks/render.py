"""Render a `TaskSpec` into a Harbor task directory, byte-identically for the same inputs;
its layout is `rlforge.taskdir`'s.

Templates are Jinja2 with StrictUndefined, looked up first in the user's `--templates`
directory, then in rlforge's own `rlforge/templates/` (package data, found through
importlib.resources so an installed wheel finds it as a checkout does), then in the
directories plug-in generators ship (`rlforge.tasks.registry.register(templates=...)`):
`<generator>/<file>.j2` before `<file>.j2`.
The task id is a hash of everything rendered (task.toml aside, which holds the id).
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import jinja2

from rlforge import __version__
from rlforge.errors import UserError
from rlforge.taskdir import (DOCKERFILE, EXECUTABLE, INSTRUCTION, REFERENCE, SOLUTION, TASK_TOML,
                             TEST_SCRIPT, TESTS, WORKSPACE)
from rlforge.tasks.spec import TaskSpec
from rlforge.verify import standalone

PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def builtin_templates() -> Path:
    """rlforge's own templates, shipped as package data in `rlforge/templates/`.

    Returns:
        The directory on disk (Jinja2's loader reads files by path).

    Raises:
        UserError: the installation has no templates on the filesystem (a broken install,
            or rlforge imported from a zip archive).
    """
    root = importlib.resources.files("rlforge") / "templates"
    if isinstance(root, Path) and root.is_dir():
        return root
    raise UserError("rlforge's templates directory is missing from this installation: "
                    "reinstall rlforge (pip install --force-reinstall rlforge)")


def toml_value(value: Any) -> str:
    """A Python value as a TOML literal (strings, numbers, booleans, lists, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}"
                                for k, v in value.items()) + " }"
    if value is None:
        return '""'
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


class Renderer:
    """Jinja2 environment over the override and built-in template directories."""

    def __init__(self, override: str | Path | None = None, extra: Sequence[Path] = ()):
        dirs = [str(Path(override))] if override else []
        if override and not Path(override).is_dir():
            raise UserError(f"--templates {override}: no such directory")
        dirs.append(str(builtin_templates()))
        dirs += [str(d) for d in extra if str(d) not in dirs]
        self.dirs = dirs
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(dirs), undefined=jinja2.StrictUndefined,
            keep_trailing_newline=True, autoescape=False, trim_blocks=True, lstrip_blocks=True)
        self.env.filters["toml"] = toml_value
        self.env.filters["shell_quote"] = shell_quote
        self._hashes: dict[str, str] = {}

    def resolve(self, generator: str, name: str) -> str:
        """The template used for `name`: the generator's own, else the shared one."""
        for candidate in (f"{generator}/{name}.j2", f"{name}.j2"):
            try:
                self.env.get_template(candidate)
                return candidate
            except jinja2.TemplateNotFound:
                continue
        raise UserError(f"no template {generator}/{name}.j2 or {name}.j2 in {', '.join(self.dirs)}")

    def render(self, template: str, context: dict[str, Any]) -> str:
        try:
            return self.env.get_template(template).render(**context)
        except jinja2.UndefinedError as exc:
            raise UserError(f"template {template}: {exc.message}") from None

    def source_hash(self, templates: list[str]) -> str:
        """Hash of the template sources (and the verifier) a task was rendered from."""
        key = "\0".join(sorted(templates))
        if key not in self._hashes:
            h = hashlib.sha256()
            loader = self.env.loader
            assert loader is not None, "__init__ gives the environment its loader"
            for name in sorted(templates):
                source, _, _ = loader.get_source(self.env, name)
                h.update(name.encode() + b"\0" + source.encode() + b"\0")
            for verifier_name, data in sorted(standalone.all_files().items()):
                h.update(verifier_name.encode() + b"\0" + data)
            self._hashes[key] = h.hexdigest()[:16]
        return self._hashes[key]


def shell_quote(text: str) -> str:
    """Single-quote a string for POSIX shells."""
    return "'" + str(text).replace("'", "'\"'\"'") + "'"


@dataclass
class RenderedTask:
    task_id: str
    files: dict[str, bytes]  # relative path -> content (task.toml included)
    spec: TaskSpec
    split: str
    template_hash: str


def render_task(spec: TaskSpec, renderer: Renderer, *, seed: int, split: str) -> RenderedTask:
    """Render every file of the task in memory and compute its id."""
    gen = spec.generator
    names = {"instruction": renderer.resolve(gen, "instruction.md"),
             "test": renderer.resolve(gen, "test.sh"),
             "dockerfile": renderer.resolve(gen, "Dockerfile"),
             "task": renderer.resolve(gen, "task.toml")}
    ctx = {**spec.context, "spec": spec, "answer_file": f"/app/{'answer.txt'}"}
    files: dict[str, bytes] = {
        INSTRUCTION: renderer.render(names["instruction"], ctx).encode(),
        DOCKERFILE: renderer.render(names["dockerfile"], ctx).encode(),
        TEST_SCRIPT: renderer.render(names["test"], ctx).encode(),
        **{f"{TESTS}/{name}": data for name, data in standalone.task_files(spec.verifier).items()},
        REFERENCE: (json.dumps(spec.reference, indent=1, sort_keys=True,
                                            ensure_ascii=False) + "\n").encode(),
    }
    for rel, data in spec.workspace.items():
        files[f"{WORKSPACE}/{rel}"] = data
    for rel, data in spec.tests_data.items():
        files[f"{TESTS}/{rel}"] = data
    for rel, data in spec.solution_files.items():
        files[f"{SOLUTION}/{rel}"] = data
    h = hashlib.sha256(f"{gen}@{spec.version}".encode())
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    task_id = f"{gen.replace('.', '-')}-{h.hexdigest()[:12]}"
    template_hash = renderer.source_hash(list(names.values()) + spec.templates)
    meta = {
        "task_id": task_id, "generator": f"{gen}@{spec.version}", "verifier": spec.verifier,
        "kind": spec.kind, "split": split, "seed": seed, "template_hash": template_hash,
        "source_table": spec.source.table, "source_keys": spec.source.keys,
        "source_content_hashes": spec.source.content_hashes, "group_key": spec.group_key,
        "rlforge_version": __version__,
        **({"source_time": spec.time.isoformat()} if spec.time else {}),
        **spec.extra_metadata,
    }
    files[TASK_TOML] = renderer.render(names["task"], {**ctx, "task_id": task_id,
                                                         "rlforge": meta}).encode()
    return RenderedTask(task_id, files, spec, split, template_hash)


def write_task(task: RenderedTask, out_dir: Path) -> Path:
    """Write a rendered task under out_dir/<task_id>/ (replacing any previous copy)."""
    target = out_dir / task.task_id
    if target.exists():
        shutil.rmtree(target)
    for rel in sorted(task.files):
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(task.files[rel])
        os.chmod(path, 0o755 if rel in EXECUTABLE or rel.endswith(".sh") else 0o644)
    return target
