"""A repository that declares its dependencies only in `setup.py` gets them installed.

The setup.py is read from its syntax tree (never run): the literal arguments of its
`setup()` call and names bound to literals; the rest is listed as unread, with why. End to
end, a small git repository whose tests import a package that only its setup.py names
becomes a repair task (the package is a wheel made here, found with pip's --find-links).
"""

from __future__ import annotations

import json
import tomllib

import pytest

from rlforge.tasks.generators.repair import envs
from builds import build_repair, repair_home
from test_commits_repair import Repo
from test_sandbox_envs import make_wheel


def discover(setup: str, **other: str) -> envs.Requirements:
    return envs.discover({"setup.py": setup.encode(), **{k: v.encode() for k, v in other.items()}})


def test_literal_install_requires_and_test_requirements_are_read():
    found = discover(
        "from setuptools import setup\n"
        "setup(name='Greet_Lib', install_requires=['six>=1.0,<2', 'attrs'],\n"
        "      tests_require=('pytest-mock',),\n"
        "      extras_require={'test': 'hypothesis\\n# a comment\\nfreezegun', 'dev': ['black'],\n"
        "                      'docs': ['sphinx']})\n")
    assert found.requirements == ("attrs", "freezegun", "hypothesis", "pytest", "pytest-mock", "six>=1.0,<2")
    assert (found.sources, found.unread) == (("setup.py",), ())
    assert found.files_sha256 != discover("setup(install_requires=['six'])").files_sha256


def test_dev_extras_count_only_without_test_ones_and_the_project_itself_is_left_out():
    found = discover("import setuptools\n"
                     "setuptools.setup(name='greet-lib', install_requires=['greet_lib', 'six'],\n"
                     "                 extras_require={'dev': ['black'], 'docs': ['sphinx']})\n")
    assert found.requirements == ("black", "pytest", "six")


def test_a_name_bound_to_a_name_that_is_not_literal_says_both():
    found = discover("X = get()\nREQS = ['six'] + X\nsetup(install_requires=REQS)")
    assert found.unread == ("setup.py: install_requires: a Call at line 1, in the value of REQS",)


def test_names_bound_once_to_literals_are_followed():
    found = discover("BASE = ['six']\nEXTRA: list = ['attrs']\nTESTS = BASE + EXTRA + ['mock']\n"
                     "OPTIONAL = {'testing': TESTS}\n"
                     "setup(install_requires=BASE, extras_require=OPTIONAL)\n")
    assert found.requirements == ("attrs", "mock", "pytest", "six")
    assert found.unread == ()


@pytest.mark.parametrize(("source", "why"), [
    ("setup(install_requires=open('requirements.in').read().splitlines())",
     "install_requires: a Call at line 1"),
    ("import sys\nREQS = ['six'] if sys.version_info < (3,) else []\nsetup(install_requires=REQS)",
     "install_requires: a IfExp at line 2, in the value of REQS"),
    ("REQS = ['six']\nREQS.append('enum34')\nsetup(install_requires=REQS)",
     "install_requires: the name REQS is bound more than once, in a block, or changed in place (line 3)"),
    ("REQS = ['six']\nif True:\n    REQS = ['attrs']\nsetup(install_requires=REQS)",
     "install_requires: the name REQS is bound more than once, in a block, or changed in place (line 4)"),
    ("from requirements import REQS\nREQS = ['six']\nsetup(install_requires=REQS)",
     "install_requires: the name REQS is bound more than once, in a block, or changed in place (line 3)"),
    ("TEST = get_test()\nsetup(extras_require=TEST)",
     "extras_require: a Call at line 1, not a dict, in the value of TEST"),
    ("setup(install_requires=[NAME])", "install_requires: an item that is not a string (Name) at line 1"),
    ("setup(install_requires=REQS)", "install_requires: the name REQS is not bound in setup.py (line 1)"),
    ("setup(extras_require={k: ['pytest-cov'] for k in 'ab'})",
     "extras_require: a DictComp at line 1, not a dict"),
    ("setup(**options)", "setup(**...) at line 1: its keywords are not read"),
    ("print 'python 2'\nsetup(install_requires=['six'])", "not parsed as Python 3 (SyntaxError at line 1)"),
    ("from distutils.core import run_setup\nrun_setup('other.py')", "no setup() call"),
])
def test_what_is_not_a_literal_is_left_out_and_said(source, why):
    found = discover(source)
    assert found.requirements == ("pytest",)
    assert found.unread == (f"setup.py: {why}",)
    assert found.sources == ()


def test_a_literal_argument_is_read_beside_one_that_is_not():
    found = discover("setup(install_requires=['six'], extras_require={'test': ['mock'], 'dev': get_dev()})")
    assert found.requirements == ("mock", "pytest", "six")
    assert found.unread == ("setup.py: extras_require['dev']: a Call at line 1",)


def test_setup_py_adds_to_the_other_dependency_files():
    found = discover("setup(install_requires=['six'])", **{
        "setup.cfg": "[metadata]\nname = greet\n[options]\ninstall_requires =\n    attrs\n",
        "requirements-test.txt": "mock\n"})
    assert found.requirements == ("attrs", "mock", "pytest", "six")
    assert found.sources == ("setup.cfg", "setup.py", "requirements-test.txt")


def test_setup_py_is_never_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = discover("open('ran', 'w').write('yes')\nimport setuptools\nsetuptools.setup(install_requires=['six'])\n")
    assert found.requirements == ("pytest", "six")
    assert not (tmp_path / "ran").exists()


SETUP = """from setuptools import setup

DEPENDENCIES = ["rlforge-hello==0.1"]

setup(name="greet", version="1.0", packages=["greet"], install_requires=DEPENDENCIES)
"""
CORE = """import rlforge_hello


def shout(text):
    return text.upper() + "!"


def whisper(text):
    return text.upper()
"""
TESTS = """import rlforge_hello

from greet.core import shout


def test_hello_is_installed():
    assert callable(rlforge_hello.main)


def test_shout():
    assert shout("hi") == "HI!"
"""
WHISPER_TEST = """

def test_whisper():
    from greet.core import whisper
    assert whisper("Quiet Please") == "quiet please"
"""


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_dependency_declared_only_in_setup_py_makes_the_commit_a_task(tmp_path, shared_cache):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    make_wheel(wheels)
    repo = Repo(tmp_path / "greet")
    repo.commit("Initial greet package with shout and whisper",
                {"setup.py": SETUP, "greet/__init__.py": "", "greet/core.py": CORE, "tests/test_core.py": TESTS})
    fix = repo.commit("whisper() shouts instead of lowering the text\n\nwhisper gives the text in capitals.",
                      {"greet/core.py": CORE.replace("return text.upper()\n", "return text.lower()\n"),
                       "tests/test_core.py": TESTS + WHISPER_TEST})
    with repair_home(tmp_path, shared_cache):
        report = build_repair(tmp_path, [repo.path], validate=True, repo_settings={
            "greet": {"pip_args": ["--find-links", str(wheels)], "collect_timeout": 30}})
    tasks = [p for p in (tmp_path / "tasks").iterdir() if (p / "task.toml").is_file()]
    assert len(tasks) == 1, report
    meta = tomllib.loads((tasks[0] / "task.toml").read_text())["metadata"]["rlforge"]
    assert meta["commit"] == fix
    assert meta["dependency_files"] == ["setup.py"]
    assert "dependency_files_unread" not in meta
    assert "rlforge-hello==0.1" in meta["env_requirements"]
    reference = json.loads((tasks[0] / "tests" / "reference.json").read_text())
    assert reference["fail_to_pass"] == ["tests/test_core.py::test_whisper"]
