"""Ticket export formats: detection from content, readers, and the registry of formats.

Plain CSV is read by DuckDB directly (see `tickets.py`); every other format is parsed
here into `TicketRecord`s. Each format is a `TicketFormat` in the registry at the end of
this module; third parties add theirs through the `rlforge.ticket_formats` entry-point
group (importing the entry point calls `register_format`). A record that cannot be parsed is returned as a `Rejected`
with its position and reason, never dropped.

Normalised fields: source_id, subject, body, category, intent, priority, status,
resolution (the text that resolved the ticket), created_at, resolved_at, tags, messages
(the ordered conversation: role customer/agent, author, text, time, public), and extra
(every field of the export that is not mapped, so nothing is thrown away).
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from rlforge import plugins
from rlforge.errors import UnknownName, UserError
from rlforge.ingest.textfile import text_lines

FIELDS = ("source_id", "subject", "body", "category", "intent", "priority", "status",
          "resolution", "created_at", "resolved_at", "tags")

# Column names that map to a normalised field without being told, most specific first.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "source_id": ("ticket_id", "ticketid", "id", "issue_key", "key", "case_number",
                  "case_id", "number", "ticket_number"),
    "subject": ("subject", "title", "summary"),
    "body": ("body", "description", "message", "text", "content", "question", "request"),
    "category": ("category", "ticket_type", "issue_type", "type", "queue", "topic"),
    "intent": ("intent",),
    "priority": ("priority", "severity", "urgency"),
    "status": ("status", "state"),
    "resolution": ("resolution", "response", "answer", "reply", "solution"),
    "created_at": ("created_at", "created", "creation_date", "opened_at", "date_created",
                   "submitted_at"),
    "resolved_at": ("resolved_at", "resolved", "solved_at", "closed_at", "closed",
                    "resolution_date", "resolutiondate"),
    "tags": ("tags", "labels", "keywords"),
}


def norm_name(name: str) -> str:
    """Compare column names loosely: 'Issue key' == 'issue_key' == 'IssueKey'."""
    name = re.sub(r"([a-z])([A-Z])", r"\1_\2", name.strip())
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def check_fields(explicit: dict[str, str]) -> None:
    """Refuse `--map` entries whose field rlforge does not know, listing the valid ones."""
    unknown = [f for f in explicit if f not in FIELDS]
    if unknown:
        raise UserError(f"--map: unknown field(s) {', '.join(unknown)}; valid fields: "
                        f"{', '.join(FIELDS)}")


def resolve_mapping(columns: list[str], explicit: dict[str, str]) -> dict[str, str]:
    """field -> column: explicit `--map` entries first, then synonyms among the columns."""
    check_fields(explicit)
    by_norm: dict[str, str] = {}
    for c in columns:
        by_norm.setdefault(norm_name(c), c)
    mapping: dict[str, str] = {}
    for f, col in explicit.items():
        top = col.split(".", 1)[0]
        if col not in columns and top not in columns:
            raise UserError(f"--map {f}={col}: no column {col!r} in the export; columns are: "
                            f"{', '.join(columns[:40])}")
        mapping[f] = col
    taken = set(mapping.values())
    for f in FIELDS:
        if f in mapping:
            continue
        for syn in SYNONYMS[f]:
            found = by_norm.get(syn)
            if found is not None and found not in taken:
                mapping[f] = found
                taken.add(found)
                break
    return mapping


@dataclass
class TicketRecord:
    record_no: int
    fields: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)


@dataclass
class Rejected:
    record_no: int
    raw: str
    reason: str


# --- detection -----------------------------------------------------------------------

def detect(text_head: str) -> str:
    """Guess the export format from the first bytes of the (decoded) file: a plug-in
    format that recognises it, else one of the built-ins."""
    for fmt in formats().values():
        if fmt.sniff is not None and fmt.sniff(text_head):
            return fmt.name
    s = text_head.lstrip()
    if not s:
        return "csv"
    if s[0] == "[" or s[0] == "{":
        first_line = next(text_lines(s), "").strip()
        is_jsonl = s[0] == "{" and first_line.endswith("}") and _loads_ok(first_line)
        probe = s[:4000]
        if '"fields"' in probe and '"issues"' in probe or ('"key"' in probe and '"fields"' in probe):
            return "jira-json"
        if ('"requester_id"' in probe or '"via"' in probe) and '"subject"' in probe:
            return "zendesk"
        return "jsonl" if is_jsonl else "json"
    header = next(csv.reader(io.StringIO(next(text_lines(s), ""))), [])
    normed = {norm_name(h) for h in header}
    if {"issue_key", "summary"} <= normed or {"issue_id", "summary"} <= normed:
        return "jira-csv"
    return "csv"


def _loads_ok(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except (ValueError, RecursionError):
        return False


# --- JSON readers --------------------------------------------------------------------

TOO_DEEP = ("nested too deeply: more levels of arrays or objects than the JSON parser "
            "takes (about 1,000)")


def skip_value(s: str, pos: int) -> int | None:
    """The end of the JSON value starting at s[pos] (an array or object, however deep),
    found by counting brackets outside strings; None when it never closes."""
    depth, i, n = 0, pos, len(s)
    brackets = re.compile(r'["\[\]{}]')
    while True:
        m = brackets.search(s, i)
        if m is None:
            return None
        c, i = m.group(), m.end()
        if c == '"':
            while True:  # to the closing quote, past escaped characters
                j = s.find('"', i)
                if j < 0:
                    return None
                k = j
                while k > i and s[k - 1] == "\\":
                    k -= 1
                i = j + 1
                if (j - k) % 2 == 0:
                    break
        elif c in "[{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return i
        if i >= n:
            return None


def iter_json_records(text: str) -> Iterator[tuple[int, Any] | Rejected]:
    """Elements of a JSON document: an array, an object holding one array, or one object.

    A document cut short (truncated export) yields the elements before the cut and one
    `Rejected` holding the unparsable tail.
    """
    dec = json.JSONDecoder()
    s = text.lstrip()
    if not s:
        return
    if s[0] == "{":
        try:
            obj = json.loads(s)
        except ValueError as exc:
            yield Rejected(1, s, f"invalid JSON: {exc}")
            return
        arrays = [k for k, v in obj.items() if isinstance(v, list) and v and isinstance(v[0], dict)]
        key = next((k for k in ("tickets", "issues", "results", "data", "records") if k in arrays),
                   arrays[0] if len(arrays) == 1 else None)
        if key is None:
            yield (1, obj)
            return
        for i, item in enumerate(obj[key], start=1):
            yield (i, item)
        return
    if s[0] != "[":
        yield Rejected(1, s, "not a JSON array or object")
        return
    pos, n = 1, 0
    while True:
        while pos < len(s) and s[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(s):
            if n >= 0:
                yield Rejected(n + 1, "", "truncated JSON: the array is never closed")
            return
        if s[pos] == "]":
            return
        try:
            item, end = dec.raw_decode(s, pos)
        except RecursionError:
            skipped_to = skip_value(s, pos)
            n += 1
            if skipped_to is None:
                yield Rejected(n, s[pos:], TOO_DEEP + "; the array is never closed after it")
                return
            yield Rejected(n, s[pos:skipped_to], TOO_DEEP)
            pos = skipped_to
            continue
        except ValueError as exc:
            yield Rejected(n + 1, s[pos:], f"truncated or invalid JSON from element {n + 1} on: "
                           f"{exc.args[0] if exc.args else exc}")
            return
        n += 1
        yield (n, item)
        pos = end


def iter_jsonl_records(text: str, newline: str | None = None
                       ) -> Iterator[tuple[int, Any] | Rejected]:
    """One JSON value per line (split by `text_lines`, at the file's line ends: `newline`
    as `textfile.line_endings` says); a bad line is rejected with its line number. A line
    with only spaces and tabs is no record."""
    for no, line in enumerate(text_lines(text, newline), start=1):
        if not line.strip(" \t"):
            continue
        try:
            value = json.loads(line)
        except RecursionError:
            yield Rejected(no, line, TOO_DEEP)
            continue
        except ValueError as exc:
            yield Rejected(no, line, f"invalid JSON line: {exc}")
            continue
        yield (no, value)


def _get(obj: Any, dotted: str) -> Any:
    """Follow a dotted path; in a list of {id, value} objects (custom fields) match by id."""
    node = obj
    for part in dotted.split("."):
        if isinstance(node, list):
            node = next((x for x in node if isinstance(x, dict) and str(x.get("id")) == part), None)
            node = node.get("value") if isinstance(node, dict) and "value" in node else node
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return None
    return node


def _scalar(value: Any) -> str | None:
    """A display string for a value that may be a Jira/Zendesk object ({'name': ...})."""
    if value is None:
        return None
    if isinstance(value, dict):
        for k in ("name", "value", "displayName", "title", "login"):
            if k in value:
                return _scalar(value[k])
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    if isinstance(value, list):
        return ", ".join(s for s in (_scalar(v) for v in value) if s)
    return str(value)


# A tag list written as text is split at commas, semicolons, bars and ASCII whitespace (the
# CSV path does the same in SQL: tickets._load_csv).
TAG_SEPARATORS = ",;| \t\n\v\f\r"
_TAG_SPLIT = re.compile("[" + re.escape(TAG_SEPARATORS) + "]+")


def _tags(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [t for t in (_scalar(v) for v in value) if t]
    return [t for t in _TAG_SPLIT.split(str(value)) if t]


def generic_record(no: int, obj: Any, mapping: dict[str, str]) -> TicketRecord | Rejected:
    """A JSON object mapped through field -> key path; unmapped keys go to extra."""
    if not isinstance(obj, dict):
        return Rejected(no, json.dumps(obj, ensure_ascii=False), "record is not a JSON object")
    fields: dict[str, Any] = {}
    for f, path in mapping.items():
        value = _get(obj, path)
        fields[f] = _tags(value) if f == "tags" else _scalar(value)
    used_top = {p.split(".", 1)[0] for p in mapping.values()}
    extra = {k: v for k, v in obj.items() if k not in used_top}
    messages = []
    for key in ("messages", "conversation", "comments"):
        if isinstance(obj.get(key), list) and key not in used_top:
            for m in obj[key]:
                if isinstance(m, dict):
                    role = str(m.get("role") or m.get("author_role") or "").lower()
                    messages.append({
                        "role": "customer" if role in ("customer", "user", "requester", "end-user")
                        else "agent" if role else None,
                        "author": _scalar(m.get("author") or m.get("author_id") or m.get("user")),
                        "text": _scalar(m.get("body") or m.get("text") or m.get("content")),
                        "created_at": _scalar(m.get("created_at") or m.get("created") or m.get("time")),
                        "is_public": m.get("public", True),
                    })
            extra.pop(key, None)
            break
    return TicketRecord(no, fields, messages, extra)


def zendesk_record(no: int, t: Any, mapping: dict[str, str]) -> TicketRecord | Rejected:
    """A Zendesk ticket object (with its comments when the export carries them)."""
    if not isinstance(t, dict):
        return Rejected(no, json.dumps(t, ensure_ascii=False), "record is not a JSON object")
    defaults = {"source_id": "id", "subject": "subject", "body": "description",
                "category": "type", "priority": "priority", "status": "status",
                "created_at": "created_at", "tags": "tags"}
    mapping = {**defaults, **mapping}
    rec = generic_record(no, {k: v for k, v in t.items() if k != "comments"}, mapping)
    if isinstance(rec, Rejected):
        return rec
    requester = t.get("requester_id")
    comments = t.get("comments") or []
    for c in comments if isinstance(comments, list) else []:
        if not isinstance(c, dict):
            continue
        author = c.get("author_id")
        rec.messages.append({
            "role": "customer" if author is not None and author == requester else "agent",
            "author": None if author is None else f"zendesk-user-{author}",
            "text": _scalar(c.get("plain_body") or c.get("body")),
            "created_at": c.get("created_at"),
            "is_public": bool(c.get("public", True)),
        })
    _resolution_from_messages(rec, "solved_at", t)
    return rec


def _resolution_from_messages(rec: TicketRecord, resolved_key: str, obj: dict) -> None:
    """Resolution text = the last public agent message, unless the export maps one."""
    if not rec.fields.get("resolution"):
        agent = [m for m in rec.messages if m["role"] == "agent" and m.get("is_public", True)
                 and m.get("text")]
        if agent:
            rec.fields["resolution"] = agent[-1]["text"]
    if not rec.fields.get("resolved_at") and obj.get(resolved_key):
        rec.fields["resolved_at"] = str(obj[resolved_key])
    if not rec.fields.get("body") and rec.messages:
        rec.fields["body"] = rec.messages[0]["text"]


def jira_json_record(no: int, issue: Any, mapping: dict[str, str]) -> TicketRecord | Rejected:
    """A Jira REST issue ({key, fields{...}}), comments included when embedded."""
    if not isinstance(issue, dict) or not isinstance(issue.get("fields"), dict):
        return Rejected(no, json.dumps(issue, ensure_ascii=False)[:RAW_PREVIEW],
                        "not a Jira issue object (no 'fields')")
    f = issue["fields"]
    flat = {"key": issue.get("key"), "id": issue.get("id"), **f}
    defaults = {"source_id": "key", "subject": "summary", "body": "description",
                "category": "issuetype", "priority": "priority", "status": "status",
                "created_at": "created", "resolved_at": "resolutiondate", "tags": "labels"}
    rec = generic_record(no, {k: v for k, v in flat.items() if k != "comment"},
                         {**defaults, **mapping})
    if isinstance(rec, Rejected):
        return rec
    reporter = _scalar(f.get("reporter"))
    rec.messages = _opening_message(rec.fields, reporter)
    comments = f.get("comment") or []  # {"comments": [...]}, or the list itself
    comments = (comments.get("comments") or []) if isinstance(comments, dict) else comments
    for c in comments if isinstance(comments, list) else []:
        if not isinstance(c, dict):
            continue
        author = _scalar(c.get("author"))
        # a body may be a document (Jira Cloud's ADF), not text: kept as its JSON text
        rec.messages.append({"role": "customer" if author and author == reporter else "agent",
                             "author": author, "text": _scalar(c.get("body")),
                             "created_at": c.get("created"), "is_public": c.get("jsdPublic", True)})
    _resolution_from_messages(rec, "resolutiondate", f)
    return rec


RAW_PREVIEW = 64 * 1024


def _opening_message(fields: dict[str, Any], reporter: str | None) -> list[dict[str, Any]]:
    """Jira keeps the request in the description, not in a comment: it opens the thread."""
    if not fields.get("body"):
        return []
    return [{"role": "customer", "author": reporter, "text": fields["body"],
             "created_at": fields.get("created_at"), "is_public": True}]

JIRA_CSV_DEFAULTS = {"source_id": "Issue key", "subject": "Summary", "body": "Description",
                     "category": "Issue Type", "priority": "Priority", "status": "Status",
                     "created_at": "Created", "resolved_at": "Resolved"}


def iter_jira_csv(text: str, mapping: dict[str, str]) -> Iterator[TicketRecord | Rejected]:
    """Jira's CSV export: repeated Labels and Comment columns; comments `date;author;text`."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return
    mapping = {**JIRA_CSV_DEFAULTS, **mapping}
    idx: dict[str, list[int]] = {}
    for i, h in enumerate(header):
        idx.setdefault(h.strip(), []).append(i)
    line = 1
    for row in reader:
        start = line + 1
        line = reader.line_num
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            yield Rejected(start, ",".join(row), f"expected {len(header)} columns, found {len(row)}")
            continue

        def col(name: str) -> list[str]:
            return [row[i] for i in idx.get(name, []) if row[i] != ""]

        fields: dict[str, Any] = {}
        for f, name in mapping.items():
            values = col(name)
            fields[f] = values if f == "tags" else (values[0] if values else None)
        if "tags" not in mapping:
            fields["tags"] = col("Labels")
        reporters = col("Reporter Id") or col("Reporter")
        reporter = reporters[0] if reporters else None
        messages = _opening_message(fields, reporter)
        for cell in col("Comment"):
            parts = cell.split(";", 2)
            if len(parts) == 3:
                when, author, body = parts
            else:
                when, author, body = None, None, cell
            messages.append({"role": "customer" if author and author == reporter else "agent",
                             "author": author, "text": body, "created_at": when,
                             "is_public": True})
        used = set(mapping.values()) | {"Comment", "Labels"}
        extra: dict[str, Any] = {}
        for name, positions in idx.items():
            if name in used:
                continue
            values = [row[i] for i in positions if row[i] != ""]
            if values:
                extra[name] = values if len(positions) > 1 else values[0]
        rec = TicketRecord(start, fields, messages, extra)
        _resolution_from_messages(rec, "Resolved", {})
        yield rec


