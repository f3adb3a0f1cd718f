"""The pytest plugin inside the test process, and the wire format of what it sends.

`testrun` copies this file alone, under a random module name, beside the test run and
loads it with `-p`: it imports no sibling (nothing of the tests' import path may stand in
for one). It reports each test's start and phases, collection errors and the values of
checked asserts (see `asserts`) as JSON lines on the verifier's FIFO.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

MAX_EVENT = 65536  # bytes of one report line; longer ones are not rlforge's
ENV_CHANNEL = "RLFORGE_REPAIR_CHANNEL"
ENV_CHECK = "RLFORGE_REPAIR_CHECK"
#: the FIFO in the channel through which the verifier hands over the run's test files
SOURCES = "sources"


_channel: dict[str, Any] = {}
_parsing = threading.Lock()


def parse_source(source):
    """`ast.parse`, one thread at a time. The scorer verifies rollouts in threads, and
    CPython 3.11 can fail a parse with a spurious "AST constructor recursion depth
    mismatch" when two threads build trees at once (a correct submission was scored
    `unscorable`): every parse of the verifier's goes through here."""
    import ast

    with _parsing:
        return ast.parse(source)


def _send(event):
    """One JSON line to the verifier's FIFO (a line under PIPE_BUF is written whole)."""
    fd = _channel.get("fd")
    if fd is None:
        return
    data = (json.dumps(event) + "\n").encode("utf-8", "replace")
    try:
        os.write(fd, data)
    except OSError:
        pass


#: what the run's environment says about the run, taken out of it once read
RUN_VARIABLES = (ENV_CHANNEL, ENV_CHECK, "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_CURRENT_TEST",
                 "PYTEST_VERSION")


def _hide_the_run():
    """Take the run's own variables out of the environment and stop pytest from naming the
    running test in `PYTEST_CURRENT_TEST`: code under test should not learn from its
    environment that a test is running, nor which."""
    for name in RUN_VARIABLES:
        os.environ.pop(name, None)
    runner = sys.modules.get("_pytest.runner")  # loaded by the pytest running this plugin
    if hasattr(runner, "_update_current_test_var"):
        runner._update_current_test_var = lambda item, when: None


class _HeldTests:
    """The run's test files, served from memory; on disk each is an empty stand-in.

    Code under test runs in this process and could otherwise read the hidden tests from
    disk and learn which inputs they try (a red team did, and answered those inputs one
    way and the visible tests' another). The verifier writes their sources into the
    channel's FIFO; this plug-in reads them before any code of the tree is imported
    (it is loaded with `-p`, before the first conftest), and a finder ahead of every
    other gives each module its source once. The FIFO is then empty: opening it again
    finds no writer."""

    def __init__(self, files):
        self.files = files  # {real path: source bytes}

    def find_spec(self, fullname, path=None, target=None):
        from importlib.machinery import ModuleSpec

        name = fullname.rpartition(".")[2] + ".py"
        for entry in sys.path if path is None else path:
            if not isinstance(entry, str):
                continue
            where = os.path.realpath(os.path.join(entry or ".", name))
            if where in self.files:
                spec = ModuleSpec(fullname, self, origin=where)
                spec.has_location = True
                return spec
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        where = module.__spec__.origin
        source = self.files.pop(where, b"")
        module.__file__ = where
        exec(compile(source, where, "exec", dont_inherit=True), module.__dict__)


def _take_tests():
    """Read the run's test sources from the channel's FIFO, if the verifier offers them,
    and serve them (`_HeldTests`)."""
    import base64
    import stat

    chan = os.environ.get(ENV_CHANNEL)
    fifo = os.path.join(chan, SOURCES) if chan else None
    try:
        if fifo is None or not stat.S_ISFIFO(os.lstat(fifo).st_mode):
            return
        with open(fifo, "rb") as fh:
            bundle = json.loads(fh.read())
    except (OSError, ValueError):
        return
    root = bundle["root"]
    files = {os.path.realpath(os.path.join(root, rel)): base64.b64decode(data)
             for rel, data in bundle["files"].items()}
    sys.meta_path.insert(0, _HeldTests(files))


_take_tests()


