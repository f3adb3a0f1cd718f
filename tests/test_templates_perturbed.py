"""One logging statement stays one template when its calls differ the way statements of
other systems do: padded whitespace, optional trailing fields, lists of any length,
embedded time stamps, fields in another order. The lines are made up here."""

from __future__ import annotations

import random

import polars as pl
import pytest

from rlforge import db
from rlforge.ingest import logs
from rlforge.ingest import templates as tm
from rlforge.ingest.load import make_redactor


def mine(messages: list[str], masks=()) -> list[str]:
    """Template text of each message, mined as one batch."""
    texts = tm.normalise(pl.Series(messages, dtype=pl.String), masks).to_list()
    miner = tm.TemplateMiner()
    distinct = sorted(set(texts))
    ids, _ = miner.assign(distinct)
    by_text = dict(zip(distinct, ids))
    return [tm.template_text(miner.templates[by_text[t]]) for t in texts]


def stream(messages: list[str], size: int) -> list[str]:
    """Template id of each message, mined in batches of `size` (as ingest chunks do),
    merges followed to the end."""
    miner = tm.TemplateMiner()
    ids: list[str] = []
    merges: list[tuple[str, str]] = []
    for i in range(0, len(messages), size):
        texts = tm.normalise(pl.Series(messages[i:i + size], dtype=pl.String)).to_list()
        got, update = miner.assign(texts)
        ids += got
        merges += update.merges
    final = tm.resolve_merges(merges)
    return [final.get(t, t) for t in ids]


RNG = random.Random(37)
USERS = ["ann", "bob", "cyd", "dee", "eve", "fay"]


def _ctime(day: int, hour: int) -> str:
    # a C ctime() stamp: the day of month is padded to two characters with a space
    return f"Wed Mar {day:>2} {hour:02d}:14:09 2031"


CASES = {
    "whitespace run in a stamp": [
        f"spool flushed at {_ctime(d, d + 3)} by {u}" for d, u in zip([2, 9, 17, 28, 5], USERS)],
    "padded token boundary": [
        f"queue{' ' * n}drained after {n * 7} ms" for n in (1, 2, 3, 1, 4)],
    "optional trailing field": [
        f"reindex finished for shard {n}" + (f" took_ms={n * 13}" if n % 2 else "")
        for n in range(10, 20)],
    "list of ids, comma and space": [
        "evicting sessions " + ", ".join(f"sess-{RNG.randint(100, 999)}" for _ in range(k))
        + " now" for k in (1, 2, 3, 4, 5, 2)],
    "list of ids, no spaces": [
        "evicting sessions " + ",".join(f"sess-{RNG.randint(100, 999)}" for _ in range(k))
        for k in (1, 3, 5, 2)],
    "list of ids, spaces only": [
        "peers " + " ".join(f"n{RNG.randint(10, 99)}x" for _ in range(k)) + " joined"
        for k in (1, 2, 4, 3)],
    "stamp with month inside a token": [
        f"lease renewed since {d:02d}/{m}/2031:0{d % 10}:11:12 +0100"
        for d, m in [(3, "Mar"), (14, "Apr"), (25, "May"), (9, "Jun")]],
    "stamp with AM/PM and zone": [
        f"backup started on Mar {d}, 2031 {h}:05:33 {ap} {z}"
        for d, h, ap, z in [(3, 4, "AM", "UTC"), (9, 11, "PM", "CET"), (12, 2, "PM", "UTC"),
                            (20, 7, "AM", "PST")]],
    "fields in another order": [
        " ".join(["throttle applied"] + RNG.sample([f"rate={r}", f"burst={r * 2}",
                                                    f"tenant=t{r}x"], 3))
        for r in (10, 20, 30, 40, 50, 60)],
}


@pytest.mark.parametrize("name", list(CASES))
def test_one_statement_one_template(name):
    got = mine(CASES[name])
    assert len(set(got)) == 1, sorted(set(got))


