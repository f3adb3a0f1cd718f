"""What a deletion request's key matches: its pseudonyms, its tickets, and the texts
whose copies go with them.

A key is a ticket id, a pseudonym, or an e-mail or name as the customer wrote it. An
e-mail or name becomes the pseudonym ingest made of it (`Redactor.pseudonym`, keyed by
the database's own key); its clear value is also looked for, case-insensitively and as a
whole word, in case the redaction missed it somewhere (a name of one word only as its
pseudonym). Neither leaves the process.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import duckdb

from rlforge import db
from rlforge.errors import UserError
from rlforge.ingest.redaction.rules import PLACEHOLDER

KEY_KINDS = ("auto", "ticket", "pseudonym", "email", "name")
#: A stored text shorter than this is not looked for in task files and rollouts (a short
#: line such as "Thanks, that worked!" is anyone's).
MIN_NEEDLE = 40
_PSEUDONYM = re.compile(PLACEHOLDER)
_OWN_TABLES = {"meta", "schema_migrations", "forget_log", "exports"}
#: Where a row that holds the key goes whole (a ticket that names the customer is theirs;
#: a rollout that holds their text is removed with its lines in the run's files).
REMOVED_WHOLE = {"tickets", "ticket_messages", "quarantine", "rollouts"}


@dataclass(frozen=True)
class Term:
    """A value to find: literal text; `fold`: in any letter case, as a whole word."""

    text: str
    fold: bool = False
    replacement: str | None = None  # what replaces it where rows are kept (None: not kept)

    def _edges(self) -> tuple[bool, bool]:
        word = re.compile(r"[A-Za-z0-9_]")
        return (self.fold and bool(word.match(self.text[:1])),
                self.fold and bool(word.match(self.text[-1:])))

    def re2(self) -> str:
        """The term as an RE2 pattern (DuckDB's regexp functions)."""
        body = "".join(c if c.isascii() and (c.isalnum() or c == "_") else f"\\x{{{ord(c):x}}}"
                       for c in self.text)
        left, right = self._edges()
        return ("(?i)" if self.fold else "") + (r"\b" if left else "") + body + (r"\b" if right else "")

    def py(self) -> str:
        """The term as a Python pattern (the same matches as `re2`)."""
        left, right = self._edges()
        body = (r"(?<![A-Za-z0-9_])" if left else "") + re.escape(self.text) + \
            (r"(?![A-Za-z0-9_])" if right else "")
        return f"(?i:{body})" if self.fold else body


@dataclass
class Key:
    """A request's key: its kind, the terms that find it, the tickets they matched."""

    kind: str
    terms: list[Term] = field(default_factory=list, repr=False)
    ticket_ids: list[str] = field(default_factory=list, repr=False)


def table_exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(con.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = ? AND "
                            "schema_name = 'main'", [name]).fetchall())


def any_of(expr: str) -> str:
    """SQL: the text `expr` matches one of the RE2 patterns given as the parameter."""
    return f"len(list_filter(?, lambda n: regexp_matches(coalesce({expr}, ''), n))) > 0"


def resolve_key(con: duckdb.DuckDBPyConnection, text: str, kind: str = "auto") -> Key:
    """What `text` names; `kind` forces one reading (see `KEY_KINDS`; auto: a pseudonym by
    its shape, then a ticket id the database holds, then an e-mail when it has an @, else
    a name). A source id (`10001`) names its ticket when only one has it."""
    from rlforge.ingest.redaction.redactor import Redactor

    if kind not in KEY_KINDS:
        raise UserError(f"unknown key kind {kind!r}; valid: {', '.join(KEY_KINDS)}")
    value = " ".join(text.split())
    if not value:
        raise UserError("the key is empty: give a ticket id, a pseudonym, an e-mail or a name")
    shaped = value if value.startswith("<") else f"<{value}>"
    if kind == "pseudonym" or (kind == "auto" and _PSEUDONYM.fullmatch(shaped)):
        if not _PSEUDONYM.fullmatch(shaped):
            raise UserError(f"{value!r} is not a pseudonym like <EMAIL_3f9a1c>")
        return _with_tickets(con, Key("pseudonym", [Term(shaped, replacement=_gone(shaped))]))
    if kind in ("auto", "ticket"):
        ids = [r[0] for r in con.execute(
            "SELECT ticket_id FROM tickets WHERE ticket_id = ? UNION "
            "SELECT ticket_id FROM tickets WHERE source_id = ? ORDER BY 1", [value, value]
        ).fetchall()]
        if len(ids) > 1 and value not in ids:
            raise UserError(f"{len(ids)} tickets have the id {value!r} ({', '.join(ids)}); "
                            "give the one meant as ORIGIN:ID")
        if ids or kind == "ticket":
            return Key("ticket", ticket_ids=[value] if value in ids else ids)
    chosen = kind if kind in ("email", "name") else ("email" if "@" in value else "name")
    placeholder_kind = "EMAIL" if chosen == "email" else "PERSON"
    # The clear value too, where the redaction missed it: an e-mail, or a name of two
    # words or more (one word in any case would be every "Will" and "will").
    terms = [Term(value, fold=True, replacement=f"<{placeholder_kind}_forgotten>")] \
        if chosen == "email" or len(value.split()) > 1 else []
    key_hex = db.meta_get(con, "redaction_key")
    if key_hex is not None:  # (none: nothing was ever redacted, no pseudonym to look for)
        pseudonym = Redactor(bytes.fromhex(key_hex), kinds=()).pseudonym(placeholder_kind, value)
        terms.insert(0, Term(pseudonym, replacement=_gone(pseudonym)))
    return _with_tickets(con, Key(chosen, terms))


