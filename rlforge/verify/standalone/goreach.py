"""What a Go submission's own code reaches of the test harness: a static gate before any run.

A Go test runs in one process with the package's code, so code the policy wrote can forge
its verdict: print `--- PASS` lines and exit 0 (from an init(), before any test runs),
re-run its own test binary and rewrite what the child printed, or patch the `testing`
package's state. Every one of those needs a capability a library's code does not need:

- writing the process's stdout (`fmt.Print*`, `os.Stdout`, `os.NewFile`, opening a path
  such as /dev/stdout with `os.OpenFile`, `os.Create`, `os.WriteFile`, `ioutil.WriteFile`);
- ending the process with a status of its choosing (`os.Exit`, `syscall`, `flag`'s -help);
- running a process (`os/exec`, `os.StartProcess`, `syscall`), or finding its own binary
  and arguments (`os.Args`, `os.Executable`);
- reaching into the runtime or the test framework (`unsafe`, `//go:linkname`, `runtime`,
  `testing`, `reflect` is allowed: it cannot write what is not exported without `unsafe`);
- reading what it is judged against (`//go:embed`, reading files: the hidden test sources
  are gone from the tree when tests run, this covers the binary itself);
- code the go tool links that is not Go (assembly, `.syso` objects, cgo);
- a package from outside the standard library and the module that the parent's code did
  not import (a dependency may hand out stdout or an exit; which ones, the scan cannot
  see, so the submission may use only those the project already trusted).

`reaches` lists, per package directory, which of those the non-test Go files of a tree
use (imports resolved through their local names; a dot import of such a package counts as
reaching it whole). The task records what the parent's code already reached (`go_reach`
in reference.json); a submission reaching anything more, in any package, fails the
`harness_untouched` gate and nothing of it runs. The scan reads tokens, not types: a name
that shadows a package (a local variable `os`) counts as the package, which can only
refuse a fix (the gold must pass at build time, so such a task is not emitted), never let
a forger through.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.goreach
    from .policy_code import read_regular_files
else:  # tests/rlforge_goreach.py: its siblings by their copied names
    from rlforge_policy_code import read_regular_files

#: importing these at all reaches the harness
WHOLE = ("os/exec", "syscall", "unsafe", "plugin", "runtime", "embed", "testing", "flag",
         "os/signal", "C",
         # stdout (cgi.Serve), os.Args and function addresses (pprof), os.Args (expvar)
         "net/http/cgi", "net/http/pprof", "expvar")
#: import path prefixes reached whole (`runtime/debug`, `debug/elf`, `golang.org/x/sys/unix`)
WHOLE_PREFIXES = ("runtime/", "testing/", "debug/", "golang.org/x/sys/", "internal/", "go/build")
#: members of otherwise ordinary packages that reach it
MEMBERS = {
    "os": {"Exit", "Args", "Executable", "Stdout", "Stdin", "NewFile", "StartProcess",
           "FindProcess", "Getppid", "Open", "OpenFile", "Create", "ReadFile", "WriteFile",
           "DirFS", "ReadDir", "Readlink", "Pipe", "Chdir", "Link", "Symlink", "Rename"},
    "io/ioutil": {"ReadFile", "WriteFile", "ReadDir", "TempFile"},
    "fmt": {"Print", "Printf", "Println"},
    "net/http": {"Dir", "ServeFile", "FileServer"},
    "text/template": {"ParseFiles", "ParseGlob"},
    "html/template": {"ParseFiles", "ParseGlob"},
    "go/parser": {"ParseFile", "ParseDir"},
    "archive/zip": {"OpenReader"},
}
DIRECTIVE = re.compile(r"^//go:(linkname|embed|cgo_\w+)\b")
#: files the go tool compiles or links beside Go (cgo is off, so most of them fail to build)
LINKED_SUFFIXES = (".s", ".S", ".sx", ".syso", ".c", ".cc", ".cpp", ".cxx", ".h", ".hh",
                   ".hpp", ".hxx", ".m", ".f", ".F", ".for", ".f90", ".swig", ".swigcxx")
SKIP_DIRS = ("vendor", "testdata")
MAX_FILE = 20_000_000
TOKEN = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|`[^`]*`)
  | (?P<rune>'(?:[^'\\\n]|\\.)*')
  | (?P<ident>[^\W\d]\w*)
  | (?P<punct>[.(){};])
  | (?P<other>\S)
""", re.S | re.X)


def _tokens(text):
    """(kind, text) of Go source, comments kept (directives live in them)."""
    for m in TOKEN.finditer(text):
        yield m.lastgroup, m.group()


def _unquote(lit):
    """The import path a Go string literal spells (escapes such as `\\x2f` decoded, as the go
    tool does), None when it cannot be read."""
    if lit.startswith("`"):
        return lit[1:-1]
    body = lit[1:-1]
    if "\\" not in body:
        return body
    try:
        return body.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except (UnicodeError, ValueError):
        return None


def _reached_whole(path):
    return path in WHOLE or path.startswith(WHOLE_PREFIXES)


