"""Unified diffs applied to a directory tree, standard library only.

Part of the repair verifier: copied into each `commits.repair` task as
`tests/rlforge_patch.py`, next to `rlforge_repair.py`, which applies a submitted diff
(`/app/.rlforge/submission.diff`) with `apply_patch` before it runs any test. git is not
needed (Harbor's images may not have it). What `git diff` and `diff -u` write is applied
exactly, hunks may have moved (they are searched for outward from their line), and what
cannot be done faithfully is refused without touching the tree: binary changes, renames,
paths that leave the tree. Files are written without following links a submission planted.
"""

from __future__ import annotations

import json
import os
import re
import shutil


def _safe_rel(path):
    """A relative posix path without '..' or absolute parts that a file system can name
    (no NUL, no character without bytes), or None."""
    if not path or path.startswith("/") or "\0" in path:
        return None
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        return None
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        return None
    return "/".join(parts)


def write_file(root, rel, data):
    """Write root/rel, replacing whatever is there (a link is replaced, never followed)."""
    rel = _safe_rel(rel)
    if rel is None:
        raise ValueError("unsafe path")
    cur = root
    for part in rel.split("/")[:-1]:
        cur = os.path.join(cur, part)
        if os.path.islink(cur) or (os.path.exists(cur) and not os.path.isdir(cur)):
            os.remove(cur)
        if not os.path.isdir(cur):
            os.mkdir(cur)
    target = os.path.join(root, rel)
    if os.path.islink(target) or os.path.isfile(target):
        os.remove(target)
    elif os.path.isdir(target):
        shutil.rmtree(target)
    with open(target, "wb") as fh:
        fh.write(data)


def remove_file(root, rel):
    rel = _safe_rel(rel)
    target = os.path.join(root, rel) if rel else None
    if target and (os.path.islink(target) or os.path.isfile(target)):
        os.remove(target)


# --- unified diffs -------------------------------------------------------------------------

class PatchError(Exception):
    """A diff that cannot be parsed or does not apply."""


# A line count or number past 10 digits is no real file's (and int() of thousands of
# digits raises): such a header is malformed.
_HUNK = re.compile(r"^@@ -(\d{1,10})(?:,(\d{1,10}))? \+(\d{1,10})(?:,(\d{1,10}))? @@")


def _diff_path(text):
    path = text.rstrip("\r\n").split("\t", 1)[0]
    if path.startswith('"') and path.endswith('"'):
        try:
            path = json.loads(path)
        except ValueError:
            raise PatchError(f"cannot read the quoted path {path}") from None
    return None if path == "/dev/null" else path


def split_lines(text):
    """Lines with their endings, split at \\n only (as diff does; str.splitlines also
    splits at form feeds and other separators)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def parse_patch(text):
    """The file changes of a unified diff (git's or diff -u's) as a list of dicts:
    old, new (paths or None), hunks [(old_start, old_lines, new_lines)]."""
    lines = split_lines(text)
    files, i = [], 0
    header = None  # a `diff --git` header not yet followed by ---/+++ lines

    def flush():
        # git writes no ---/+++ lines for an empty file created or deleted
        if header and header["kind"]:
            old, new = header["paths"]
            files.append({"old": None if header["kind"] == "new" else old,
                          "new": None if header["kind"] == "deleted" else new, "hunks": []})

    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            flush()
            m = re.match(r"diff --git (a/.*) (b/.*)$", line.rstrip("\r\n"))
            header = {"paths": (m.group(1), m.group(2)) if m else (None, None), "kind": None}
        elif header and line.startswith("new file mode"):
            header["kind"] = "new"
        elif header and line.startswith("deleted file mode"):
            header["kind"] = "deleted"
        if line.startswith("GIT binary patch") or (line.startswith("Binary files ") and line.rstrip().endswith("differ")):
            raise PatchError("binary changes are not supported in a submitted diff")
        if line.startswith("rename from ") or line.startswith("copy from "):
            raise PatchError("renames are not supported in a submitted diff; "
                             "write the file under its new name and delete the old one")
        if not (line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")):
            i += 1
            continue
        old, new = _diff_path(line[4:]), _diff_path(lines[i + 1][4:])
        header = None
        i += 2
        hunks = []
        while i < len(lines) and lines[i].startswith("@@"):
            m = _HUNK.match(lines[i])
            if not m:
                raise PatchError(f"malformed hunk header {lines[i].strip()!r}")
            old_start = int(m.group(1))
            old_n = int(m.group(2)) if m.group(2) is not None else 1
            new_n = int(m.group(4)) if m.group(4) is not None else 1
            i += 1
            old_lines, new_lines = [], []
            while (len(old_lines) < old_n or len(new_lines) < new_n) and i < len(lines):
                body = lines[i]
                tag, rest = body[:1], body[1:]
                if body in ("\n", "\r\n"):  # an empty context line whose space was stripped
                    tag, rest = " ", body
                if tag == " ":
                    old_lines.append(rest)
                    new_lines.append(rest)
                elif tag == "-":
                    old_lines.append(rest)
                elif tag == "+":
                    new_lines.append(rest)
                elif tag == "\\":
                    pass
                else:
                    raise PatchError(f"hunk of {new or old} ends early")
                i += 1
                if i < len(lines) and lines[i].startswith("\\"):
                    # "\ No newline at end of file" applies to the line just read
                    if tag in (" ", "-"):
                        old_lines[-1] = old_lines[-1].rstrip("\r\n")
                    if tag in (" ", "+"):
                        new_lines[-1] = new_lines[-1].rstrip("\r\n")
                    i += 1
            if len(old_lines) != old_n or len(new_lines) != new_n:
                raise PatchError(f"hunk of {new or old} is shorter than its header says")
            hunks.append((old_start, old_lines, new_lines))
        files.append({"old": old, "new": new, "hunks": hunks})
    flush()
    if not files and text.strip():
        raise PatchError("no file changes found (expected a unified diff with ---/+++ lines)")
    return files


def _strip_prefix(files):
    """Drop git's a/ and b/ prefixes from each file change that carries them."""
    for f in files:
        old, new = f["old"], f["new"]
        if (old is None or old.startswith("a/")) and (new is None or new.startswith("b/")):
            f["old"] = old[2:] if old else None
            f["new"] = new[2:] if new else None
    return files


