#!/usr/bin/env python3
"""Seeded generator of the ops logs of Tallybird's (fictional) service fleet, with one
incident in them.

Two hours of five services on 2024-09-17, 13:00–15:00 UTC, each in its own format:

- ``edge-access.log``        nginx combined access log of the edge gateway
- ``billing-api.jsonl``      JSON lines (structlog) of the billing API
- ``inventory-sync.log``     a Java service (log4j pattern layout), with stack traces
- ``pg-main.syslog``         PostgreSQL via syslog (RFC 3164, a few RFC 5424 lines)
- ``pos-gateway.json.log.gz`` Docker json-file log of the point-of-sale gateway (gzip)

The incident (its ground truth is written to ``incident.json``): the deploy of
inventory-sync 4.13.0 at 13:52 starts a full stock resync whose query misses an index;
from 14:03 PostgreSQL logs slow statements and then runs out of connections, the
service's pool times out, billing cannot reach the database, the edge answers 503/504
on invoices and checkout, and the POS gateway retries. At 14:31 the on-call engineer
rolls inventory-sync back to 4.12.7; by 14:36 everything is healthy again.

    python sample_data/logs/generate.py [--out DIR] [--seed N] [--scale K]

Standard library only; the same seed and scale give the same bytes. A few lines are
broken on purpose (a truncated access-log line, a warning printed into the JSON log, a
syslog line without a tag), and the logs carry invented personal data to redact.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import tallybird_incidents as story  # noqa: E402  (sample_data/: the incidents' times and ids)

DEFAULT_SEED = 20240917
DAY = dt.datetime(2024, 9, 17, 13, 0, 0)
END = DAY + dt.timedelta(hours=2)
DEPLOY = DAY + dt.timedelta(minutes=52, seconds=11)
SLOW = DAY + dt.timedelta(hours=1, minutes=3, seconds=40)       # slow resync queries
EXHAUSTED = DAY + dt.timedelta(hours=1, minutes=5, seconds=2)   # connections run out
ROLLBACK = DAY + dt.timedelta(hours=1, minutes=31, seconds=25)
RECOVERED = DAY + dt.timedelta(hours=1, minutes=35, seconds=50)

SHOPS = ["bakery-lumen", "bookshop-quire", "bikes-spoke", "deli-marlow", "florist-petal",
         "cafe-ember", "toys-kite", "hardware-bolt", "records-groove", "tea-oolong"]
PEOPLE = ["ana.silva", "ben.okafor", "chloe.martin", "dev.patel", "emma.jones",
          "felix.wagner", "grace.kim", "hugo.bernard", "ines.costa", "jon.berg"]
CLIENT_IPS = [f"203.0.113.{i}" for i in (12, 27, 44, 58, 91, 102, 133, 176, 201, 240)] + \
             [f"198.51.100.{i}" for i in (7, 19, 36, 64, 88)]
AGENTS = ["Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 Safari/605.1.15",
          "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/128.0 Safari/537.36",
          "TallybirdPOS/3.8.2 (iPadOS 17.6)", "TallybirdPOS/3.8.1 (Android 14)",
          "python-requests/2.32.3", "curl/8.7.1"]


def in_incident(t: dt.datetime) -> bool:
    return EXHAUSTED <= t < ROLLBACK + dt.timedelta(minutes=2)


def times(rng: random.Random, per_minute: float, start=DAY, end=END) -> list[dt.datetime]:
    """Event times of a Poisson-like process between start and end."""
    out, t = [], start
    while True:
        t += dt.timedelta(seconds=rng.expovariate(per_minute / 60.0))
        if t >= end:
            return out
        out.append(t)


# --- edge gateway: nginx combined --------------------------------------------------------

EDGE_ROUTES = [("GET", "/api/v2/invoices/{inv}", 0.22), ("POST", "/api/v2/invoices", 0.06),
               ("GET", "/api/v2/inventory/items?shop={shop}&page={page}", 0.25),
               ("POST", "/pos/checkout", 0.12), ("GET", "/dashboard", 0.12),
               ("POST", "/login", 0.05), ("GET", "/static/app.{hash}.js", 0.13),
               ("GET", "/healthz", 0.05)]


def access_log(rng: random.Random, per_minute: float, start: dt.datetime, end: dt.datetime,
               routes: list, failing) -> list[str]:
    """Combined access-log lines; `failing(t, method, path)` gives a 5xx (status, size) or
    None (it may draw from `rng`)."""
    lines = []
    weights = [w for *_, w in routes]
    for t in times(rng, per_minute, start, end):
        method, path, _ = rng.choices(routes, weights)[0]
        path = path.format(inv=f"INV-{rng.randint(20000, 29999)}", shop=rng.choice(SHOPS),
                           page=rng.randint(1, 9), hash=rng.choice(["3f9ac1", "b71e02"]))
        status, size = 200, rng.randint(400, 38000)
        if method == "POST" and path == "/login" and rng.random() < 0.1:
            status, size = 401, 84
        if path.startswith("/api/v2/invoices/") and rng.random() < 0.02:
            status, size = 404, 112
        status, size = failing(t, method, path) or (status, size)
        ip = rng.choice(CLIENT_IPS)
        ref = "-" if path.startswith(("/api", "/pos", "/store/api")) else "https://app.tallybird.example/"
        rt = rng.uniform(5, 30) if status >= 503 else rng.uniform(0.002, 0.4)
        lines.append(f'{ip} - - [{t:%d/%b/%Y:%H:%M:%S} +0000] "{method} {path} HTTP/1.1" '
                     f'{status} {size} "{ref}" "{rng.choice(AGENTS)}" rt={rt:.3f}')
    return lines


def edge(rng: random.Random, scale: int) -> list[str]:
    def failing(t, method, path):
        hit = path.startswith(("/api/v2/invoices", "/pos/checkout", "/api/v2/inventory"))
        if in_incident(t) and hit and rng.random() < 0.7:
            return rng.choice([(503, 197), (503, 197), (504, 183)])
        return None

    lines = access_log(rng, 16 * scale, DAY, END, EDGE_ROUTES, failing)
    cut = len(lines) * 3 // 5  # a line cut short while the disk was full (an ops hiccup)
    lines.insert(cut, lines[cut][:37])
    return lines


# --- billing API: structlog JSON lines -------------------------------------------------------

def billing(rng: random.Random, scale: int) -> list[str]:
    lines = []
    for t in times(rng, 6 * scale):
        shop, who = rng.choice(SHOPS), rng.choice(PEOPLE)
        ev = {"timestamp": t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{rng.randint(0, 999999):06d}Z",
              "logger": "billing.api", "request_id": f"req_{rng.getrandbits(48):012x}"}
        roll = rng.random()
        if in_incident(t) and roll < 0.75:
            ev.update(level="error", event="db.connect_failed", shop=shop, attempt=rng.randint(1, 3),
                      error="OperationalError: connection to server at \"pg-main.internal\" "
                            "(10.20.0.5), port 5432 failed: FATAL:  sorry, too many clients already")
        elif roll < 0.40:
            ev.update(level="info", event="invoice.created", shop=shop,
                      invoice=f"INV-{rng.randint(20000, 29999)}",
                      amount_cents=rng.randint(500, 90000), currency="USD")
        elif roll < 0.70:
            ev.update(level="info", event="payment.captured", shop=shop,
                      invoice=f"INV-{rng.randint(20000, 29999)}", method=rng.choice(["card", "ach"]),
                      duration_ms=rng.randint(80, 900))
        elif roll < 0.85:
            ev.update(level="info", event="receipt.emailed", shop=shop,
                      to=f"{who}@{shop}.example")
        elif roll < 0.95:
            ev.update(level="debug", event="cache.hit", key=f"plan:{shop}")
        else:
            ev.update(level="warning", event="payment.retry_scheduled", shop=shop,
                      invoice=f"INV-{rng.randint(20000, 29999)}", retry_in_s=rng.choice([30, 60, 300]))
        lines.append(json.dumps(ev))
    at = len(lines) // 3
    lines.insert(at, "/srv/billing/app.py:212: DeprecationWarning: datetime.utcnow() is "
                     "deprecated and scheduled for removal in a future version.")
    return lines


# --- inventory-sync: Java with stack traces ------------------------------------------------

TRACE = """\
java.sql.SQLTransientConnectionException: HikariPool-1 - Connection is not available, request timed out after 30000ms.
\tat com.zaxxer.hikari.pool.HikariPool.createTimeoutException(HikariPool.java:696)
\tat com.zaxxer.hikari.pool.HikariPool.getConnection(HikariPool.java:181)
\tat com.zaxxer.hikari.HikariDataSource.getConnection(HikariDataSource.java:100)
\tat com.tallybird.inventory.sync.StockRepository.levelsFor(StockRepository.java:{line})
\tat com.tallybird.inventory.sync.ResyncJob.run(ResyncJob.java:57)
Caused by: org.postgresql.util.PSQLException: FATAL: sorry, too many clients already
\tat org.postgresql.core.v3.ConnectionFactoryImpl.doAuthentication(ConnectionFactoryImpl.java:693)
\t... 14 more"""


def inventory(rng: random.Random, scale: int) -> list[str]:
    out: list[tuple[dt.datetime, str]] = []

    def log(t, level, thread, comp, msg):
        out.append((t, f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d} {level:<5} "
                       f"[{thread}] {comp}: {msg}"))

    for t in times(rng, 4 * scale):
        shop = rng.choice(SHOPS)
        if DEPLOY <= t < ROLLBACK and t >= SLOW and rng.random() < 0.5:
            if in_incident(t) and rng.random() < 0.6:
                log(t, "ERROR", f"resync-{rng.randint(1, 8)}", "c.t.inventory.sync.ResyncJob",
                    f"resync of shop {shop} failed after {rng.randint(30001, 30450)} ms\n"
                    + TRACE.format(line=rng.choice([142, 142, 168])))
            else:
                log(t, "WARN", f"resync-{rng.randint(1, 8)}", "c.t.inventory.sync.ResyncJob",
                    f"resync of shop {shop} slow: {rng.randint(4000, 29000)} ms for "
                    f"{rng.randint(800, 5200)} SKUs")
        elif rng.random() < 0.7:
            log(t, "INFO", f"sync-{rng.randint(1, 4)}", "c.t.inventory.sync.DeltaSync",
                f"applied {rng.randint(1, 60)} stock deltas for shop {shop} in "
                f"{rng.randint(3, 90)} ms")
        else:
            log(t, "DEBUG", "scheduler-1", "c.t.inventory.sched.Scheduler",
                f"next delta sync for shop {shop} in {rng.choice([15, 30, 60])} s")
    log(DEPLOY, "INFO", "main", "c.t.inventory.Application",
        "Starting inventory-sync 4.13.0 (commit 8d41c2e) with profile prod")
    log(DEPLOY + dt.timedelta(seconds=4), "INFO", "main", "c.t.inventory.sync.ResyncJob",
        "full stock resync scheduled for all 1,284 shops (reason: schema 4.13 backfill)")
    log(DEPLOY + dt.timedelta(seconds=6), "INFO", "main", "com.zaxxer.hikari.HikariDataSource",
        "HikariPool-1 - Start completed. maximumPoolSize=40")
    log(ROLLBACK, "INFO", "main", "c.t.inventory.Application",
        "Starting inventory-sync 4.12.7 (commit 5be09a1) with profile prod")
    log(ROLLBACK + dt.timedelta(seconds=3), "WARN", "main", "c.t.inventory.Application",
        "rollback requested by jon.berg@tallybird.example: full resync disabled")
    return [line for _, line in sorted(out, key=lambda x: x[0])]


# --- pg-main: PostgreSQL via syslog --------------------------------------------------------

def postgres(rng: random.Random, scale: int) -> list[str]:
    out: list[tuple[dt.datetime, str]] = []
    seq = [0]

    def log(t, pid, msg, pri=None):
        seq[0] += 1
        prefix = f"<{pri}>" if pri else ""
        out.append((t, f"{prefix}{t:%b %e %H:%M:%S} pg-main postgres[{pid}]: [{seq[0]}-1] {msg}"))

    for t in times(rng, 3 * scale):
        pid = rng.randint(20000, 65000)
        if SLOW <= t < ROLLBACK and rng.random() < 0.6:
            if in_incident(t) and rng.random() < 0.5:
                log(t, pid, "FATAL:  sorry, too many clients already", pri=26)
            else:
                log(t, pid, f"LOG:  duration: {rng.uniform(4000, 29000):.3f} ms  statement: SELECT "
                            "sku, qty FROM stock_levels WHERE lower(sku) LIKE lower($1) AND shop_id = $2")
        elif rng.random() < 0.5:
            log(t, pid, f"LOG:  checkpoint complete: wrote {rng.randint(40, 2400)} buffers; "
                        f"distance={rng.randint(300, 9000)} kB")
        else:
            log(t, pid, "LOG:  connection authorized: user=billing database=tallybird "
                        "application_name=billing-api")
    log(EXHAUSTED - dt.timedelta(seconds=20), 1187,
        "WARNING:  remaining connection slots are reserved for roles with the SUPERUSER attribute")
    out.append((DAY + dt.timedelta(minutes=7), "Sep 17 13:07:00 pg-main -- MARK --"))  # no tag
    for i, t in enumerate(times(rng, 0.1)):
        out.append((t, f"<190>1 {t:%Y-%m-%dT%H:%M:%S}.{i:03d}Z pg-main pgbouncer 914 stats - "
                       f"stats: {rng.randint(20, 900)} xacts/s, {rng.randint(20, 900)} queries/s"))
    return [line for _, line in sorted(out, key=lambda x: x[0])]


# --- POS gateway: Docker json-file -------------------------------------------------------------

def pos(rng: random.Random, scale: int) -> list[str]:
    lines = []
    for t in times(rng, 3 * scale):
        shop = rng.choice(SHOPS)
        if in_incident(t) and rng.random() < 0.7:
            msg = (f'level=warn ts={t:%Y-%m-%dT%H:%M:%S}Z msg="upstream timeout" '
                   f"upstream=billing-api path=/v2/payments shop={shop} "
                   f"attempt={rng.randint(1, 3)} elapsed_ms={rng.randint(5000, 30000)}\n")
            stream = "stderr"
        else:
            msg = (f'level=info ts={t:%Y-%m-%dT%H:%M:%S}Z msg="sale synced" shop={shop} '
                   f"register={rng.randint(1, 4)} items={rng.randint(1, 12)} "
                   f"total_cents={rng.randint(150, 25000)}\n")
            stream = "stdout"
        stamp = t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{rng.randint(0, 999999999):09d}Z"
        lines.append(json.dumps({"log": msg, "stream": stream, "time": stamp}))
    return lines


# --- other days: the dura incidents of sample_data/incidents.json ---------------------------

def jsonl(t: dt.datetime, rng: random.Random, logger: str, **fields) -> str:
    stamp = t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{rng.randint(0, 999999):06d}Z"
    return json.dumps({"timestamp": stamp, "logger": logger, **fields})


def by_time(events: list[tuple[dt.datetime, str]]) -> list[str]:
    return [line for _, line in sorted(events, key=lambda x: x[0])]


def billing_0514(rng: random.Random, scale: int) -> list[str]:
    """billing-api on 2024-05-14: 2024.05.2 (dura 0.3.0) writes payment terms of a week or
    more as '1w'/'2w', then cannot read them back; invoices fail until the rollback."""
    inc = story.TERMS
    start, end = inc["window"]
    bad = lambda t: inc["deploy"] <= t < inc["rollback"]  # noqa: E731
    error = "ValueError: unknown unit 'w': use d, h, m, s or their names (e.g. 'minutes')"
    out = []

    def failed(t, shop, terms, request_id):
        return (t, jsonl(t, rng, "billing.api", request_id=request_id, level="error",
                         event="invoice.create_failed", shop=shop, payment_terms=terms,
                         error_code=inc["error_code"], error=error))

    for t in times(rng, 4 * scale, start, end):
        shop, rid = rng.choice(SHOPS), f"req_{rng.getrandbits(48):012x}"
        roll = rng.random()
        if roll < 0.30:
            days = rng.choice([0, 5, 7, 14, 14, 14, 30, 30])
            terms = ("due on receipt" if days == 0 else
                     {7: "1w", 14: "2w", 30: "4w 2d"}.get(days, f"{days}d") if bad(t)
                     else f"{days}d")
            if bad(t) and "w" in terms:
                out.append(failed(t, shop, terms, rid))
            else:
                out.append((t, jsonl(t, rng, "billing.api", request_id=rid, level="info",
                                     event="invoice.created", shop=shop, payment_terms=terms,
                                     invoice=f"INV-{rng.randint(20000, 29999)}",
                                     amount_cents=rng.randint(500, 90000), currency="USD")))
        elif roll < 0.55:
            out.append((t, jsonl(t, rng, "billing.api", request_id=rid, level="info",
                                 event="payment.captured", shop=shop,
                                 invoice=f"INV-{rng.randint(20000, 29999)}",
                                 method=rng.choice(["card", "ach"]),
                                 duration_ms=rng.randint(80, 900))))
        elif roll < 0.70:
            out.append((t, jsonl(t, rng, "billing.api", request_id=rid, level="info",
                                 event="receipt.emailed", shop=shop,
                                 to=f"{rng.choice(PEOPLE)}@{shop}.example")))
        elif roll < 0.92:
            out.append((t, jsonl(t, rng, "billing.api", request_id=rid, level="debug",
                                 event="cache.hit", key=f"plan:{shop}")))
        else:
            out.append((t, jsonl(t, rng, "billing.api", request_id=rid, level="warning",
                                 event="payment.retry_scheduled", shop=shop,
                                 invoice=f"INV-{rng.randint(20000, 29999)}",
                                 retry_in_s=rng.choice([30, 60, 300]))))
    out.append(failed(inc["request_at"], inc["shop"], "2w", inc["request_id"]))
    for t, version, dura in ((inc["deploy"], "2024.05.2", "0.3.0"),
                             (inc["rollback"], "2024.05.1", "0.2.0")):
        out.append((t, jsonl(t, rng, "billing.api", level="info", event="app.started",
                             version=version, dura=dura, workers=8)))
    at = inc["rollback"] - dt.timedelta(seconds=40)
    out.append((at, jsonl(at, rng, "billing.api", level="warning",
                          event="deploy.rollback", to_version="2024.05.1",
                          requested_by="priya.nair@tallybird.example")))
    return by_time(out)


def edge_0514(rng: random.Random, scale: int) -> list[str]:
    inc = story.TERMS

    def failing(t, method, path):
        if (inc["deploy"] <= t < inc["rollback"] and method == "POST"
                and path == "/api/v2/invoices" and rng.random() < 0.7):
            return 500, 164
        return None

    return access_log(rng, 6 * scale, *inc["window"], EDGE_ROUTES, failing)


STORE_ITEMS = [("scanner-bs20", 8900), ("printer-rp80", 14900), ("reader-cr3", 5900),
               ("paper-rolls-20", 2400), ("cash-drawer-cd4", 9900)]


def store_0730(rng: random.Random, scale: int) -> list[str]:
    """store-api (Tallybird's hardware store) on 2024-07-30: from 15:00 in Dublin the
    dispatch estimate rolls into the next working day and checkout fails."""
    inc = story.DISPATCH
    start, end = inc["window"]
    error = "TypeError: can't compare offset-naive and offset-aware datetimes"
    out = []

    def failed(t, shop, item, trace):
        return (t, jsonl(t, rng, "store.api", trace_id=trace, level="error",
                         event="checkout.failed", shop=shop, sku=item, step="dispatch_estimate",
                         error=error))

    for t in times(rng, 3 * scale, start, end):
        shop, trace = rng.choice(SHOPS), f"{rng.getrandbits(128):032x}"
        item, price = rng.choice(STORE_ITEMS)
        roll = rng.random()
        if roll < 0.35:
            if inc["first_error"] <= t < inc["rollback"]:
                out.append(failed(t, shop, item, trace))
            else:
                local = t + dt.timedelta(hours=1)  # Dublin, summer time
                due = local + dt.timedelta(hours=2)
                if due.hour >= 17 or due.weekday() >= 5:
                    due = (local + dt.timedelta(days=1)).replace(hour=10, minute=local.minute)
                out.append((t, jsonl(t, rng, "store.api", trace_id=trace, level="info",
                                     event="order.placed", shop=shop, sku=item,
                                     total_cents=price * rng.randint(1, 3),
                                     dispatch_by=due.strftime("%Y-%m-%dT%H:%M:00+01:00"))))
        elif roll < 0.85:
            out.append((t, jsonl(t, rng, "store.api", trace_id=trace, level="debug",
                                 event="catalog.viewed", shop=shop, sku=item)))
        else:
            out.append((t, jsonl(t, rng, "store.api", trace_id=trace, level="info",
                                 event="shipment.label_created", carrier=rng.choice(["DPD", "UPS"]),
                                 parcel=f"1Z{rng.getrandbits(40):010X}")))
    out.append(failed(inc["trace_at"], inc["shop"], "printer-rp80", inc["trace_id"]))
    for t, version in ((inc["deploy"], "2024.07.3"), (inc["rollback"], "2024.07.2")):
        out.append((t, jsonl(t, rng, "store.api", level="info", event="app.started",
                             version=version, warehouse_tz="Europe/Dublin")))
    return by_time(out)


def edge_0730(rng: random.Random, scale: int) -> list[str]:
    inc = story.DISPATCH
    routes = EDGE_ROUTES + [("POST", "/store/api/checkout", 0.05), ("GET", "/store/", 0.08)]

    def failing(t, method, path):
        if inc["first_error"] <= t < inc["rollback"] and path == "/store/api/checkout":
            return 500, 151
        return None

    return access_log(rng, 6 * scale, *inc["window"], routes, failing)


def webhooks(rng: random.Random, scale: int, start: dt.datetime, end: dt.datetime,
             bad: tuple[dt.datetime, dt.datetime] | None = None,
             versions: tuple[str, str] = ("", "")) -> list[str]:
    """The webhook dispatcher: a failed delivery is retried after the endpoint's retry delay
    (500ms by default) within a 1-hour delivery window; in `bad` that delay reads as 500
    minutes, so the delivery expires."""
    out = []
    types = ["order.created", "invoice.paid", "stock.low", "order.updated", "customer.created"]
    for t in times(rng, 4 * scale, start, end):
        hook, evt = f"we_{rng.getrandbits(40):010x}", f"evt_{rng.getrandbits(64):016x}"
        kind = rng.choice(types)
        if rng.random() < 0.12:
            status = rng.choice([502, 503, 503, 504])
            out.append((t, jsonl(t, rng, "webhooks.dispatch", level="warning",
                                 event="delivery.failed", endpoint=hook, event_id=evt,
                                 event_type=kind, status=status, attempt=1)))
            later = t + dt.timedelta(milliseconds=500 + rng.randint(0, 80))
            if bad and bad[0] <= t < bad[1]:
                out.append((later, jsonl(later, rng, "webhooks.dispatch", level="error",
                                         event="delivery.expired", endpoint=hook, event_id=evt,
                                         event_type=kind, attempts=1, retry_delay="500ms",
                                         retry_in_s=30000, max_age_s=3600)))
            else:
                out.append((later, jsonl(later, rng, "webhooks.dispatch", level="info",
                                         event="delivery.succeeded", endpoint=hook, event_id=evt,
                                         event_type=kind, status=200, attempt=2,
                                         duration_ms=rng.randint(40, 900))))
        else:
            out.append((t, jsonl(t, rng, "webhooks.dispatch", level="info",
                                 event="delivery.succeeded", endpoint=hook, event_id=evt,
                                 event_type=kind, status=200, attempt=1,
                                 duration_ms=rng.randint(40, 900))))
    if bad:
        for t, version in zip(bad, versions):
            out.append((t, jsonl(t, rng, "webhooks.dispatch", level="info", event="app.started",
                                 version=version, delivery_window_s=3600)))
    return by_time(out)


def webhooks_0730(rng: random.Random, scale: int) -> list[str]:
    return webhooks(rng, scale, *story.DISPATCH["window"])


def webhooks_1008(rng: random.Random, scale: int) -> list[str]:
    inc = story.RETRY
    return webhooks(rng, scale, *inc["window"], bad=(inc["deploy"], inc["rollback"]),
                    versions=("2024.10.1", "2024.09.4"))


def incident() -> dict:
    iso = "%Y-%m-%dT%H:%M:%SZ"
    return {
        "id": "INC-2024-0917-01",
        "title": "Checkout and invoices fail: PostgreSQL out of connections after the "
                 "inventory-sync 4.13.0 deploy",
        "deploy": DEPLOY.strftime(iso), "first_symptom": SLOW.strftime(iso),
        "start": EXHAUSTED.strftime(iso), "mitigated": ROLLBACK.strftime(iso),
        "end": RECOVERED.strftime(iso),
        "root_cause": "inventory-sync 4.13.0 runs a full stock resync whose query "
                      "(lower(sku) LIKE ...) cannot use the stock_levels index; slow "
                      "statements hold connections until PostgreSQL runs out of them",
        "trigger_service": "inventory-sync", "bad_version": "4.13.0", "good_version": "4.12.7",
        "affected_services": ["inventory-sync", "pg-main", "billing-api", "edge",
                              "pos-gateway"],
        "signals": {
            "pg-main.syslog": "FATAL:  sorry, too many clients already; slow SELECT on stock_levels",
            "inventory-sync.log": "HikariPool-1 connection timeouts with stack traces",
            "billing-api.jsonl": "db.connect_failed errors",
            "edge-access.log": "503/504 on /api/v2/invoices, /api/v2/inventory and /pos/checkout",
            "pos-gateway.json.log.gz": "upstream timeout warnings",
        },
        "remediation": "roll inventory-sync back to 4.12.7 (full resync disabled)",
    }


FILES = {"edge-access.log": edge, "billing-api.jsonl": billing,
         "inventory-sync.log": inventory, "pg-main.syslog": postgres,
         "pos-gateway.json.log.gz": pos}
# the days of the dura incidents (sample_data/incidents.json), one folder each
DAYS = {
    "2024-05-14": {"billing-api.jsonl": billing_0514, "edge-access.log": edge_0514},
    "2024-07-30": {"store-api.jsonl": store_0730, "edge-access.log": edge_0730,
                   "webhooks.jsonl": webhooks_0730},
    "2024-10-08": {"webhooks.jsonl": webhooks_1008},
}


def _write(path: Path, lines: list[str]) -> Path:
    data = ("\n".join(lines) + "\n").encode("utf-8")
    if path.name.endswith(".gz"):
        with open(path, "wb") as fh, gzip.GzipFile(filename="", mode="wb", fileobj=fh,
                                                   mtime=0) as gz:
            gz.write(data)
    else:
        path.write_bytes(data)
    return path


def write(out: Path, seed: int = DEFAULT_SEED, scale: int = 1) -> list[Path]:
    """Write every file into `out`; the same seed and scale give the same bytes."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for i, (name, make) in enumerate(FILES.items()):
        written.append(_write(out / name, make(random.Random(seed * 31 + i), scale)))
    for d, (day, files) in enumerate(DAYS.items(), start=1):
        (out / day).mkdir(exist_ok=True)
        for i, (name, make) in enumerate(files.items()):
            rng = random.Random(seed * 31 + 100 * d + i)
            written.append(_write(out / day / name, make(rng, scale)))
    path = out / "incident.json"
    path.write_text(json.dumps(incident(), indent=2) + "\n", encoding="utf-8")
    return written + [path]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--scale", type=int, default=1, help="multiply the event rates")
    args = ap.parse_args(argv)
    for path in write(args.out, args.seed, args.scale):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