def file_reach(text, module=""):
    """What one Go source file reaches (a sorted list of names such as `os.Exit`,
    `import os/exec`, `//go:linkname`, `import . fmt`), and the packages from outside the
    standard library and the module (`module`, its path) it imports (`dep <path>`): what a
    dependency hands out the scan cannot see, so only those the parent already used pass."""
    found = set()
    toks = []
    for kind, tok in _tokens(text):
        if kind == "comment":  # a comment is white space to Go: `os./**/Exit` is `os.Exit`
            for line in tok.splitlines():
                m = DIRECTIVE.match(line.strip())
                if m:
                    found.add(f"//go:{m.group(1)}")
        elif kind != "other" or tok not in ";":
            toks.append((kind, tok))
    names = {}  # local name of an import -> its path
    i, n = 0, len(toks)
    while i < n:
        kind, tok = toks[i]
        if kind == "comment":
            for line in tok.splitlines():
                m = DIRECTIVE.match(line.strip())
                if m:
                    found.add(f"//go:{m.group(1)}")
            i += 1
            continue
        if kind == "ident" and tok == "import":
            j = i + 1
            while j < n and toks[j][0] == "comment":
                j += 1
            grouped = j < n and toks[j] == ("punct", "(")
            j += 1 if grouped else 0
            while j < n:
                kind2, tok2 = toks[j]
                if kind2 == "comment":
                    j += 1
                    continue
                if grouped and tok2 == ")":
                    j += 1
                    break
                alias = None
                if kind2 in ("ident", "punct") and tok2 not in ('(', ')') and j + 1 < n \
                        and toks[j + 1][0] == "string":
                    alias, j = tok2, j + 1
                    kind2, tok2 = toks[j]
                if kind2 != "string":  # not an import spec the scan reads: it reaches everything
                    found.add(f"import {tok2}")
                    break
                path = _unquote(tok2)
                if path is None:  # an escape the scan cannot read: reaches everything
                    found.add(f"import {tok2}")
                    path = tok2
                local = alias or path.rsplit("/", 1)[-1]
                if _reached_whole(path):
                    found.add(f"import {path}")
                elif "." in path.split("/", 1)[0] and not (
                        module and (path == module or path.startswith(module + "/"))):
                    found.add(f"dep {path}")
                elif alias == "." and path in MEMBERS:
                    found.add(f"import . {path}")
                if local not in ("_", "."):
                    names[local] = path
                j += 1
                if not grouped:
                    break
            i = j
            continue
        if kind == "ident" and tok in names and i + 2 < n and toks[i + 1] == ("punct", ".") \
                and toks[i + 2][0] == "ident" and (i == 0 or toks[i - 1] != ("punct", ".")):
            path = names[tok]
            if toks[i + 2][1] in MEMBERS.get(path, ()):
                found.add(f"{path}.{toks[i + 2][1]}")
        i += 1
    return sorted(found)


def _package_dir(rel):
    return rel.rsplit("/", 1)[0] if "/" in rel else "."


def _counted(rel):
    parts = rel.split("/")
    if any(p in SKIP_DIRS for p in parts[:-1]):
        return False
    return (rel.endswith(".go") and not rel.endswith("_test.go")) or rel.endswith(LINKED_SUFFIXES)


def module_path(gomod):
    """The module path go.mod (bytes) declares ('' when none)."""
    m = re.search(rb"^\s*module\s+\"?([^\s\"]+)", gomod or b"", re.M)
    return m.group(1).decode("utf-8", "replace") if m else ""


def reach_of_files(files):
    """{package dir: sorted names reached} of `files` ({tree-relative path: bytes}): the
    non-test Go files and the linked non-Go files outside vendor/ and testdata/."""
    module = module_path(files.get("go.mod"))
    out = {}
    for rel in sorted(files):
        if not _counted(rel):
            continue
        got = out.setdefault(_package_dir(rel), set())
        if rel.endswith(".go"):
            got.update(file_reach(files[rel].decode("utf-8", "surrogateescape"), module))
        else:
            got.add("file *" + os.path.splitext(rel)[1])
    return {pkg: sorted(names) for pkg, names in out.items() if names}


def reach_of_tree(tree):
    """`reach_of_files` of the files under `tree` (links and special files are skipped)."""
    files = read_regular_files(tree, lambda rel: _counted(rel) or rel == "go.mod", MAX_FILE + 1)
    big = {rel for rel, data in files.items() if len(data) > MAX_FILE}
    out = reach_of_files({rel: data for rel, data in files.items() if rel not in big})
    for rel in sorted(big):  # what the scan cannot read whole counts as reaching everything
        out.setdefault(_package_dir(rel), []).append(f"file {rel.rsplit('/', 1)[-1]} over "
                                                     f"{MAX_FILE} bytes")
    return out


def beyond(tree, allowed):
    """What the tree's code reaches that `allowed` ({package dir: names}, the parent's
    reach) does not: sorted `<package dir>: <name>` strings, empty when nothing."""
    out = []
    deps = {n for names in allowed.values() for n in names if n.startswith("dep ")}
    for pkg, names in reach_of_tree(tree).items():
        extra = sorted(set(names) - set(allowed.get(pkg, ())) - deps)
        out += [f"{pkg}: {name}" for name in extra]
    return out