# --- the registry ----------------------------------------------------------------------

ENTRY_POINT_GROUP = "rlforge.ticket_formats"
Reader = Callable[[str, dict[str, str], "str | None"], Iterable["TicketRecord | Rejected"]]


class NotThisFormat(ValueError):
    """The file is not what the chosen format reads; the message says why, in one line."""


@dataclass(frozen=True)
class TicketFormat:
    """A ticket export format: `read(text, mapping, newline)` yields a `TicketRecord` or a
    `Rejected` for every record (never dropping one; `newline` is the file's line ending);
    `sniff(head)` says whether a file's first bytes are this format (plug-ins; the
    built-ins are told apart by `detect`). `read` is None only for plain CSV, which DuckDB
    reads directly (`rlforge.ingest.tickets`). `origin` names the help desk kind stored
    on each ticket."""

    name: str
    version: int
    description: str
    origin: str
    read: Reader | None
    sniff: Callable[[str], bool] | None = None


def _generic(raw: list, mapping: dict[str, str]) -> list[TicketRecord | Rejected]:
    """JSON objects with columns of their own: mapped by name (`resolve_mapping`)."""
    keys: list[str] = []
    for x in raw[:200]:
        if not isinstance(x, Rejected) and isinstance(x[1], dict):
            keys.extend(k for k in x[1] if k not in keys)
    m = resolve_mapping(keys, mapping)
    return [x if isinstance(x, Rejected) else generic_record(x[0], x[1], m) for x in raw]