SEARCH_BUDGET = 5_000_000  # line comparisons a whole diff may make while placing its hunks
SPLICE_BUDGET = 2_000_000_000  # lines its splices may move (about a second of memmove)


def _find(lines, block, hint, budget):
    """Index where block occurs in lines, searching outward from hint; None if nowhere.

    `budget` ([comparisons left]) bounds the search over the whole diff: a small diff of
    many hunks that match nowhere in a huge file would otherwise cost hunks x lines, and
    a long hunk whose first line matches everywhere (a file of one repeated line) hunk
    length x lines, so a position costs one comparison and a block compared there costs
    its length.
    """
    n = len(block)
    if n == 0:
        return max(0, min(hint, len(lines)))
    first = block[0]
    for delta in range(0, len(lines) + 1):
        for pos in (hint - delta, hint + delta) if delta else (hint,):
            if 0 <= pos <= len(lines) - n:
                budget[0] -= 1
                if lines[pos] == first:
                    budget[0] -= n
                    if lines[pos:pos + n] == block:
                        return pos
        if budget[0] <= 0:
            raise PatchError("the diff's hunks take too long to place (too many hunks that "
                             "match nowhere near their line numbers)")
        if hint - delta < 0 and hint + delta > len(lines) - n:
            break
    return None


def apply_patch(root, text):
    """Apply a unified diff to the tree at root; all or nothing.

    Returns (True, summary) or (False, why it does not apply).
    """
    budget = [SEARCH_BUDGET, SPLICE_BUDGET]
    try:
        files = _strip_prefix(parse_patch(text))
        results = {}
        for f in files:
            old = _safe_rel(f["old"]) if f["old"] else None
            new = _safe_rel(f["new"]) if f["new"] else None
            if (f["old"] and old is None) or (f["new"] and new is None):
                raise PatchError(f"unsafe path in the diff: {f['old'] or f['new']!r}")
            if old and new and old != new:
                raise PatchError("renames are not supported in a submitted diff")
            path = new or old
            if path is None:
                raise PatchError("a file change without a path")
            if old is None:
                if path in results and results[path] is not None:
                    raise PatchError(f"{path} is created twice")
                full = os.path.join(root, path)
                if path not in results and (os.path.lexists(full)):
                    raise PatchError(f"{path} already exists")
                lines = []
            elif path in results:
                if results[path] is None:
                    raise PatchError(f"{path} was deleted earlier in the diff")
                lines = results[path]
            else:
                full = os.path.join(root, path)
                if os.path.islink(full) or not os.path.isfile(full):
                    raise PatchError(f"{path} does not exist")
                with open(full, "rb") as fh:
                    lines = split_lines(fh.read().decode("utf-8", "surrogateescape"))
            offset = 0
            for k, (start, old_lines, new_lines) in enumerate(f["hunks"], 1):
                hint = max(0, start - 1 + offset) if old_lines else max(0, start + offset)
                pos = _find(lines, old_lines, hint, budget)
                if pos is None:
                    raise PatchError(f"hunk {k} of {path} does not apply")
                # A splice moves the lines after it: a diff of many hunks on a huge file
                # (insertions, which search nothing) must not cost hunks x lines unbounded.
                budget[1] -= len(lines) - pos
                if budget[1] <= 0:
                    raise PatchError("the diff's hunks take too long to apply (too many "
                                     "hunks in too long a file)")
                lines[pos:pos + len(old_lines)] = new_lines
                offset += len(new_lines) - len(old_lines)
            if new is None:
                if lines:
                    raise PatchError(f"{path} is deleted but the diff does not remove all of it")
                results[path] = None
            else:
                results[path] = lines
    except PatchError as exc:
        return False, str(exc)
    except (ValueError, UnicodeError, RecursionError) as exc:  # what the diff's bytes can
        return False, f"the diff cannot be read: {type(exc).__name__}: {exc}"  # still do
    try:
        for path, lines in sorted(results.items()):
            if lines is None:
                remove_file(root, path)
            else:
                write_file(root, path, "".join(lines).encode("utf-8", "surrogateescape"))
    except (OSError, ValueError, UnicodeError) as exc:  # e.g. a name too long to write
        return False, f"the diff cannot be written: {type(exc).__name__}: {exc}"
    return True, f"{len(results)} file(s) changed"
