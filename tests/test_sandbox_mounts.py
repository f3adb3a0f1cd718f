"""rlforge.sandbox.mounts: where a sandbox path lives on the host, for the Harbor and
verifiers environments."""

from __future__ import annotations

from pathlib import PurePosixPath as P

import pytest

from rlforge.sandbox.mounts import Mounts


def test_paths_resolve_to_the_deepest_mount_and_new_ones_only_outside_the_system(tmp_path):
    m = Mounts(tmp_path)
    app, logs = m.add("/app"), m.add("/logs/verifier")
    assert m.find(P("/app/src/x.py")) == (app, P("src/x.py"))
    assert m.find(P("/logs/verifier/reward.json")) == (logs, P("reward.json"))
    with pytest.raises(FileNotFoundError):
        m.find(P("/tests/test.sh"))
    tests, rel = m.find(P("/tests/test.sh"), create="/tests/")
    assert rel == P("test.sh") and m.dirs["/tests"] == tests and tests.is_dir()
    for bad in ("/usr/local", "/tmp", "/"):
        with pytest.raises(ValueError, match="read-only"):
            m.find(P(bad + "/x"), create=bad)
    for bad in ("relative/x", "/app/../etc/passwd"):
        with pytest.raises(ValueError):
            m.find(P(bad))
    m.add("/solution")
    binds = m.binds(read_only=["/tests", "/solution"], trusted=True)
    assert (binds["workspace"], binds["logs"], binds["tests"]) == (app, logs, tests)
    assert set(binds["ro_binds"]) == {"/solution"} and binds["rw_binds"] == {}
    # the agent's commands see neither the tests nor the verifier's logs
    agent = m.binds(read_only=["/tests", "/solution"])
    assert (agent["workspace"], agent["logs"], agent["tests"]) == (app, None, None)
    assert set(agent["ro_binds"]) == {"/solution"}
