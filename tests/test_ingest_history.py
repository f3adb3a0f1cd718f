"""`rlforge ingest commits` on a history with every odd byte git lets through.

The repository is built here, commit by commit, with raw commit objects where `git commit`
would clean the bytes up: messages and names that are not UTF-8, control characters,
paths with stray bytes, newlines and tabs, an empty and a very long message, and one
commit whose time no database holds. Every commit but that one must load, its text
readable and its exact bytes kept; that one is quarantined, alone, with its reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

ENV = {"GIT_AUTHOR_NAME": "Ada Lovelace", "GIT_AUTHOR_EMAIL": "ada@example.com",
       "GIT_COMMITTER_NAME": "Ada Lovelace", "GIT_COMMITTER_EMAIL": "ada@example.com",
       "GIT_AUTHOR_DATE": "2024-01-01T10:00:00+00:00",
       "GIT_COMMITTER_DATE": "2024-01-01T10:00:00+00:00", "GIT_CONFIG_GLOBAL": os.devnull}
ADA = b"Ada Lovelace <ada@example.com>"

LATIN1 = "Café crème brûlée".encode("latin-1")  # no encoding header: git shows the bytes
DECLARED = "Grüße aus München".encode("latin-1")  # `encoding ISO-8859-1`: git converts
BROKEN = b"Fix \xff\xfe parser \xc3\x28 and \xed\xa0\x80 (an encoded surrogate)"
CONTROL = b"Split \x1e a record \x1f a field \x1e\x1f"
LONG = b"Long message\n\n" + b"0123456789abcdef " * 20_000
JOERG = b"J\xf6rg M\xfcller <j\xf6rg@example.com>"
PATHS = [b"caf\xe9.txt", b"new\nline.py", b"tab\there.py", b"sur\xed\xa0\x80.py", b"\nlead.py"]


def git(repo: Path, *args: str | bytes, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false", *args],
                          input=data, check=True, capture_output=True,
                          env={**os.environ, **ENV}).stdout


def raw_commit(repo: Path, message: bytes, *, author: bytes = ADA,
               when: bytes = b"1704103200 +0000", headers: bytes = b"",
               literally: bool = False) -> str:
    """A commit object of these exact bytes on top of main, of the tree in the index."""
    head = git(repo, "rev-parse", "HEAD").strip()
    tree = git(repo, "write-tree").strip()
    body = (b"tree " + tree + b"\nparent " + head + b"\nauthor " + author + b" " + when
            + b"\ncommitter " + ADA + b" 1704103200 +0000\n" + headers + b"\n" + message)
    sha = git(repo, "hash-object", "-t", "commit", "-w", "--stdin",
              *(["--literally"] if literally else []), data=body).strip().decode()
    git(repo, "update-ref", "refs/heads/main", sha)
    return sha


def stage(repo: Path, files: dict[bytes, bytes]) -> None:
    for name, content in files.items():
        path = repo / os.fsdecode(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    git(repo, "add", "-A")


def commit_files(repo: Path, files: dict[bytes, bytes], message: str) -> str:
    stage(repo, files)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip().decode()


@pytest.fixture
def odd_repo(tmp_path) -> tuple[Path, dict[str, str]]:
    """The repository, and the sha of each case by name."""
    repo = tmp_path / "odd"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shas = {"before": commit_files(repo, {b"calc.py": b"def add(a, b):\n    return a + b\n"},
                                   "Add calculator")}
    shas["latin1"] = raw_commit(repo, LATIN1 + b"\n")
    shas["declared"] = raw_commit(repo, DECLARED + b"\n", headers=b"encoding ISO-8859-1\n")
    shas["broken"] = raw_commit(repo, BROKEN + b"\n")
    shas["control"] = raw_commit(repo, CONTROL + b"\n")
    shas["author"] = raw_commit(repo, b"Commit by an author whose name is Latin-1\n",
                                author=JOERG)
    shas["paths"] = commit_files(repo, {p: b"x = 1\n" for p in PATHS}, "Add odd paths")
    shas["empty"] = raw_commit(repo, b"")
    shas["long"] = raw_commit(repo, LONG + b"\n")
    shas["far_future"] = raw_commit(repo, b"A date no database holds\n", literally=True,
                                    when=b"99999999999999999999 +0000")
    shas["after"] = commit_files(repo, {b"calc.py": b"def add(a, b):\n    return b + a\n"},
                                 "Swap operands")
    return repo, shas


def stored(text: str | None, exact: bytes | None) -> bytes | None:
    """What a (text, exact bytes) pair stands for: the bytes if kept, else the text's."""
    return exact if exact is not None else (None if text is None else text.encode())


