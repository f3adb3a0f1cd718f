"""The policy client: the one place rlforge talks to a model.

A policy is any OpenAI-compatible chat-completions endpoint (vLLM, llama.cpp server,
SGLang, a hosted API). A run sends thousands of requests at high concurrency, so this
client is built for throughput and for failing well:

- one pooled keep-alive session (aiohttp: measured against a bare aiohttp loop and a bare
  httpx loop on this project's benchmark, see `benchmarks/policy_client_throughput.py`,
  it reaches the latency-bound ceiling at ~0.15 ms of client CPU per request, while httpx
  spends several ms per request in its connection pool at concurrency 64);
- a concurrency limit, per-request timeout, and retries with exponential backoff and full
  jitter on connection errors, timeouts, 408/409/429/5xx, honouring `Retry-After`
  (seconds or HTTP-date), bounded per request and by a client-wide retry budget;
- every failure is a typed `PolicyRequestError` (see `rlforge.errors`) whose `kind` and
  `infra` flag let a run record it on the rollout and count it as `invalid`;
- the API key comes from the environment variable *named* in the config and never
  reaches a repr, a log line or an exception message (server echoes are scrubbed).

Use it from asyncio:

    async with PolicyClient(PolicyConfig(base_url="http://127.0.0.1:8000/v1", model="m")) as client:
        result = await client.chat([{"role": "user", "content": "hi"}], seed=1)
        print(result.content, result.finish_reason, result.completion_tokens)
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import random
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable
from urllib.parse import urlsplit

import aiohttp

from rlforge import __version__
from rlforge.config import RunSettings, Settings
from rlforge.errors import (
    ConfigError,
    PolicyAuthError,
    PolicyBadRequest,
    PolicyConnectionError,
    PolicyContextLength,
    PolicyMalformedResponse,
    PolicyRateLimited,
    PolicyRequestError,
    PolicyServerError,
    PolicyTimeout,
)

logger = logging.getLogger("rlforge.policy")

# How servers say a conversation outgrew the model: OpenAI and vLLM ("maximum context
# length"), llama-cpp-python ("exceed context window"), llama.cpp's server ("exceeds the
# available context size", type exceed_context_size_error), TGI ("... tokens ... must be
# <= N"), Anthropic-style proxies ("prompt is too long").
CONTEXT_LENGTH = re.compile(
    r"context[ _]length|context window|context[ _]size|maximum context|too many tokens|"
    r"prompt is too long|tokens?\b[^.]{0,80}must be <=", re.I)
_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
_ERROR_TEXT_LIMIT = 300
_RUN = RunSettings()  # the defaults of the `run.*` settings


@dataclass(frozen=True)
class PolicyConfig:
    """Everything about the endpoint and sampling, minus the secret (safe to store).

    `None` for a sampling field means "not sent". `api_key_env` is the *name* of the
    environment variable that holds the key.
    """

    base_url: str
    model: str = _RUN.model
    api_key_env: str = _RUN.api_key_env
    temperature: float | None = _RUN.temperature
    top_p: float | None = None
    max_tokens: int | None = _RUN.max_tokens
    stop: tuple[str, ...] = ()
    extra_body: dict[str, Any] = field(default_factory=dict)
    request_timeout: float = _RUN.request_timeout
    concurrency: int = _RUN.concurrency
    max_retries: int = _RUN.max_retries
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    max_retry_after: float = 120.0
    retry_budget: float = _RUN.retry_budget

    @classmethod
    def from_settings(cls, run: RunSettings, **overrides: Any) -> "PolicyConfig":
        """The policy of the `run.*` settings (`top_p` 1.0 is not sent; `concurrency` is
        `run.request_concurrency`, else `run.concurrency`), `overrides` on top."""
        values: dict[str, Any] = dict(
            base_url=run.base_url,
            model=run.model,
            api_key_env=run.api_key_env,
            temperature=run.temperature,
            top_p=None if run.top_p >= 1.0 else run.top_p,
            max_tokens=run.max_tokens,
            stop=tuple(run.stop),
            extra_body=dict(run.extra_body),
            request_timeout=run.request_timeout,
            concurrency=run.request_concurrency or run.concurrency,
            max_retries=run.max_retries,
            retry_budget=run.retry_budget,
        )
        values.update(overrides)
        return cls(**values)

    def record(self) -> dict[str, Any]:
        """JSON-ready settings for a run's frozen config (holds no secret)."""
        data = asdict(self)
        data["stop"] = list(self.stop)
        return data


