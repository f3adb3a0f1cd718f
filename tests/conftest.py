"""Shared fixtures: tests never touch real user state, and reach real data by path."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from paths import ROOT, SAMPLE_DATA, SHARED_DATA  # noqa: F401  (re-exported for fixtures)


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory) -> Path:
    """One cache directory per test session (prepared environments are slow to build)."""
    return tmp_path_factory.mktemp("rlforge-cache")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch, shared_cache):
    """Point the database, config and home at tmp_path; drop any RLFORGE_* the host has."""
    for key in list(os.environ):
        if key.startswith("RLFORGE_"):
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("RLFORGE_DB", str(tmp_path / "rlforge.duckdb"))
    monkeypatch.setenv("RLFORGE_CACHE_DIR", str(shared_cache))
    monkeypatch.chdir(tmp_path)
    yield tmp_path


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "rlforge.duckdb"


@pytest.fixture
def cli():
    """Invoke the real `rlforge` app in-process: cli("ingest", "tickets", path)."""
    from rlforge.cli import app

    runner = CliRunner()

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)

    return invoke


@pytest.fixture
def query(db_path):
    """Run SQL against the test database (read-only) and return all rows."""

    def run(sql: str, params: list | None = None):
        con = duckdb.connect(str(db_path), read_only=True)
        try:
            return con.execute(sql, params or []).fetchall()
        finally:
            con.close()

    return run


@pytest.fixture
def database_before():
    """A factory for migration tests: make(path, "0006") is a connection to a new DuckDB
    file holding the schema an older rlforge left, every migration named before 0006."""
    from rlforge import db

    def make(path: Path, name: str) -> duckdb.DuckDBPyConnection:
        con = duckdb.connect(str(path))
        con.execute("CREATE TABLE schema_migrations "
                    "(name VARCHAR PRIMARY KEY, applied_at TIMESTAMP, rlforge_version VARCHAR)")
        for m in db.MIGRATIONS:
            if m.name < name:
                con.execute(m.sql)
                con.execute("INSERT INTO schema_migrations VALUES (?, now(), 'old')", [m.name])
        return con

    return make


@pytest.fixture
def local_extra():
    """Require the embedded model's packages: fail under CI=true, skip elsewhere."""
    from rlforge.local_model import INSTALL_HINT, missing_packages

    missing = missing_packages()
    if missing:
        message = (f"the embedded model's packages are not installed ({', '.join(missing)}): "
                   f"{INSTALL_HINT}")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " — the CI set-up must install it")
        pytest.skip(message)
