"""Which paths of a repair submission are protected, copied or shadow a module.

Test code and test-runner configuration may not change; packaging metadata and new
top-level modules named after pytest, the standard library or an installed module may not
appear (the tree is on the tests' import path). The workspace is copied regular files
only, never following links, bytecode and `.rlforge/` left out.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.protect
    from .policy_code import copy_tree_bounded
else:  # tests/rlforge_protect.py: its siblings by their copied names
    from rlforge_policy_code import copy_tree_bounded

SUBMISSION_PATCH = ".rlforge/submission.diff"
RUN_TREE_LIMIT = 200 * 1024 * 1024  # bytes of workspace copied into the private tree
RUN_TREE_FILES = 100_000  # files: more could run the verifier out of time (an "invalid" score)
SKIP_NAMES = ("__pycache__",)
# Protected whatever the task's rules say: runner configuration pytest reads on its own,
# packaging metadata that could register a plugin or extend sys.path, interpreter hooks.
ALWAYS_NAMES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "conftest.py",
                "sitecustomize.py", "usercustomize.py")
ALWAYS_SUFFIXES = (".pth",)
METADATA_DIRS = (".dist-info", ".egg-info", ".egg-link")
RUNNER_MODULES = ("pytest", "_pytest", "pluggy", "py")
MODULE_SUFFIXES = (".py", ".pyc", ".pyw", ".so", ".pyd")  # what Python imports a module from


def is_protected(path, rules):
    """Whether a repository path is test code or test-runner configuration.

    `rules` comes from the task's reference: regexes for test paths (the same ones commit
    ingest uses), file names (conftest.py, pytest.ini, ...) and suffixes (.pth); the
    names in ALWAYS_NAMES and packaging metadata directories are protected in any case.
    """
    base = path.rsplit("/", 1)[-1]
    if base in rules.get("names", ()) or base in ALWAYS_NAMES:
        return True
    if any(base.endswith(s) for s in tuple(rules.get("suffixes", ())) + ALWAYS_SUFFIXES):
        return True
    if any(part.endswith(METADATA_DIRS) for part in path.split("/")[:-1]):
        return True
    return any(re.search(p, path) for p in rules.get("patterns", ()))


def shadow_modules(paths, roots, allowed, installed=()):
    """Paths that add a top-level module (at the tree root or a `pythonpath` root) named
    after pytest, its plugin machinery, a standard-library module or a module installed in
    the test environment (`installed`), unless the starting workspace already had a
    top-level module of that name (`allowed`): the tree is on the tests' import path, so
    such a module would be imported in place of the real one."""
    names = (set(RUNNER_MODULES) | set(getattr(sys, "stdlib_module_names", ())) | set(installed)
             | {"sitecustomize", "usercustomize"})
    out = []
    for path in paths:
        for root in roots:
            prefix = root.strip("/") + "/" if root.strip("/") else ""
            if not path.startswith(prefix):
                continue
            first = path[len(prefix):].split("/", 1)[0]
            name = first.split(".", 1)[0]
            module = first.endswith(MODULE_SUFFIXES) or "/" in path[len(prefix):]
            if name in names and name not in allowed and module:
                out.append(path)
                break
    return sorted(out)


def installed_modules(site_dirs):
    """Top-level module names importable from the given site-packages directories."""
    out = set()
    for site in site_dirs:
        try:
            names = os.listdir(site)
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info", ".pth")) or name.startswith("_distutils"):
                continue
            out.add(name.split(".", 1)[0])
    return sorted(n for n in out if n.isidentifier())


def top_level_modules(paths, roots):
    """Module names at the tree root and each `pythonpath` root (for `shadow_modules`)."""
    out = set()
    for path in paths:
        for root in roots:
            prefix = root.strip("/") + "/" if root.strip("/") else ""
            if path.startswith(prefix):
                first = path[len(prefix):].split("/", 1)[0]
                out.add(first[:-3] if first.endswith(".py") else first.split(".", 1)[0])
    return sorted(out)


def skipped_path(rel):
    parts = rel.split("/")
    return parts[0] == ".rlforge" or any(p in SKIP_NAMES for p in parts) or rel.endswith(".pyc")


def copy_workspace(src, dst, limit=RUN_TREE_LIMIT, max_files=RUN_TREE_FILES):
    """Copy the regular files under src to dst (which exists), never following links.

    Symlinks, special files, bytecode and `.rlforge/` are left out. Returns the relative
    paths copied; raises OSError when the copy would exceed `limit` bytes or `max_files`.
    """
    return copy_tree_bounded(src, dst, limit, max_files, skip=skipped_path)


def tree_hashes(root):
    """sha256 of every regular file under root, by relative posix path (links skipped)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            full = os.path.join(dirpath, name)
            if os.path.islink(full) or not os.path.isfile(full):
                continue
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            with open(full, "rb") as fh:
                out[rel] = hashlib.sha256(fh.read()).hexdigest()
    return out


def tree_digest(root, hashes=None):
    """One sha256 of the tree under root: every directory's path, and every regular file's
    path, content (`hashes`, from `tree_hashes`, when the caller has them) and execute bits."""
    hashes = tree_hashes(root) if hashes is None else hashes
    entries = [f"{rel}\0{hashes[rel]}\0{os.lstat(os.path.join(root, rel)).st_mode & 0o111:o}"
               for rel in hashes]
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        entries += [os.path.relpath(os.path.join(dirpath, d), root).replace(os.sep, "/") + "/"
                    for d in dirnames]
    digest = hashlib.sha256()
    for entry in sorted(entries):
        digest.update(entry.encode("utf-8", "surrogateescape") + b"\n")
    return digest.hexdigest()


def touched_protected(root, rules, base_hashes):
    """Protected paths whose content differs from the starting workspace (added,
    changed or deleted), sorted."""
    now = {p: h for p, h in tree_hashes(root).items() if is_protected(p, rules) and not skipped_path(p)}
    changed = {p for p, h in now.items() if base_hashes.get(p) != h}
    changed |= {p for p in base_hashes if p not in now}
    return sorted(changed)
