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
from typing import Any

MAX_EVENT = 65536  # bytes of one report line; longer ones are not rlforge's
ENV_CHANNEL = "RLFORGE_REPAIR_CHANNEL"
ENV_CHECK = "RLFORGE_REPAIR_CHECK"


_channel: dict[str, Any] = {}


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