@pytest.mark.parametrize("name", list(CASES))
def test_one_statement_one_template_across_batches(name):
    # one message at a time: later calls must join (or merge into) what earlier ones made
    got = stream(CASES[name], 1)
    assert len(set(got)) == 1


def test_fields_keep_the_order_they_were_written_in():
    # mined in key order, written back as the messages have them
    got = mine([f"throttle applied rate={r} burst={r * 2}" for r in (1, 2, 3)])
    assert set(got) == {"throttle applied rate=<*> burst=<*>"}
    both = mine([f"throttle applied rate={r} burst={r * 2}" for r in (1, 2, 3)]
                + ["throttle applied burst=9 rate=4"])
    assert len(set(both)) == 1 and both[0] in ("throttle applied rate=<*> burst=<*>",
                                               "throttle applied burst=<*> rate=<*>")


def test_different_statements_stay_apart():
    # what the robustness must not join: another key set in a list of fields, another
    # trailing word, a constant value of an optional field
    a = [f"auth failed; uid={n} tty=ssh rhost=h{n}x" for n in range(10, 16)]
    b = [f"auth failed; uid={n} tty=ssh rhost=h{n}x user={u}" for n, u in zip(range(20, 26), USERS)]
    c = [f"spool flushed by {u}" for u in USERS]
    d = [f"spool flushed by {u} now" for u in USERS]
    got = mine(a + b + c + d)
    assert len({got[0], got[6], got[12], got[18]}) == 4
    assert len(set(got[:6])) == len(set(got[6:12])) == 1


def test_a_mask_of_the_value_after_a_key_keeps_the_key():
    assert tm.apply_masks(pl.Series(["n run=12 ok=3"]), [r"=\d+"]).to_list() == \
        ["n run=<*> ok=<*>"]


def test_ingest_keeps_one_template_for_a_padded_stamp_and_an_optional_field(tmp_path):
    log = tmp_path / "app.log"
    lines = []
    for i, d in enumerate([1, 4, 11, 15, 23, 30]):
        extra = f" retry={i}" if i % 2 else ""
        lines.append(f"2031-03-{d:02d} 10:00:0{i} INFO sched: job done at {_ctime(d, 10)}"
                     f" for worker w{i}x{extra}")
    log.write_text("\n".join(lines) + "\n")
    con = db.connect(tmp_path / "t.duckdb")
    try:
        result = logs.ingest_file(con, log, fmt="<Date> <Time> <Level> <Component>: <Content>",
                                  redactor=None)
        assert result.status == "ok"
        ids = [r[0] for r in con.execute(
            "SELECT template_id FROM log_lines ORDER BY line_no").fetchall()]
    finally:
        con.close()
    assert len(ids) == 6 and len(set(ids)) == 1


# --- rules found by the perturbation suite's split events ------------------------------

def test_a_data_field_after_a_list_of_fields_is_optional():
    # after `ruser= rhost=...` a field of numbers or ids is appended on some calls; the
    # naming field `user=root` of `test_different_statements_stay_apart` is not
    base = [f"auth failed; uid={n} tty=ssh ruser= rhost=h{n}x" for n in range(10, 20)]
    got = mine([m + (f" retry={n * 7}" if n % 2 else "") for n, m in zip(range(10, 20), base)])
    assert len(set(got)) == 1, sorted(set(got))


def test_a_key_seen_once_with_a_word_still_takes_optional_data():
    # `shard=abcdefab`: a hex id with no digit reads as a word; most values are data
    msgs = [f"relay done; from=root, size={n}, class=0" + (f" shard={n * 31}" if n % 2 else "")
            for n in range(10, 22)] + ["relay done; from=root, size=99, class=0 shard=fbacedab"]
    got = mine(msgs)
    assert len(set(got)) == 1, sorted(set(got))


def test_fields_after_a_parameter_only_prefix_are_optional():
    # `<*>: from=..., size=...` (a queue id first): the keys are the text
    msgs = [f"{n:06d}x: from=root, size={n * 3}, class=0" + (f" span={n}" if n % 2 else "")
            for n in range(100, 110)]
    got = mine(msgs)
    assert len(set(got)) == 1, sorted(set(got))


