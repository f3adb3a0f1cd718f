"""Writers for the vendor formats: generic CSV, Zendesk JSON (and NDJSON), Jira CSV.

Each writer takes tickets from ticket_model.py and a text stream. The shapes follow
the vendors' documented exports; sample_data/README.md describes what is emitted.
"""

from __future__ import annotations

import csv
import html
import io
import json
import random
from datetime import datetime, timedelta

import tallybird as c
from ticket_model import START, Person, Ticket, draw_customer, draw_tickets

CSV_COLUMNS = ["id", "subject", "description", "category", "priority", "status",
               "created_at", "resolved_at", "tags", "resolution", "customer_plan", "channel",
               "requester_name", "requester_email", "assignee", "satisfaction"]


def iso(d: datetime | None) -> str:
    return d.strftime("%Y-%m-%d %H:%M:%S") if d else ""


def csv_row(ticket_id: int, t: Ticket) -> list[str]:
    return [str(ticket_id), t.subject, t.messages[0].text, t.category, t.priority,
            {"solved": "resolved", "closed": "closed", "new": "open", "hold": "on_hold"}.get(
                t.status, t.status),
            iso(t.created_at), iso(t.resolved_at), ", ".join(t.tags), t.resolution,
            t.plan, t.channel, t.customer.name, t.customer.email, t.agent.name,
            t.satisfaction]


def write_csv(tickets: list[Ticket], out: io.TextIOBase, first_id: int = 10001) -> None:
    w = csv.writer(out)
    w.writerow(CSV_COLUMNS)
    for k, t in enumerate(tickets):
        w.writerow(csv_row(first_id + k, t))