def pytest_configure(config):
    chan = os.environ.get(ENV_CHANNEL)
    _channel["dir"] = chan
    if chan and "fd" not in _channel:
        try:
            _channel["fd"] = os.open(os.path.join(chan, "results"), os.O_WRONLY)
        except OSError:
            _channel["fd"] = None
        _send({"ready": True})
    name = os.environ.get(ENV_CHECK, "")
    if name.isidentifier():
        import builtins
        setattr(builtins, name, _report_check)
    _hide_the_run()


def _report_check(index, value):
    """What a checked assert of a fail-to-pass test computed, sent for the verifier to compare
    with the expected value, which this process never holds (see `externalize_checks`).
    Returns the value (a build's run keeps the assert around the call)."""
    try:
        data = encode_value(value)
    except (_Unplain, RecursionError, ValueError, OverflowError):
        data = ["?", type(value).__name__]
    event = {"check": index, "value": data}  # the verifier knows the test from its start
    if len(json.dumps(event)) > MAX_EVENT - 1024:
        event["value"] = ["?", "too long"]
    _send(event)
    return value


class _Unplain(Exception):
    pass


def encode_value(value, depth=0):
    """A value as tagged JSON that `decode_value` rebuilds with its type and equality: None, bool,
    numbers, str, bytes and lists, tuples, sets and dicts of them; anything else raises."""
    import numbers

    if depth > 50:
        raise _Unplain
    if value is None:
        return ["N"]
    if isinstance(value, bool):
        return ["b", value]
    if isinstance(value, numbers.Integral):
        return ["i", str(int(value))]
    if isinstance(value, numbers.Real):
        return ["f", repr(float(value))]
    if isinstance(value, complex):
        return ["c", repr(value.real), repr(value.imag)]
    if isinstance(value, str):
        return ["s", str.__add__("", value)]
    if isinstance(value, (bytes, bytearray)):
        return ["y", bytes(value).hex()]
    for kind, tag in ((list, "l"), (tuple, "t"), (set, "S"), (frozenset, "F")):
        if isinstance(value, kind):
            return [tag, [encode_value(v, depth + 1) for v in value]]
    if isinstance(value, dict):
        return ["d", [[encode_value(k, depth + 1), encode_value(v, depth + 1)] for k, v in value.items()]]
    raise _Unplain


def decode_value(data):
    """The value `encode_value` sent (raises ValueError, TypeError or KeyError on anything else)."""
    tag = data[0]
    if tag == "N":
        return None
    if tag == "b":
        return bool(data[1])
    if tag == "i":
        if len(data[1]) > 4000:
            raise ValueError("integer too long")
        return int(data[1])
    if tag == "f":
        return float(data[1])
    if tag == "c":
        return complex(float(data[1]), float(data[2]))
    if tag == "s":
        if not isinstance(data[1], str):
            raise TypeError("not a string")
        return data[1]
    if tag == "y":
        return bytes.fromhex(data[1])
    if tag in ("l", "t", "S", "F"):
        items = [decode_value(v) for v in data[1]]
        return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
    if tag == "d":
        return {decode_value(k): decode_value(v) for k, v in data[1]}
    raise ValueError(f"not a value: {tag!r}")


def pytest_collection_modifyitems(session, config, items):
    """Keep only the requested test ids and drop the excluded ones (hung earlier)."""
    chan = _channel.get("dir")
    if not chan:
        return
    with open(os.path.join(chan, "select.json"), encoding="utf-8") as fh:
        wanted = json.load(fh)
    only = set(wanted["only"]) if wanted.get("only") is not None else None
    exclude = set(wanted.get("exclude", ()))
    kept, dropped = [], []
    for item in items:
        ok = (only is None or item.nodeid in only) and item.nodeid not in exclude
        (kept if ok else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_collectreport(report):
    if report.failed:
        _send({"collect_error": report.nodeid or "<session>"})


def pytest_runtest_logstart(nodeid, location):
    # the running test's id is kept nowhere in this process: code under test that found
    # this module would learn which test calls it
    _send({"start": nodeid})


def pytest_runtest_logreport(report):
    _send({"report": report.nodeid, "when": report.when, "outcome": report.outcome})
