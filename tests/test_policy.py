"""The policy client against a real fault-injecting HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import pickle
import socket
import ssl
import subprocess
import sys
import time
import traceback

import pytest
from fault_server import FaultServer
from hypothesis import given
from hypothesis import strategies as st

from rlforge.config import Config
from rlforge.errors import (
    ConfigError,
    PolicyAuthError,
    PolicyBadRequest,
    PolicyConnectionError,
    PolicyContextLength,
    PolicyError,
    PolicyMalformedResponse,
    PolicyRateLimited,
    PolicyRequestError,
    PolicyServerError,
    PolicyTimeout,
)
from rlforge.policy import PolicyClient, PolicyConfig, parse_retry_after

FAKE_KEY = "sk-rlforge-test-9f8e7d6c5b4a-DO-NOT-LEAK"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server():
    fault = FaultServer().start()
    yield fault
    fault.stop()


def config(server: FaultServer, model: str, **overrides) -> PolicyConfig:
    """Fast retries so tests stay quick; the logic is the same as with real delays."""
    values = dict(base_url=server.url, model=model, backoff_base=0.01, backoff_max=0.05,
                  request_timeout=5.0, max_retries=3)
    values.update(overrides)
    return PolicyConfig(**values)


def chat(cfg: PolicyConfig, messages=HI, **kwargs):
    """Run one chat call in a fresh event loop; return the result or the PolicyError."""

    async def go():
        async with PolicyClient(cfg) as client:
            try:
                return await client.chat(messages, **kwargs)
            except PolicyError as exc:
                return exc

    return asyncio.run(go())


def test_success_carries_message_usage_latency(server):
    result = chat(config(server, "ok"), seed=7)
    assert result.content == "ok"
    assert result.finish_reason == "stop"
    assert (result.prompt_tokens, result.completion_tokens) == (11, 3)
    assert result.attempts == 1 and result.latency > 0
    assert result.message == {"role": "assistant", "content": "ok"}
    assert result.record()["attempts"] == 1


def test_sampling_settings_and_tools_are_passed_through(server):
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {
        "type": "object", "properties": {"command": {"type": "string"}}}}}]
    cfg = config(server, "tool", temperature=0.7, top_p=0.9, max_tokens=64, stop=("END",),
                 extra_body={"top_k": 20})
    result = chat(cfg, seed=123, tools=tools, tool_choice="auto", logprobs=True)
    assert result.finish_reason == "tool_calls"
    assert result.content is None
    assert result.tool_calls[0]["function"]["name"] == "bash"
    sent = server.bodies[-1]
    assert sent["seed"] == 123 and sent["temperature"] == 0.7 and sent["top_p"] == 0.9
    assert sent["max_tokens"] == 64 and sent["stop"] == ["END"] and sent["top_k"] == 20
    assert sent["tools"] == tools and sent["tool_choice"] == "auto" and sent["logprobs"] is True
    assert sent["messages"] == HI


def test_per_call_overrides_and_unset_fields(server):
    chat(config(server, "ok", temperature=None, max_tokens=None), max_tokens=5)
    sent = server.bodies[-1]
    assert "temperature" not in sent and "top_p" not in sent and "seed" not in sent
    assert sent["max_tokens"] == 5


def test_unicode_round_trip(server):
    text = "Grüße — 你好 — 🙂"
    assert chat(config(server, "echo"), [{"role": "user", "content": text}]).content == text


def test_chunked_response_is_read(server):
    assert chat(config(server, "chunked")).content == "ok"


@pytest.mark.parametrize("fault", ["500", "502", "503", "408", "409", "reset", "drop", "slow:3"])
def test_transient_fault_is_retried_then_succeeds(server, fault):
    result = chat(config(server, f"{fault},{fault},ok", request_timeout=0.5))
    assert not isinstance(result, PolicyError), result
    assert result.content == "ok" and result.attempts == 3
    assert server.requests == 3


@pytest.mark.parametrize("fault, error, kind", [
    ("500", PolicyServerError, "server_error"),
    ("503", PolicyServerError, "server_error"),
    ("reset", PolicyConnectionError, "connection"),
    ("drop", PolicyConnectionError, "connection"),
    ("429:0", PolicyRateLimited, "rate_limited"),
    ("slow:3", PolicyTimeout, "timeout"),
    ("slow_body:3", PolicyTimeout, "timeout"),
])
def test_persistent_transient_fault_gives_up_typed(server, fault, error, kind):
    result = chat(config(server, fault, max_retries=2, request_timeout=0.5))
    assert type(result) is error
    assert result.kind == kind and result.infra
    assert result.attempts == 3 and server.requests == 3
    assert result.transient and result.record()["type"] == kind


@pytest.mark.parametrize("fault, error, kind, status", [
    ("truncated", PolicyMalformedResponse, "malformed_response", 200),
    ("invalid_json", PolicyMalformedResponse, "malformed_response", 200),
    ("no_choices", PolicyMalformedResponse, "malformed_response", None),
    ("401", PolicyAuthError, "auth", 401),
    ("400", PolicyBadRequest, "bad_request", 400),
    ("404", PolicyBadRequest, "bad_request", 404),
    ("garbage", PolicyMalformedResponse, "malformed_response", None),
])
def test_permanent_fault_is_not_retried(server, fault, error, kind, status):
    result = chat(config(server, fault))
    assert type(result) is error and result.kind == kind and result.infra
    assert not result.transient and result.status == status
    assert result.attempts == 1 and server.requests == 1


@pytest.mark.parametrize("wording", ["context", "context_size", "context_tgi"])
def test_context_length_is_the_rollouts_fault_not_infra(server, wording):
    result = chat(config(server, wording))
    assert isinstance(result, PolicyContextLength) and isinstance(result, PolicyBadRequest)
    assert result.kind == "context_length" and result.infra is False


def test_connection_refused_is_a_connection_error():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = PolicyConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=1,
                       backoff_base=0.01)
    result = chat(cfg)
    assert isinstance(result, PolicyConnectionError) and result.attempts == 2


def test_retry_after_seconds_is_honoured(server):
    start = time.monotonic()
    result = chat(config(server, "429:1,ok"))
    waited = time.monotonic() - start
    assert result.content == "ok" and result.attempts == 2
    assert 0.8 <= waited < 10


def test_retry_after_http_date_is_honoured(server):
    start = time.monotonic()
    result = chat(config(server, "429:date:2,ok"))
    waited = time.monotonic() - start
    assert result.content == "ok" and result.attempts == 2
    assert 0.5 <= waited < 10  # an HTTP-date has whole-second resolution


def test_retry_after_beyond_the_limit_fails_at_once(server):
    result = chat(config(server, "429:3600,ok", max_retry_after=60))
    assert isinstance(result, PolicyRateLimited)
    assert result.retry_after == 3600 and result.attempts == 1


def test_parse_retry_after_forms():
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": "7"}) == 7
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(30, abs=1)
    assert parse_retry_after({"retry-after": email.utils.formatdate(now - 30, usegmt=True)},
                             now=now) == 0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


@given(st.text(max_size=40), st.text(max_size=12))
def test_parse_retry_after_never_raises(value, millis):
    wait = parse_retry_after({"retry-after": value, "retry-after-ms": millis})
    assert wait is None or wait >= 0


def test_concurrency_limit_is_respected(server):
    async def go():
        async with PolicyClient(config(server, "ok:0.1", concurrency=3)) as client:
            results = await asyncio.gather(*(client.chat(HI) for _ in range(15)))
            return results, client.stats

    results, stats = asyncio.run(go())
    assert all(r.content == "ok" for r in results)
    assert server.peak_in_flight == 3
    assert stats.requests == 15 and stats.succeeded == 15 and stats.in_flight == 0


def test_a_batch_of_faults_classifies_each_and_never_crashes(server):
    faults = {"ok": None, "500": "server_error", "reset": "connection",
              "invalid_json": "malformed_response", "no_choices": "malformed_response",
              "401": "auth", "429:0": "rate_limited", "slow:2": "timeout",
              "context": "context_length", "truncated": "malformed_response"}

    async def one(client, fault):
        body = [{"role": "user", "content": fault}]
        try:
            await client.chat(body, model=fault)
            return None
        except PolicyRequestError as exc:
            return exc.kind

    async def go():
        async with PolicyClient(config(server, "unused", max_retries=1,
                                       request_timeout=0.5, concurrency=16)) as client:
            kinds = await asyncio.gather(*(one(client, f) for f in faults))
            return kinds, client.stats

    kinds, stats = asyncio.run(go())
    assert dict(zip(faults, kinds)) == faults
    assert stats.succeeded == 1 and sum(stats.failed.values()) == len(faults) - 1


def test_retry_budget_stops_retry_storms(server):
    async def go():
        cfg = config(server, "500", concurrency=20, max_retries=5, retry_budget=0.0)
        async with PolicyClient(cfg) as client:
            outcomes = await asyncio.gather(*(client.chat(HI) for _ in range(40)),
                                            return_exceptions=True)
            return outcomes, client.stats

    outcomes, stats = asyncio.run(go())
    assert all(isinstance(o, PolicyServerError) for o in outcomes)
    assert stats.retries == 20  # the reserve: max(10, concurrency), never refilled at ratio 0
    assert server.requests == 40 + 20
    assert any("retry budget" in str(o) for o in outcomes)


def test_api_key_never_appears_in_reprs_logs_or_errors(server, monkeypatch, caplog):
    monkeypatch.setenv("RLFORGE_TEST_API_KEY", FAKE_KEY)
    cfg = Config.load(env={"RLFORGE_TEST_API_KEY": FAKE_KEY,
                           "RLFORGE_RUN_API_KEY_ENV": "RLFORGE_TEST_API_KEY",
                           "RLFORGE_RUN_BASE_URL": server.url,
                           "RLFORGE_RUN_MODEL": "401"})
    texts: list[str] = []

    async def go():
        client = PolicyClient.from_settings(cfg.settings(), max_retries=1, backoff_base=0.01,
                                          request_timeout=0.5)
        texts.extend([repr(client), str(client), repr(client.config), str(client.config.record()),
                      repr(vars(client).get("_key"))])
        async with client:
            for fault in ("401", "500", "reset", "invalid_json", "slow:2", "429:0"):
                try:
                    await client.chat(HI, model=fault)
                except PolicyError as exc:
                    texts.extend([str(exc), repr(exc), str(exc.record()),
                                  "".join(traceback.format_exception(exc))])
        return client

    with caplog.at_level(logging.DEBUG):
        client = asyncio.run(go())
    texts.append(caplog.text)
    assert server.requests > 0
    assert any("Incorrect API key provided: ****" in t for t in texts)  # the echo was scrubbed
    assert any("$RLFORGE_TEST_API_KEY" in t for t in texts)  # the hint names the variable
    for text in texts:
        assert FAKE_KEY not in text
    with pytest.raises(TypeError):
        pickle.dumps(client)


def test_the_key_is_sent_as_a_bearer_token(server, monkeypatch):
    monkeypatch.setenv("RLFORGE_TEST_API_KEY", FAKE_KEY)
    result = chat(config(server, "401", api_key_env="RLFORGE_TEST_API_KEY"))
    assert isinstance(result, PolicyAuthError)
    assert "Incorrect API key provided: ****" in result.message  # the server saw the key


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1, made with the openssl CLI."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


@pytest.fixture
def tls_server(certificate):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    fault = FaultServer(context).start()
    yield fault
    fault.stop()


def test_https_verifies_the_certificate_and_does_not_retry_a_bad_one(tls_server):
    result = chat(config(tls_server, "ok"))
    assert isinstance(result, PolicyConnectionError) and not result.transient
    assert "certificate" in result.message.lower() and result.attempts == 1


def test_https_works_with_a_trusted_certificate(tls_server, certificate):
    # aiohttp builds its default TLS context at import, so trust the CA in a fresh process.
    code = ("import asyncio, sys\n"
            "from rlforge.policy import PolicyClient, PolicyConfig\n"
            "async def go():\n"
            "    async with PolicyClient(PolicyConfig(base_url=sys.argv[1], model='chunked')) as c:\n"
            "        print((await c.chat([{'role': 'user', 'content': 'hi'}])).content)\n"
            "asyncio.run(go())\n")
    out = subprocess.run([sys.executable, "-c", code, tls_server.url], capture_output=True,
                         text=True, env={**os.environ, "SSL_CERT_FILE": str(certificate[0])})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
    assert tls_server.url.startswith("https://")


def test_an_empty_key_variable_override_sends_no_key(server):
    cfg = Config.load(env={"OPENAI_API_KEY": FAKE_KEY, "RLFORGE_RUN_BASE_URL": server.url})

    async def go(**overrides):
        async with PolicyClient.from_settings(cfg.settings(), model="ok", **overrides) as client:
            await client.chat(HI)

    asyncio.run(go())
    asyncio.run(go(api_key_env=""))  # what LocalModel.policy_overrides() passes
    assert server.authorizations == [f"Bearer {FAKE_KEY}", None]


def test_models_lists_the_served_ids(server):
    async def go():
        async with PolicyClient(config(server, "ok")) as client:
            return await client.models()

    assert asyncio.run(go()) == ["fault-model"]


def test_config_from_the_resolver():
    cfg = Config.load(env={"RLFORGE_RUN_BASE_URL": "http://127.0.0.1:9/v1",
                           "RLFORGE_RUN_MODEL": "m", "RLFORGE_RUN_CONCURRENCY": "32",
                           "RLFORGE_RUN_TOP_P": "0.95", "RLFORGE_RUN_STOP": '["</answer>"]'})
    policy = PolicyConfig.from_settings(cfg.settings().run)
    assert policy.concurrency == 32 and policy.top_p == 0.95 and policy.stop == ("</answer>",)
    assert PolicyConfig.from_settings(Config.load(env={}).settings().run).top_p is None  # 1.0 is not sent
    assert PolicyConfig.from_settings(
        cfg.with_flags(run__request_concurrency=4).settings().run).concurrency == 4


@pytest.mark.parametrize("url, root", [
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1"),
    ("http://127.0.0.1:8000", "http://127.0.0.1:8000/v1"),
    ("https://api.example.com/openai/v1", "https://api.example.com/openai/v1"),
])
def test_base_url_is_normalised(url, root):
    assert PolicyClient(PolicyConfig(base_url=url)).root == root


def test_a_bad_base_url_is_a_config_error():
    with pytest.raises(ConfigError, match="not an http"):
        PolicyClient(PolicyConfig(base_url="127.0.0.1:8000"))
