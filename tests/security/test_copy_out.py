"""Escape corpus: links and special files planted by sandboxed code for rlforge to read later.

The attack: the policy replaces /logs/verifier/reward.json (or a workspace file rlforge
copies out) with a symlink to a host file. Inside the sandbox the link dangles; on the host,
after the run, it points at the real secret.
"""

from __future__ import annotations

import errno
import os
import stat

import pytest

from rlforge.sandbox import copy_tree, read_file

pytestmark = pytest.mark.sandbox


def test_a_symlinked_reward_file_is_not_followed(task, sh):
    r = sh(f"ln -s {task.secret} /logs/verifier/reward.json; ln -s {task.secret} /app/notes.txt")
    assert r.exit_code == 0, r
    # witness: a naive reader on the host would hand the secret to the reward parser
    assert "HOST SECRET" in (task.logs / "reward.json").read_text()
    with pytest.raises(OSError) as exc:
        read_file(task.logs, "reward.json")
    assert exc.value.errno == errno.ELOOP
    report = copy_tree(task.workspace, task.root / "out")
    assert ("notes.txt", "symlink") in report.skipped
    assert not (task.root / "out" / "notes.txt").exists()
    assert report.files == ["answer.txt"]


def test_a_symlinked_directory_on_the_way_is_not_followed(task, sh):
    r = sh(f"mkdir /logs/verifier/real && ln -s {task.secret.parent} /logs/verifier/sub")
    assert r.exit_code == 0, r
    assert (task.logs / "sub" / "id_rsa").read_text().startswith("-----BEGIN")  # witness
    with pytest.raises(OSError) as exc:
        read_file(task.logs, "sub/id_rsa")
    assert exc.value.errno == errno.ELOOP
    report = copy_tree(task.logs, task.root / "out")
    assert ("sub", "symlink") in report.skipped and report.files == []


def test_a_fifo_in_place_of_the_reward_file_does_not_hang_the_reader(task, sh):
    r = sh("mkfifo /logs/verifier/reward.json && mkfifo /app/pipe")
    assert r.exit_code == 0, r
    with pytest.raises(OSError) as exc:
        read_file(task.logs, "reward.json")
    assert exc.value.errno == errno.EINVAL
    report = copy_tree(task.workspace, task.root / "out")
    assert ("pipe", "not a regular file") in report.skipped


def test_an_oversized_reward_file_is_refused(task, sh):
    sh("head -c 2000000 /dev/zero > /logs/verifier/reward.json")
    with pytest.raises(OSError) as exc:
        read_file(task.logs, "reward.json", max_bytes=1_000_000)
    assert exc.value.errno == errno.EFBIG


def test_paths_escaping_the_root_are_refused(task):
    for bad in ("../task/tests/test.sh", "/etc/passwd", "a/../../x", ""):
        with pytest.raises(OSError):
            read_file(task.logs, bad)


def test_copy_out_keeps_plain_files_and_drops_special_mode_bits(task, sh):
    # chmod u+s is refused in the sandbox, but an empty file may be created setuid
    r = sh("mkdir -p /app/src/pkg && echo 'print(1)' > /app/src/pkg/m.py && "
           "python3 -c 'import os; os.open(\"/app/tool\", os.O_CREAT, 0o4755)' && echo done")
    assert r.stdout_text.strip() == "done", r
    # the sandbox's own copy-out already drops the bit (see test_limits for the attack)
    assert not os.stat(task.workspace / "tool").st_mode & (stat.S_ISUID | stat.S_ISGID)
    report = copy_tree(task.workspace, task.root / "out")
    assert sorted(report.files) == ["answer.txt", "src/pkg/m.py", "tool"]
    assert (task.root / "out" / "src" / "pkg" / "m.py").read_text() == "print(1)\n"
    mode = os.stat(task.root / "out" / "tool").st_mode
    assert not mode & (stat.S_ISUID | stat.S_ISGID) and mode & stat.S_IXUSR


def test_copying_back_never_writes_through_a_link_planted_by_an_earlier_run(task, sh):
    before = task.secret.read_text()
    r = sh(f"ln -s {task.secret.parent} /app/sub")
    assert r.exit_code == 0 and (task.workspace / "sub").is_symlink()  # the link came back
    # the next run replaces the link by a directory holding the secret's name
    r = sh("rm /app/sub && mkdir /app/sub && echo pwned > /app/sub/id_rsa")
    assert r.exit_code == 0, r
    assert task.secret.read_text() == before
    assert not (task.workspace / "sub").is_symlink()
    assert (task.workspace / "sub" / "id_rsa").read_text() == "pwned\n"


def test_files_a_run_did_not_touch_are_not_copied_back_nor_counted(task, sh):
    big = task.workspace / "data.bin"
    big.write_bytes(b"\0" * (20 << 20))  # over the per-file copy-out cap
    mtime = big.stat().st_mtime_ns
    r = sh("echo more >> /app/answer.txt; cat /app/data.bin | wc -c")
    assert r.stdout_text.strip() == str(20 << 20), r
    assert r.submission_too_large is None, r
    assert big.stat().st_mtime_ns == mtime and big.stat().st_size == 20 << 20
    assert (task.workspace / "answer.txt").read_text() == "broken\nmore\n"
    r = sh("echo x >> /app/data.bin")  # now it changed: too large to bring back
    assert r.submission_too_large and "data.bin" in r.submission_too_large
    assert not big.exists()