def test_every_commit_loads_losslessly_but_the_one_quarantined(cli, odd_repo, query):
    repo, shas = odd_repo
    result = cli("ingest", "commits", repo, "--no-redact", "--json")
    assert result.exit_code == 0, result.output
    totals = json.loads(result.output)["totals"]
    assert totals["n_read"] == len(shas) == 11
    assert (totals["n_loaded"], totals["n_quarantined"]) == (10, 1)

    rows = {sha: (message, message_bytes, subject, author, author_bytes) for
            sha, message, message_bytes, subject, author, author_bytes in query(
                "SELECT sha, message, message_bytes, subject, author, author_bytes FROM commits")}
    assert set(rows) == set(shas.values()) - {shas["far_future"]}

    def message(case: str) -> bytes | None:
        return stored(rows[shas[case]][0], rows[shas[case]][1])

    # the exact bytes round-trip ...
    assert message("latin1") == LATIN1
    assert message("broken") == BROKEN
    assert message("control") == CONTROL
    assert message("long") == LONG.rstrip(b"\n")
    assert message("empty") == b"" and rows[shas["empty"]][2] == ""
    assert rows[shas["author"]][4] == JOERG
    # ... and the text beside them is readable
    assert rows[shas["latin1"]][0] == rows[shas["latin1"]][2] == "Café crème brûlée"
    assert rows[shas["declared"]][:2] == ("Grüße aus München", None)  # git converted it
    assert rows[shas["broken"]][0].startswith("Fix ") and "parser" in rows[shas["broken"]][0]
    assert not any(0xDC80 <= ord(ch) <= 0xDCFF for r in rows.values() for ch in r[0])
    assert rows[shas["author"]][3] == "Jörg Müller <jörg@example.com>"
    assert rows[shas["before"]][1] is None and rows[shas["before"]][4] is None  # plain: text only

    files = query("SELECT path, path_bytes, is_test, language FROM commit_files WHERE sha = ?",
                  [shas["paths"]])
    assert sorted(stored(p, b) for p, b, _, _ in files) == sorted(PATHS)
    shown = {p: b for p, b, _, _ in files}
    assert shown["café.txt"] == b"caf\xe9.txt"
    assert shown["new\nline.py"] is None and shown["tab\there.py"] is None  # exact as text
    assert {lang for p, _, _, lang in files if p.endswith(".py")} == {"python"}

    (reason, raw), = query("SELECT reason, raw FROM quarantine WHERE source = 'commits'")
    assert reason.startswith("author time out of range") and shas["far_future"] in raw
    assert "A date no database holds" in raw


def test_a_second_run_rereads_only_the_quarantined_commit(cli, odd_repo, query):
    repo, _ = odd_repo
    cli("ingest", "commits", repo, "--no-redact", "-q")
    again = json.loads(cli("ingest", "commits", repo, "--no-redact", "--json").output)["totals"]
    assert (again["n_read"], again["n_loaded"], again["n_duplicates"]) == (1, 0, 1)
    assert query("SELECT count(*) FROM quarantine") == [(1,)]
    assert query("SELECT count(*) FROM commits") == [(10,)]