def test_a_value_alone_without_the_optional_field_joins_its_statement():
    # one call without the field was mined as its own text (`root1_local`), the calls with
    # it as `<*>`; and one call each on `eth0` without it and `eth1` with it
    msgs = [f"domain root{n}_local is full elapsed_ms={n * 13}" for n in range(2, 13)]
    msgs.append("domain root1_local is full")
    got = mine(msgs)
    assert len(set(got)) == 1, sorted(set(got))
    assert got[0] == "domain <*> is full", got[0]
    got = mine(["allocating divert_blk for eth0", "allocating divert_blk for eth1 shard=981.72"])
    assert len(set(got)) == 1, sorted(set(got))
    # texts that differ in a word (not an indexed name) stay apart with or without a field
    got = mine(["disk sda is full", "disk sdb is full elapsed_ms=12", "cache sdc is full elapsed_ms=4"])
    assert len(set(got)) >= 2, sorted(set(got))


def test_a_column_of_different_keys_keeps_the_keys():
    # five statements that differ only in their field's key: the key is text even where
    # the column holds too many values to be a constant
    keys = ["shard", "span", "attempt", "queue_depth", "retry"]
    got = mine([f"program interrupt {k}={n}" for k in keys for n in (11, 12, 13)])
    assert len(set(got)) == 5
    assert {t.split(" ")[-1] for t in got} == {f"{k}=<*>" for k in keys}


def test_a_mask_ending_in_whitespace_keeps_the_token_boundary():
    assert tm.apply_masks(pl.Series(["result 0x0, handle @0x2c elapsed_ms=4 retry=1"]),
                          [r"0x.*?\s"]).to_list() == ["result <*> handle @<*> elapsed_ms=4 retry=1"]
    # so fields after a masked value are still fields, in any order
    msgs = [f"created (seq {n}) result 0x0, handle @0x{n:x} " + " ".join(
        RNG.sample([f"elapsed_ms={n * 3}", f"retry={n}"], 2)) for n in range(10, 22)]
    got = mine(msgs, masks=[r"0x.*?\s"])
    assert len(set(got)) == 1, sorted(set(got))


def test_a_word_beside_a_list_that_is_sometimes_a_number_stays_one_template():
    # `ids <list> <user>`: a user name that is a number by its shape joins the list's <*>
    users = ["webmaster", "oracle", "admin", "guest", "0", "1234", "test", "ftp"]
    msgs = [f"invalid user ids {', '.join(f'node{k:02d}' for k in range(i % 3 + 1))} {u} from h{i}x"
            for i, u in enumerate(users)]
    got = mine(msgs)
    assert len(set(got)) == 1, sorted(set(got))


def test_a_list_of_numbers_before_a_capitalised_word_is_not_an_address(tmp_path):
    # redaction on: five-digit ids before a capitalised word are not a house number, a
    # postcode and a town; the lines keep one template
    log = tmp_path / "app.log"
    lines = [f"2031-03-01 10:00:0{i} INFO worker: Interrupting ids "
             + ",".join(str(10000 + 7919 * (i + k) % 89999) for k in range(i % 4 + 1))
             + " SendWorker" for i in range(8)]
    log.write_text("\n".join(lines) + "\n")
    con = db.connect(tmp_path / "t.duckdb")
    try:
        redactor = make_redactor(con, True)
        result = logs.ingest_file(con, log, fmt="<Date> <Time> <Level> <Component>: <Content>",
                                  redactor=redactor)
        assert result.status == "ok"
        rows = con.execute("SELECT DISTINCT t.template FROM log_lines l "
                           "JOIN log_templates t USING (template_id)").fetchall()
        # a street address with a house number is still one
        assert "ADDRESS" in redactor.redact_text("send it to Lindenstraße 5, 10115 Berlin")
    finally:
        con.close()
    assert rows == [("Interrupting ids <*> SendWorker",)], rows