def _gone(pseudonym: str) -> str:
    return pseudonym.rsplit("_", 1)[0] + "_forgotten>"


def _with_tickets(con, key: Key) -> Key:
    """The key with the tickets that hold one of its terms (text, fields, tags, authors)."""
    patterns = [t.re2() for t in key.terms]
    rows = con.execute(f"""
        SELECT ticket_id FROM tickets WHERE {any_of(
            "concat_ws(chr(10), subject, body, resolution, extra::VARCHAR, "
            "array_to_string(tags, chr(10)))")}
        UNION SELECT ticket_id FROM ticket_messages WHERE {any_of("concat_ws(chr(10), text, author)")}
        ORDER BY 1""", [patterns, patterns]).fetchall()
    key.ticket_ids = [r[0] for r in rows]
    return key


def needles(con: duckdb.DuckDBPyConnection, key: Key) -> list[Term]:
    """What a copy of the key's data holds: the key's terms, and each stored text of its
    tickets that no other ticket holds (`MIN_NEEDLE` characters at least), as written in
    plain text and inside a JSON or TOML string."""
    ids = key.ticket_ids
    texts = sorted({t.strip() for (t,) in con.execute(
        "SELECT unnest([body, resolution]) FROM tickets WHERE list_contains(?, ticket_id) "
        "UNION ALL SELECT text FROM ticket_messages WHERE list_contains(?, ticket_id)",
        [ids, ids]).fetchall() if t and len(t.strip()) >= MIN_NEEDLE})
    theirs = []
    for t in texts:
        shared = con.execute("""
            SELECT 1 FROM tickets WHERE NOT list_contains(?, ticket_id)
              AND (contains(coalesce(body, ''), ?) OR contains(coalesce(resolution, ''), ?))
            UNION ALL SELECT 1 FROM ticket_messages WHERE NOT list_contains(?, ticket_id)
              AND contains(coalesce(text, ''), ?) LIMIT 1""", [ids, t, t, ids, t]).fetchall()
        if not shared:
            theirs.append(Term(t))
    out: dict[Term, None] = {}
    for term in [*key.terms, *theirs]:
        for form in (term.text, json.dumps(term.text, ensure_ascii=False)[1:-1],
                     json.dumps(term.text)[1:-1]):
            out[Term(form, term.fold, term.replacement)] = None
    return list(out)


def text_columns(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    """(table, column, type) of every text, JSON and text-list column of the tables whose
    rows are kept (the key is replaced in them): commits, logs, links, templates, ..."""
    rows = con.execute("""
        SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c
        JOIN information_schema.tables t USING (table_schema, table_name)
        WHERE c.table_schema = 'main' AND t.table_type = 'BASE TABLE'
          AND c.data_type IN ('VARCHAR', 'JSON', 'VARCHAR[]')
        ORDER BY c.table_name, c.ordinal_position""").fetchall()
    return [r for r in rows if r[0] not in _OWN_TABLES | REMOVED_WHOLE]


def as_text(column: str, kind: str) -> str:
    """SQL: a column of `text_columns` as one text."""
    return f'array_to_string("{column}", chr(10))' if kind == "VARCHAR[]" else f'"{column}"::VARCHAR'


def scrub_targets(con: duckdb.DuckDBPyConnection,
                  terms: list[Term]) -> dict[str, list[tuple[str, str]]]:
    """table -> its (column, type) pairs that still hold one of the terms."""
    out: dict[str, list[tuple[str, str]]] = {}
    patterns = [t.re2() for t in terms if t.replacement]
    if not patterns:
        return out
    for table, column, kind in text_columns(con):
        if con.execute(f'SELECT 1 FROM "{table}" WHERE {any_of(as_text(column, kind))} LIMIT 1',
                       [patterns]).fetchall():
            out.setdefault(table, []).append((column, kind))
    return out


def scrub(con: duckdb.DuckDBPyConnection, table: str, cols: list[tuple[str, str]],
          terms: list[Term]) -> None:
    """Replace the terms in those columns of `table` by their placeholders."""
    kept = [t for t in terms if t.replacement]
    patterns = [t.re2() for t in kept]
    sets, args = [], []
    for col, kind in cols:
        value = f'"{col}"'
        for t in kept:  # nested calls: the innermost one's parameters come first in the text
            if kind == "VARCHAR[]":
                value = f"list_transform({value}, lambda x: regexp_replace(x, ?, ?, 'g'))"
            elif kind == "JSON":
                value = f"regexp_replace({value}::VARCHAR, ?, ?, 'g')::JSON"
            else:
                value = f"regexp_replace({value}, ?, ?, 'g')"
            args += [t.re2(), t.replacement]
        sets.append(f'"{col}" = {value}')
    where = " OR ".join(any_of(as_text(col, kind)) for col, kind in cols)
    con.execute(f'UPDATE "{table}" SET {", ".join(sets)} WHERE {where}',
                args + [patterns] * len(cols))
