"""How a task's verifier loads its own modules: from their source beside the entry, only.

An entry (`tests/rlforge_verify.py`, `tests/rlforge_repair.py`) runs as `python3 -I`, so
neither the working directory nor PYTHONPATH nor the user's site-packages is on its path.
Its own directory must stay off the path too: a policy that could write into tests/ before
the tests were copied in (Harbor running agent and verifier in one container) would have
Python take a planted `json.py` for the standard library's, or a planted
`__pycache__/rlforge_rewards.*.pyc` for the copy beside it (bytecode Python does not check
against its source). So `install` adds a finder for exactly the `rlforge_*` names, each
compiled from its `.py` file in the entry's directory, and nothing else is looked up there.

Imports nothing of its siblings: the entries run it by path (`runpy.run_path`, which
compiles the source too) before they import any of them.
"""

import importlib.machinery
import importlib.util
import os
import sys

PREFIX = "rlforge_"


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Compiles the module's source every time; never reads or writes bytecode."""

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        return compile(self.get_data(path), path, "exec", dont_inherit=True)


class SiblingFinder:
    """Finds `rlforge_<module>` as `<directory>/rlforge_<module>.py`, and nothing else."""

    def __init__(self, directory):
        self.directory = directory

    def find_spec(self, name, path=None, target=None):
        if not name.startswith(PREFIX) or "." in name:
            return None
        file = os.path.join(self.directory, name + ".py")
        if not os.path.isfile(file):
            return None
        return importlib.util.spec_from_file_location(name, file,
                                                      loader=SourceOnlyLoader(name, file))

    def invalidate_caches(self):
        pass


def install(entry_file):
    """Load the entry's siblings from beside `entry_file`; keep that directory off the path."""
    directory = os.path.dirname(os.path.abspath(entry_file))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != directory]
    sys.dont_write_bytecode = True
    sys.meta_path.insert(0, SiblingFinder(directory))
