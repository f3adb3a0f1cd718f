"""Escape corpus: the network. Sandboxed code must reach nothing, not even the host's loopback."""

from __future__ import annotations

import socket
import time
import uuid

import pytest

pytestmark = pytest.mark.sandbox


def test_tcp_connect_to_a_server_on_host_loopback_is_refused(listener, py, sh):
    r = py(f"""
import socket
try:
    socket.create_connection(("127.0.0.1", {listener.port}), timeout=2)
    print("CONNECTED")
except OSError as e:
    print("refused", e.errno)
""")
    assert r.exit_code == 0 and r.stdout_text.startswith("refused"), r
    r = sh(f"bash -c 'echo hi > /dev/tcp/127.0.0.1/{listener.port}' && echo CONNECTED")
    assert "CONNECTED" not in r.stdout_text
    assert listener.accepted == 0
    # the witness works: the host itself can connect
    socket.create_connection(("127.0.0.1", listener.port), timeout=2).close()
    for _ in range(50):
        if listener.accepted:
            break
        time.sleep(0.02)
    assert listener.accepted == 1


def test_tcp_connect_to_host_ipv6_loopback_is_refused(py, make_listener):
    try:
        server = make_listener(socket.AF_INET6, "::1")
    except OSError:
        pytest.skip("no IPv6 loopback on this host")
    r = py(f"""
import socket
try:
    socket.create_connection(("::1", {server.port}), timeout=2); print("CONNECTED")
except OSError as e:
    print("refused", e.errno)
""")
    assert r.stdout_text.startswith("refused"), r
    assert server.accepted == 0


def test_abstract_unix_socket_of_the_host_is_unreachable(py):
    # Abstract sockets live in the network namespace; a host daemon listening on one
    # (X11, dbus, containerd shims) must be out of reach.
    name = f"\0rlforge-test-{uuid.uuid4().hex}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(name)
    server.listen()
    try:
        r = py(f"""
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect({name!r}); print("CONNECTED")
except OSError as e:
    print("refused", e.errno)
""")
        assert r.stdout_text.startswith("refused"), r
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.connect(name)  # the witness works from the host
        probe.close()
    finally:
        server.close()


def test_dns_lookup_and_udp_to_a_resolver_fail(py):
    r = py("""
import os, socket
try:
    socket.getaddrinfo("example.com", 443); print("RESOLVED")
except socket.gaierror as e:
    print("no dns:", e)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.sendto(b"x", ("8.8.8.8", 53)); print("SENT")
except OSError as e:
    print("udp", e.errno)
print("resolv.conf", os.path.exists("/etc/resolv.conf"))
""")
    out = r.stdout_text
    assert "RESOLVED" not in out and "SENT" not in out, out
    assert "no dns:" in out and "resolv.conf False" in out


def test_only_a_private_loopback_interface_exists(sh):
    r = sh("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
    assert r.stdout_text.split() == ["lo"], r.stdout_text
