"""Tallybird's support tickets as data: people, messages, and seeded drawing.

A `Ticket` is one conversation, independent of the vendor format it is later
written in (see ticket_formats.py). `draw_tickets(n, seed)` gives the same tickets
for the same seed: every random choice comes from one `random.Random(seed)`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

import tallybird as c

START = datetime(2024, 1, 2, 8, 0, 0)
NEIGHBOUR = {"billing": "account_management", "account_management": "billing",
             "bug_report": "performance", "performance": "bug_report",
             "login_access": "account_management", "integration_api": "bug_report"}
HOUR_WEIGHTS = (1, 1, 1, 1, 1, 2, 3, 6, 9, 10, 10, 9, 8, 9, 10, 9, 8, 6, 5, 4, 4, 3, 2, 1)
REPLY_DELAY_H = {"urgent": (0.05, 1), "high": (0.3, 4), "normal": (1, 24), "low": (4, 72)}


@dataclass
class Person:
    name: str
    email: str
    phone: str = ""
    company: str = ""

    @property
    def first(self) -> str:
        return self.name.split()[0]


@dataclass
class Message:
    role: str  # customer | agent
    text: str
    at: datetime
    public: bool = True


@dataclass
class Ticket:
    """One support conversation, independent of the vendor format it is written in."""

    subject: str
    category: str
    priority: str
    kind: str
    solved: bool
    status: str  # Zendesk vocabulary: new, open, pending, hold, solved, closed
    plan: str
    channel: str
    customer: Person
    agent: Person
    messages: list[Message]
    resolution: str
    tags: list[str]
    satisfaction: str
    customer_ip: str
    body_parts: tuple[str, str, str] = ("", "", "")  # greeting, core, signoff

    @property
    def created_at(self) -> datetime:
        return self.messages[0].at

    @property
    def updated_at(self) -> datetime:
        return self.messages[-1].at

    @property
    def resolved_at(self) -> datetime | None:
        return self.messages[-1].at if self.solved else None


# ---------------------------------------------------------------- drawing tickets

def roughen(text: str, rng: random.Random) -> str:
    """Typos and casual writing; only purely alphabetic words are touched, so order
    numbers, keys and addresses stay intact."""
    words = text.split(" ")
    for _ in range(rng.randint(1, 3)):
        j = rng.randrange(len(words))
        w = words[j]
        if len(w) > 4 and w.isalpha():
            k = rng.randrange(1, len(w) - 2)
            op = rng.randint(0, 2)
            if op == 0:
                w = w[:k] + w[k + 1] + w[k] + w[k + 2:]
            elif op == 1:
                w = w[:k] + w[k + 1:]
            else:
                w = w[:k] + w[k] + w[k:]
            words[j] = w
    if rng.random() < 0.3:
        words = [w.lower() if w.isalpha() else w for w in words]
    text = " ".join(words)
    if rng.random() < 0.4:
        text = text.replace("n't", "nt").replace("I'm", "im").replace("you", "u")
    return text


def draw_customer(rng: random.Random) -> Person:
    first, last = rng.choice(c.FIRST_NAMES), rng.choice(c.LAST_NAMES)
    ascii_first = first.replace("ë", "e").replace("é", "e").lower()
    ascii_last = last.replace("ü", "ue").lower()
    user = rng.choice((f"{ascii_first}.{ascii_last}", f"{ascii_first}{ascii_last[0]}",
                       f"{ascii_first[0]}{ascii_last}{rng.randint(1, 99)}",
                       f"{ascii_first}_{ascii_last}"))
    phone = rng.choice((
        f"+1 415-555-01{rng.randint(0, 99):02d}", f"(312) 555-01{rng.randint(0, 99):02d}",
        f"+44 20 7946 0{rng.randint(0, 999):03d}", f"+49 30 901820{rng.randint(0, 99):02d}",
        f"+33 1 99 00 {rng.randint(10, 99)} {rng.randint(10, 99)}",
        f"07700 900{rng.randint(0, 999):03d}"))
    return Person(f"{first} {last}", f"{user}@{rng.choice(c.MAIL_DOMAINS)}", phone,
                  rng.choice(c.SHOPS))


def agent_person(name: str) -> Person:
    local = name.lower().replace("ć", "c").replace(" ", ".")
    return Person(name, f"{local}@{c.SUPPORT_DOMAIN}")


def draw_ticket(rng: random.Random, when: datetime) -> Ticket:
    customer = draw_customer(rng)
    agent = agent_person(rng.choice(c.AGENTS))
    plan = rng.choices(list(c.PLANS), weights=(35, 35, 20, 10))[0]
    channel = rng.choices(("email", "web", "chat", "voice"), weights=(50, 30, 15, 5))[0]
    draft = rng.choice(c.SCENARIOS)(c.Slots(rng, plan))

    priority = draft.priority
    if rng.random() < 0.08:  # the agent disagreed with the obvious priority
        i = c.PRIORITIES.index(priority) + rng.choice((-1, 1))
        priority = c.PRIORITIES[min(max(i, 0), 3)]
    urgency = rng.choice(c.URGENCY[priority]) if rng.random() < 0.85 else ""
    category = draft.category
    if rng.random() < 0.03 and category in NEIGHBOUR:  # mis-filed by a human
        category = NEIGHBOUR[category]

    context = rng.choice(c.CONTEXT)
    core = urgency + draft.body + (" " + context if context and rng.random() < 0.4 else "")
    if rng.random() < 0.35:
        core += "".join("\n\n" + d for d in rng.sample(c.DETAILS, rng.randint(1, 2)))
    messy = rng.random() < 0.3
    if messy:
        core = roughen(core, rng)
    greeting = rng.choice(c.GREETINGS)
    signoff = rng.choice(c.SIGNOFFS).format(
        name=customer.name, first=customer.first, company=customer.company,
        phone=customer.phone, email=customer.email)

    t = when
    messages = [Message("customer", greeting + core + signoff, t)]

    def after(role: str, lo_hi: tuple[float, float]) -> datetime:
        nonlocal t
        t = t + timedelta(hours=rng.uniform(*lo_hi), seconds=rng.randint(0, 59))
        return t

    follow: list[tuple[str, str]] = []
    if rng.random() < 0.2:
        follow.append(("customer", rng.choice(c.ADDENDA).format(plan=plan)))
    for question, answer in draft.exchanges:
        if rng.random() < 0.7:
            follow += [("agent", question), ("customer", answer)]
    if rng.random() < 0.35 or not follow:
        holding, chase = rng.choice(c.FOLLOW_UPS)
        follow += [("agent", holding), ("customer", chase)]
    follow = follow[:6]
    for role, text in follow:
        if role == "customer":
            text = roughen(text, rng) if messy else text
            messages.append(Message(role, text, after(role, (0.2, 30))))
        else:
            text = f"Hi {customer.first},\n\n{text}\n\n{agent.first}"
            messages.append(Message(role, text, after(role, REPLY_DELAY_H[priority])))

    solved = rng.random() < 0.85
    if solved:
        if draft.internal_note and rng.random() < 0.5:
            messages.append(Message("agent", draft.internal_note,
                                    after("agent", (0.1, 2)), public=False))
        reply = (f"Hi {customer.first},\n\n{draft.resolution}\n\n"
                 f"{rng.choice(('Best', 'Kind regards', 'Thanks again', 'All the best'))},\n"
                 f"{agent.first}\n{c.COMPANY} Support")
        messages.append(Message("agent", reply, after("agent", REPLY_DELAY_H[priority])))
        status = rng.choices(("solved", "closed"), weights=(60, 40))[0]
        satisfaction = rng.choices(("good", "bad", "offered", "unoffered"),
                                   weights=(45, 8, 30, 17))[0]
    else:
        status = rng.choice(("new", "open", "open", "pending", "hold"))
        if status == "new":
            messages = messages[:1]
        satisfaction = "unoffered"

    tags = [category] + draft.tags + [plan.lower()]
    if plan == "Enterprise":
        tags.append("vip")
    return Ticket(
        subject=roughen(draft.subject, rng) if messy and rng.random() < 0.5 else draft.subject,
        category=category, priority=priority, kind=draft.kind, solved=solved, status=status,
        plan=plan, channel=channel, customer=customer, agent=agent, messages=messages,
        resolution=draft.resolution if solved else "", tags=tags, satisfaction=satisfaction,
        customer_ip=c.Slots(rng, plan).ipv4(), body_parts=(greeting, core, signoff))


def draw_tickets(n: int, seed: int) -> list[Ticket]:
    """`n` tickets, opened at increasing times through 2024, from one seeded source."""
    rng = random.Random(seed)
    step = timedelta(days=350) / max(n, 1)
    out = []
    for i in range(n):
        day = (START + step * i).replace(hour=0, minute=0, second=0, microsecond=0)
        hour = rng.choices(range(24), weights=HOUR_WEIGHTS)[0]
        when = day + timedelta(hours=hour, seconds=rng.randint(0, 3599))
        out.append(draw_ticket(rng, when))
    return out