def test_redacted_ingest_keeps_every_commit_and_pseudonymises_odd_authors(cli, odd_repo, query):
    repo, shas = odd_repo
    result = cli("ingest", "commits", repo, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["totals"]["n_loaded"] == 10
    author, author_bytes = query("SELECT author, author_bytes FROM commits WHERE sha = ?",
                                 [shas["author"]])[0]
    assert author.startswith("<PERSON_") and author_bytes is None
    message, message_bytes = query("SELECT message, message_bytes FROM commits WHERE sha = ?",
                                   [shas["latin1"]])[0]
    assert (message, message_bytes) == ("Café crème brûlée", LATIN1)


def test_progress_is_reported_in_a_pipe(cli, odd_repo):
    repo, _ = odd_repo
    result = cli("ingest", "commits", repo, "--no-redact")
    assert result.exit_code == 0, result.output
    # a line as reading starts (then one every 15 s): commits read so far, of how many
    assert re.search(r"reading .*odd; commits read \d+/11, \d+s", result.output)
    assert "quarantined: author time out of range" in result.output


# --- what reads the commits tables: commits.repair ---------------------------------------

PRICE = b"def total(lines):\n    return sum(price for price, qty in lines)\n\n\n" \
        b"def cents(x):\n    return int(x * 100)\n"


def build_shop(repo: Path) -> None:
    """A Python project whose tree holds odd names and whose fixes have odd bytes: a fix
    with a Latin-1 message and author that also changes files named with a tab and a
    newline (a task), one that changes a file whose name is not UTF-8 (dropped, with its
    reason), and a plain one whose parent tree holds every odd name (a task)."""
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit_files(repo, {
        b"pyproject.toml": b'[project]\nname = "shop"\nversion = "0.1.0"\ndependencies = []\n\n'
                           b'[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
        b"shop/__init__.py": b"", b"shop/price.py": PRICE,
        b"tests/test_price.py": b"from shop.price import total\n\n\ndef test_empty():\n"
                                b"    assert total([]) == 0\n",
        b"notes/tab\there.txt": b"1\n", b"notes/new\nline.txt": b"2\n",
        b"data/caf\xe9.csv": b"name,price\ncaf\xe9,2\n", b"sur\xed\xa0\x80.txt": b"3\n"},
        "Shop: order totals and prices in cents")
    stage(repo, {b"shop/price.py": PRICE.replace(b"sum(price for", b"sum(price * qty for"),
                 b"tests/test_quantity.py": b"from shop.price import total\n\n\n"
                                            b"def test_quantity():\n"
                                            b"    assert total([(2, 3), (1, 4)]) == 10\n",
                 b"notes/tab\there.txt": b"1\nquantities count\n",
                 b"notes/new\nline.txt": b"2\nquantities count\n"})
    raw_commit(repo, b"total() ignores the quantity of each line\n\nReported by J\xf6rg: the "
                     b"caf\xe9 totals were too low.\n", author=JOERG)
    stage(repo, {b"shop/price.py": (repo / "shop/price.py").read_bytes() + b"\n\nTAX = 0.2\n",
                 b"tests/test_tax.py": b"from shop.price import TAX\n\n\ndef test_tax():\n"
                                       b"    assert TAX == 0.2\n",
                 b"data/caf\xe9.csv": b"name,price\ncaf\xe9,3\n"})
    raw_commit(repo, b"Add the tax rate and raise the price of coffee\n")
    commit_files(repo, {b"shop/price.py": (repo / "shop/price.py").read_bytes().replace(
        b"int(x * 100)", b"round(x * 100)"),
        b"tests/test_cents.py": b"from shop.price import cents\n\n\ndef test_cents_rounds():\n"
                                b"    assert cents(0.29) == 29\n"},
        "cents() truncates instead of rounding\n\ncents(0.29) gives 28: 0.29 * 100 is "
        "28.999999999999996.")


@pytest.mark.slow
@pytest.mark.sandbox
def test_build_tasks_from_odd_histories(cli, odd_repo, tmp_path, query):
    build_shop(tmp_path / "shop")
    result = cli("ingest", "commits", odd_repo[0], tmp_path / "shop", "-q")
    assert result.exit_code == 0, result.output
    result = cli("build-tasks", "--generators", "commits.repair", "--out", tmp_path / "tasks")
    assert result.exit_code == 0, result.output
    assert "dropped 1 × commits.repair: path not UTF-8" in result.output
    tasks = sorted(p for p in (tmp_path / "tasks").iterdir() if (p / "task.toml").is_file())
    instructions = sorted((t / "instruction.md").read_text() for t in tasks)
    assert len(tasks) == 2, result.output
    assert "Reported by Jörg: the café totals were too low." in instructions[1]
    assert "cents(0.29) gives 28" in instructions[0]
    (reason,), = query("SELECT reason FROM task_drops WHERE reason LIKE 'path not UTF-8%'")
    assert "café.csv" in reason