def write_bulk_csv(rows: int, seed: int, out: io.TextIOBase, pool_size: int = 2000) -> None:
    """A large CSV with the columns of tickets.csv, fast: a pool of fully drawn tickets
    is recombined with other greetings and other customers' sign-offs, so every row's
    description is different (for up to ~10 million rows) and times keep increasing."""
    rng = random.Random(seed + 1)
    signoffs: dict[str, tuple[str, str, str]] = {}
    named = [s for s in c.SIGNOFFS if "{name}" in s or "{first}" in s]
    while len(signoffs) < 1000:
        p = draw_customer(rng)
        s = rng.choice(named).format(name=p.name, first=p.first, company=p.company,
                                     phone=p.phone, email=p.email)
        signoffs.setdefault(s, (s, p.name, p.email))
    signs = list(signoffs.values())
    fixed, cores = [], set()
    for t in draw_tickets(pool_size, seed):
        if t.body_parts[1] in cores:
            continue
        cores.add(t.body_parts[1])
        span = int((t.resolved_at - t.created_at).total_seconds()) if t.solved else -1
        fixed.append((csv_row(0, t), t.body_parts[1], span))
    pool_size = len(fixed)
    greetings = c.GREETINGS
    n_greet = len(greetings)
    block = pool_size * n_greet
    step = 350 * 86400 / max(rows, 1)
    w = csv.writer(out)
    w.writerow(CSV_COLUMNS)
    base = START
    one_s = timedelta(seconds=1)
    batch = []
    for i in range(rows):
        row, core, span = fixed[i % pool_size]
        sign, name, email = signs[(i // block + i * 389) % 1000]
        created = base + one_s * int(i * step)
        row = row.copy()
        row[0] = str(i + 1)
        row[2] = greetings[(i // pool_size) % n_greet] + core + sign
        row[6] = created.isoformat(" ")
        row[7] = (created + one_s * span).isoformat(" ") if span >= 0 else ""
        row[12] = name
        row[13] = email
        batch.append(row)
        if len(batch) == 10000:
            w.writerows(batch)
            batch.clear()
    w.writerows(batch)


# ---------------------------------------------------------------- Zendesk

ZD_CATEGORY_FIELD = 360041872211
ZD_PLAN_FIELD = 360041872212
ZD_CHANNEL = {"email": "email", "web": "web", "chat": "chat", "voice": "voice"}


def zd_time(d: datetime | None) -> str | None:
    return d.strftime("%Y-%m-%dT%H:%M:%SZ") if d else None


class ZendeskIds:
    """Stable Zendesk-style ids for people (large integers, as Zendesk uses)."""

    def __init__(self) -> None:
        self.users: dict[str, dict] = {}

    def user(self, p: Person, role: str) -> int:
        if p.email not in self.users:
            uid = 381000000000 + 7919 * (len(self.users) + 1)
            self.users[p.email] = {"id": uid, "name": p.name, "email": p.email,
                                   "role": role, "phone": p.phone or None,
                                   "organization_id": None, "time_zone": "UTC",
                                   "locale": "en-US"}
        return self.users[p.email]["id"]


def zendesk_ticket(ticket_id: int, t: Ticket, ids: ZendeskIds, comment_ids: list[int]) -> dict:
    requester = ids.user(t.customer, "end-user")
    assignee = ids.user(t.agent, "agent")
    custom = [{"id": ZD_CATEGORY_FIELD, "value": t.category},
              {"id": ZD_PLAN_FIELD, "value": t.plan.lower()}]
    via = {"channel": ZD_CHANNEL[t.channel],
           "source": {"from": {"address": t.customer.email, "name": t.customer.name}
                      if t.channel == "email" else {},
                      "to": {"address": f"support@{c.SUPPORT_DOMAIN}", "name": "Tallybird"}
                      if t.channel == "email" else {}, "rel": None}}
    comments = []
    for m in t.messages:
        comment_ids[0] += 1
        author = requester if m.role == "customer" else assignee
        paragraphs = "".join(f"<p>{html.escape(p)}</p>" for p in m.text.split("\n\n"))
        system = {"client": "Mozilla/5.0", "ip_address": t.customer_ip,
                  "location": "Unknown"} if m.role == "customer" else {}
        comments.append({
            "id": comment_ids[0], "type": "Comment", "author_id": author, "body": m.text,
            "html_body": f'<div class="zd-comment" dir="auto">{paragraphs}</div>',
            "plain_body": m.text, "public": m.public, "attachments": [],
            "audit_id": comment_ids[0] + 2810000000, "via": {"channel": "web" if m.role == "agent"
                                                    else via["channel"]},
            "created_at": zd_time(m.at), "metadata": {"system": system, "custom": {}},
        })
    return {
        "url": f"https://tallybird.zendesk.com/api/v2/tickets/{ticket_id}.json",
        "id": ticket_id, "external_id": None, "via": via,
        "created_at": zd_time(t.created_at), "updated_at": zd_time(t.updated_at),
        "generated_timestamp": int((t.updated_at - datetime(1970, 1, 1)).total_seconds()),
        "type": t.kind, "subject": t.subject, "raw_subject": t.subject,
        "description": t.messages[0].text, "priority": t.priority, "status": t.status,
        "recipient": f"support@{c.SUPPORT_DOMAIN}", "requester_id": requester,
        "submitter_id": requester, "assignee_id": None if t.status == "new" else assignee,
        "organization_id": None, "group_id": 360009014412, "collaborator_ids": [],
        "follower_ids": [], "email_cc_ids": [], "forum_topic_id": None, "problem_id": None,
        "has_incidents": False, "is_public": True, "due_at": None, "tags": t.tags,
        "custom_fields": custom, "fields": custom,
        "satisfaction_rating": {"score": t.satisfaction}, "sharing_agreement_ids": [],
        "followup_ids": [], "ticket_form_id": 360001207771, "brand_id": 360000412231,
        "allow_channelback": False, "allow_attachments": True,
        "from_messaging_channel": t.channel == "chat", "comments": comments,
    }


def zendesk_tickets(tickets: list[Ticket], first_id: int = 52301) -> tuple[list[dict], list[dict]]:
    ids = ZendeskIds()
    comment_ids = [27650000000]
    out = [zendesk_ticket(first_id + k, t, ids, comment_ids) for k, t in enumerate(tickets)]
    return out, list(ids.users.values())


def write_zendesk(tickets: list[Ticket], out: io.TextIOBase) -> None:
    """One JSON document shaped like a page of Zendesk's cursor-based incremental ticket
    export (`{"tickets": [...], "end_of_stream": true, ...}`) with users side-loaded,
    and each ticket's comments (Ticket Comments API shape) under `comments`."""
    items, users = zendesk_tickets(tickets)
    doc = {"tickets": items, "users": users, "after_cursor": None, "after_url": None,
           "before_cursor": None, "before_url": None, "end_of_stream": True}
    json.dump(doc, out, indent=2, ensure_ascii=False)
    out.write("\n")


def write_zendesk_ndjson(tickets: list[Ticket], out: io.TextIOBase) -> None:
    """The full-export variant: one ticket object (with its comments) per line."""
    items, _ = zendesk_tickets(tickets)
    for item in items:
        out.write(json.dumps(item, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- Jira

JIRA_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
               "Dec")
JIRA_PRIORITY = {"urgent": "Highest", "high": "High", "normal": "Medium", "low": "Low"}
JIRA_TYPE = {"incident": "Incident", "problem": "Problem", "question": "Service Request",
             "task": "Task"}
JIRA_STATUS = {"solved": "Resolved", "closed": "Closed", "new": "Open", "open": "In Progress",
               "pending": "Waiting for customer", "hold": "Pending"}


def jira_time(d: datetime | None) -> str:
    """Jira's export format, e.g. `12/Mar/24 3:41 PM`."""
    if d is None:
        return ""
    hour = d.hour % 12 or 12
    return (f"{d.day:02d}/{JIRA_MONTHS[d.month - 1]}/{d.year % 100:02d} "
            f"{hour}:{d.minute:02d} {'AM' if d.hour < 12 else 'PM'}")


def jira_account_id(p: Person, agent: bool) -> str:
    digest = format(abs(hash_text(p.email)), "x").rjust(32, "0")[:32]
    if agent:
        return digest[:24]
    return f"712020:{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def hash_text(text: str) -> int:
    """A stable (unsalted) 128-bit FNV-1a hash; Python's hash() varies per process."""
    h = 0x6C62272E07BB014262B821756295C58D
    for ch in text.encode():
        h = ((h ^ ch) * 0x0000000001000000000000000000013B) % (1 << 128)
    return h


def write_jira(tickets: list[Ticket], out: io.TextIOBase, first_key: int = 101) -> None:
    """Jira's "Export > CSV (all fields)": repeated `Labels` and `Comment` columns;
    comment cells are `date;author account id;text`."""
    n_labels = max(len(t.tags) for t in tickets)
    n_comments = max(sum(m.public for m in t.messages[1:]) for t in tickets)
    head = ["Summary", "Issue key", "Issue id", "Issue Type", "Status", "Project key",
            "Project name", "Project type", "Project lead", "Priority", "Resolution",
            "Assignee", "Assignee Id", "Reporter", "Reporter Id", "Creator", "Creator Id",
            "Created", "Updated", "Last Viewed", "Resolved", "Component/s", "Due Date",
            "Votes"] + ["Labels"] * n_labels + [
            "Description", "Environment", "Watchers", "Custom field (Customer plan)",
            "Custom field (Request Type)", "Custom field (Satisfaction rating)",
            "Custom field (Channel)"] + ["Comment"] * n_comments
    w = csv.writer(out)
    w.writerow(head)
    for k, t in enumerate(tickets):
        reporter = jira_account_id(t.customer, agent=False)
        assignee = jira_account_id(t.agent, agent=True)
        labels = t.tags + [""] * (n_labels - len(t.tags))
        comments = []
        for m in t.messages[1:]:
            if not m.public:  # internal notes stay out of the customer-facing export
                continue
            author = reporter if m.role == "customer" else assignee
            comments.append(f"{jira_time(m.at)};{author};{m.text}")
        comments += [""] * (n_comments - len(comments))
        unassigned = t.status == "new"
        w.writerow([
            t.subject, f"SUP-{first_key + k}", str(10412 + 3 * k), JIRA_TYPE[t.kind],
            JIRA_STATUS[t.status], "SUP", "Tallybird Support", "service_desk",
            "Ruth Adeyemi", JIRA_PRIORITY[t.priority], "Done" if t.solved else "",
            "" if unassigned else t.agent.name, "" if unassigned else assignee,
            t.customer.name, reporter, t.customer.name, reporter, jira_time(t.created_at),
            jira_time(t.updated_at), "", jira_time(t.resolved_at), t.category, "", "0",
            *labels, t.messages[0].text, "", t.customer.name if not unassigned else "",
            t.plan, {"incident": "Report an incident", "problem": "Report a bug",
                     "question": "Ask a question", "task": "Request a change"}[t.kind],
            {"good": "Satisfied", "bad": "Dissatisfied"}.get(t.satisfaction, ""),
            t.channel, *comments,
        ])


WRITERS = {"csv": write_csv, "zendesk": write_zendesk, "zendesk-ndjson": write_zendesk_ndjson,
           "jira": write_jira}