def _shaped(raw: list, mapping: dict[str, str], reader) -> list[TicketRecord | Rejected]:
    """A help desk's own JSON shape: fields in known places, `--map` overriding them."""
    check_fields(mapping)
    return [x if isinstance(x, Rejected) else reader(x[0], x[1], mapping) for x in raw]


def _read_jira_json(text: str, mapping: dict[str, str], newline: str | None) -> list:
    raw = list(iter_json_records(text))
    objs = [x[1] for x in raw if not isinstance(x, Rejected)]
    if objs and all(isinstance(o, dict) and "fields" not in o for o in objs):
        raise NotThisFormat("no Jira issues here (objects have no 'fields'); a Jira comment "
                            "page cannot be loaded on its own")
    return _shaped(raw, mapping, jira_json_record)


_REGISTRY: dict[str, TicketFormat] = {}


def register_format(fmt: TicketFormat) -> TicketFormat:
    """Add a ticket format (a higher version of a name replaces a lower one)."""
    return plugins.add_versioned(_REGISTRY, fmt, "ticket format")


for _fmt in (
    TicketFormat("csv", 1, "a CSV export with a header row; columns mapped by name or --map",
                 "csv", None),
    TicketFormat("json", 1, "a JSON array (or object holding one) of ticket objects", "json",
                 lambda text, mapping, newline: _generic(list(iter_json_records(text)), mapping)),
    TicketFormat("jsonl", 1, "one JSON ticket object per line", "json",
                 lambda text, mapping, newline: _generic(
                     list(iter_jsonl_records(text, newline)), mapping)),
    TicketFormat("zendesk", 1, "Zendesk's ticket export (JSON)", "zendesk",
                 lambda text, mapping, newline: _shaped(list(iter_json_records(text)), mapping,
                                                        zendesk_record)),
    TicketFormat("jira-csv", 1, "Jira's CSV export (repeated Labels and Comment columns)",
                 "jira", lambda text, mapping, newline: iter_jira_csv(text, mapping)),
    TicketFormat("jira-json", 1, "Jira's REST search results (issues with fields)", "jira",
                 _read_jira_json),
):
    register_format(_fmt)

FORMATS = tuple(_REGISTRY)  # the built-in names


def formats() -> dict[str, TicketFormat]:
    """Every ticket format by name (built-ins and plug-ins)."""
    plugins.load(ENTRY_POINT_GROUP)
    return dict(_REGISTRY)


def get(name: str) -> TicketFormat:
    """The format called `name`; UnknownName lists the valid ones (and auto)."""
    found = formats().get(name)
    if found is None:
        raise UnknownName("ticket format", name, ["auto", *formats()])
    return found