@dataclass(slots=True)
class ChatResult:
    """One successful chat completion.

    `message` is the assistant message as the endpoint returned it (role, content,
    tool_calls, and any extra fields such as reasoning_content), ready to append to the
    conversation. `latency` is seconds from the call to the parsed answer, including
    retries; `attempts` counts the requests sent.
    """

    message: dict[str, Any]
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency: float
    attempts: int
    model: str | None = None

    @property
    def content(self) -> str | None:
        """The assistant's text (None when it only called tools)."""
        return self.message.get("content")

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """OpenAI-format tool calls; `function.arguments` is the raw JSON string."""
        return self.message.get("tool_calls") or []

    def record(self) -> dict[str, Any]:
        """A JSON-ready description for the rollout record."""
        return {"message": self.message, "finish_reason": self.finish_reason,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "latency": round(self.latency, 6), "attempts": self.attempts,
                "model": self.model}


@dataclass
class PolicyStats:
    """Running counters for live views: calls, attempts, retries, failures by kind, tokens."""

    requests: int = 0
    attempts: int = 0
    retries: int = 0
    succeeded: int = 0
    in_flight: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0


class RetryBudget:
    """Client-wide cap on retries: each request earns `ratio` of a retry.

    The bucket starts full at `reserve` tokens and never holds more; a retry spends one.
    When an endpoint is down, every request still gets its first attempt but retries
    stop once the bucket is empty, instead of multiplying the load by `max_retries`.
    Waits the server asked for with `Retry-After` are cooperative and spend nothing.
    """

    def __init__(self, ratio: float, reserve: float):
        self.ratio = ratio
        self.reserve = reserve
        self.tokens = reserve

    def earn(self) -> None:
        """Credit one request."""
        self.tokens = min(self.reserve, self.tokens + self.ratio)

    def spend(self) -> bool:
        """Take one retry if the bucket allows it."""
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class _Secret:
    """An API key that cannot leak through repr, str or pickle."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<secret>"

    __str__ = __repr__

    def __reduce__(self):
        raise TypeError("an API key is not pickled; pass the name of its env variable instead")


def parse_retry_after(headers: Any, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` as seconds or an HTTP-date."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


def _endpoint_root(base_url: str) -> str:
    """Normalise a base URL: http(s) only; a bare host gets the usual `/v1`."""
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"run.base_url {base_url!r} is not an http(s) URL; "
                          "give e.g. http://127.0.0.1:8000/v1")
    path = parts.path.rstrip("/") or "/v1"
    return f"{parts.scheme}://{parts.netloc}{path}"


class PolicyClient:
    """Async client for one OpenAI-compatible endpoint; use it as `async with`.

    Args:
        config: endpoint, sampling and retry settings.
        api_key: the key itself; when None it is read from the environment variable
            named by `config.api_key_env` (no key: no Authorization header is sent).
        rng: randomness for backoff jitter (a private `random.Random` by default).
    """

    def __init__(self, config: PolicyConfig, *, api_key: str | None = None,
                 rng: random.Random | None = None):
        self.config = config
        self.root = _endpoint_root(config.base_url)
        self._chat_url = self.root + "/chat/completions"
        key = api_key if api_key is not None else os.environ.get(config.api_key_env or "")
        self._key = _Secret(key) if key else None
        self._rng = rng or random.Random()
        self._slots = asyncio.Semaphore(max(1, config.concurrency))
        self._budget = RetryBudget(config.retry_budget, max(10.0, float(config.concurrency)))
        self._not_before = 0.0
        self._session: aiohttp.ClientSession | None = None
        self._base_body: dict[str, Any] = {"model": config.model}
        for name in ("temperature", "top_p", "max_tokens"):
            if getattr(config, name) is not None:
                self._base_body[name] = getattr(config, name)
        if config.stop:
            self._base_body["stop"] = list(config.stop)
        self._base_body.update(config.extra_body)
        self.stats = PolicyStats()

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> "PolicyClient":
        """A client from the `run.*` settings; the key from the env variable named by
        `run.api_key_env` (or by an `api_key_env` override: "" sends no key)."""
        policy = PolicyConfig.from_settings(settings.run, **overrides)
        return cls(policy, api_key=settings.secret(policy.api_key_env) or "")

    def __repr__(self) -> str:
        auth = f"key from ${self.config.api_key_env}" if self._key else "no key"
        return (f"PolicyClient({self.root!r}, model={self.config.model!r}, "
                f"concurrency={self.config.concurrency}, {auth})")

    async def __aenter__(self) -> "PolicyClient":
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Create the connection pool (called by `async with`)."""
        if self._session is not None:
            return
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": f"rlforge/{__version__}"}
        if self._key:
            headers["Authorization"] = "Bearer " + self._key.reveal()
        host = urlsplit(self.root).hostname or ""
        self._session = aiohttp.ClientSession(
            headers=headers,
            connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
            timeout=aiohttp.ClientTimeout(total=self.config.request_timeout),
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=host not in _LOOPBACK,  # proxies from the env, never for loopback
        )

    async def close(self) -> None:
        """Close every pooled connection."""
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def chat(self, messages: list[dict[str, Any]], *, seed: int | None = None,
                   tools: list[dict[str, Any]] | None = None, tool_choice: Any = None,
                   temperature: float | None = None, top_p: float | None = None,
                   max_tokens: int | None = None, stop: list[str] | None = None,
                   **extra: Any) -> ChatResult:
        """Send one chat-completions request and return the assistant's answer.

        Args:
            messages: the conversation in OpenAI format.
            seed: sampling seed (sent when given).
            tools: OpenAI tool definitions, passed through.
            tool_choice: "auto", "required", "none" or a named function, passed through.
            temperature, top_p, max_tokens, stop: override the config for this call.
            **extra: further request fields, passed through (e.g. `logprobs=True`).

        Returns:
            The completion, with usage, latency and the number of attempts.

        Raises:
            PolicyRequestError: a subclass naming the failure (`kind`), after retries.
        """
        body = dict(self._base_body)
        body["messages"] = messages
        for name, value in (("seed", seed), ("tools", tools), ("tool_choice", tool_choice),
                            ("temperature", temperature), ("top_p", top_p),
                            ("max_tokens", max_tokens), ("stop", stop)):
            if value is not None:
                body[name] = value
        body.update(extra)
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        return await self._call("POST", self._chat_url, payload, self._chat_result)

    async def models(self) -> list[str]:
        """The model ids the endpoint serves (`GET /models`)."""
        return await self._call("GET", self.root + "/models", None, _model_ids)

    async def _call(self, method: str, url: str, payload: bytes | None,
                    parse: Callable[[Any, float, int], Any]) -> Any:
        if self._session is None:
            raise RuntimeError("PolicyClient is not open; use `async with PolicyClient(...)`")
        stats = self.stats
        stats.requests += 1
        self._budget.earn()
        start = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            pause = self._not_before - time.monotonic()
            if pause > 0:
                await asyncio.sleep(pause)
            async with self._slots:
                stats.attempts += 1
                stats.in_flight += 1
                try:
                    data = await self._attempt(method, url, payload)
                    return parse(data, start, attempt)
                except PolicyRequestError as exc:
                    failure = exc
                finally:
                    stats.in_flight -= 1
            delay = self._retry_delay(failure, attempt)
            if delay is None:
                failure.attempts = attempt
                failure.latency = time.perf_counter() - start
                stats.failed[failure.kind] = stats.failed.get(failure.kind, 0) + 1
                raise failure
            stats.retries += 1
            logger.debug("retrying %s in %.2fs (attempt %d): %s", url, delay, attempt,
                         failure.message)
            await asyncio.sleep(delay)

    async def _attempt(self, method: str, url: str, payload: bytes | None) -> Any:
        """One HTTP exchange; the parsed JSON body of a 2xx, or a typed error."""
        failure: PolicyRequestError
        assert self._session is not None, "_call checks the client is open"
        try:
            async with self._session.request(method, url, data=payload) as response:
                status = response.status
                raw = await response.read()
                headers = response.headers
        except asyncio.TimeoutError:  # also aiohttp's connect/read timeouts
            failure = PolicyTimeout(f"no complete response from {url} within "
                                    f"{self.config.request_timeout:g}s")
        except aiohttp.ClientSSLError as exc:  # a certificate will not fix itself
            failure = PolicyConnectionError(f"{url}: TLS failed: {self._scrub(_describe(exc))}",
                                            transient=False)
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, OSError) as exc:
            failure = PolicyConnectionError(f"{url}: {self._scrub(_describe(exc))}")
        except aiohttp.ClientResponseError as exc:  # unparseable HTTP from the server
            failure = PolicyMalformedResponse(f"{url}: invalid HTTP response "
                                              f"({self._scrub(_describe(exc))})")
        else:
            if 200 <= status < 300:
                try:
                    return json.loads(raw)
                except ValueError:
                    failure = PolicyMalformedResponse(
                        f"{url}: HTTP {status} body is not JSON: {self._snippet(raw)}",
                        status=status)
            else:
                failure = self._status_error(url, status, raw, headers)
        raise failure  # outside the except blocks: no aiohttp exception is chained

    def _status_error(self, url: str, status: int, raw: bytes, headers: Any) -> PolicyRequestError:
        text = f"{url}: HTTP {status}: {self._snippet(raw)}"
        retry_after = parse_retry_after(headers)
        if status == 429:
            return PolicyRateLimited(text, status=status, retry_after=retry_after)
        if status == 408:
            return PolicyTimeout(text, status=status, retry_after=retry_after)
        if status in (401, 403):
            env = self.config.api_key_env
            hint = f" (is ${env} set to a valid key?)" if env else ""
            return PolicyAuthError(text + hint, status=status)
        if status == 409 or status >= 500:
            return PolicyServerError(text, status=status, retry_after=retry_after)
        if CONTEXT_LENGTH.search(text):
            return PolicyContextLength(text, status=status)
        return PolicyBadRequest(text, status=status)

    def _retry_delay(self, failure: PolicyRequestError, attempt: int) -> float | None:
        """Seconds to wait before the next attempt, or None to give up."""
        if not failure.transient or attempt > self.config.max_retries:
            return None
        if failure.retry_after is not None:
            if failure.retry_after > self.config.max_retry_after:
                failure.message += (f" (Retry-After {failure.retry_after:g}s is beyond "
                                    f"the {self.config.max_retry_after:g}s limit)")
                return None
            self._not_before = max(self._not_before, time.monotonic() + failure.retry_after)
            return failure.retry_after
        if not self._budget.spend():
            failure.message += " (client retry budget exhausted)"
            return None
        cap = min(self.config.backoff_max, self.config.backoff_base * 2 ** (attempt - 1))
        return self._rng.uniform(0.0, cap)

    def _chat_result(self, data: Any, start: float, attempt: int) -> ChatResult:
        try:
            choice = data["choices"][0]
            message = choice["message"]
            if not isinstance(message, dict):
                raise TypeError
        except (KeyError, IndexError, TypeError):
            error = data.get("error") if isinstance(data, dict) else None
            detail = f"error {json.dumps(error)[:_ERROR_TEXT_LIMIT]}" if error else "no choices[0].message"
            raise PolicyMalformedResponse(f"{self._chat_url}: {self._scrub(detail)}") from None
        usage = data.get("usage") or {}
        stats = self.stats
        stats.succeeded += 1
        prompt_tokens = usage.get("prompt_tokens")
        completion_tokens = usage.get("completion_tokens")
        stats.prompt_tokens += prompt_tokens or 0
        stats.completion_tokens += completion_tokens or 0
        return ChatResult(message, choice.get("finish_reason"), prompt_tokens,
                          completion_tokens, time.perf_counter() - start, attempt,
                          data.get("model"))

    def _snippet(self, raw: bytes) -> str:
        """The server's error message (or the start of its body), with the key scrubbed."""
        text = raw[:4096].decode("utf-8", "replace")
        try:
            data = json.loads(raw)
            error = data.get("error", data) if isinstance(data, dict) else data
            if isinstance(error, dict):
                error = error.get("message") or error.get("detail") or error
            text = error if isinstance(error, str) else json.dumps(error)
        except ValueError:
            pass
        text = " ".join(text.split())
        if len(text) > _ERROR_TEXT_LIMIT:
            text = text[:_ERROR_TEXT_LIMIT] + "…"
        return self._scrub(text or "(empty body)")

    def _scrub(self, text: str) -> str:
        if self._key and self._key.reveal() in text:
            text = text.replace(self._key.reveal(), "****")
        return text


def _model_ids(data: Any, start: float, attempt: int) -> list[str]:
    try:
        return [entry["id"] for entry in data["data"]]
    except (KeyError, TypeError):
        raise PolicyMalformedResponse("GET /models: no data[].id in the answer") from None


def _describe(exc: BaseException) -> str:
    """An exception as one line: its type and message."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    text = text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"
    return text[:_ERROR_TEXT_LIMIT]
