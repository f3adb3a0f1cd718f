"""The tickets of the planted incidents (and the decoys) that replace a few draws.

Each incident of sample_data/tallybird_incidents.py has one customer ticket, written
here by hand in the customer's and agent's words: what broke, when, what still works,
and (for two of them) an identifier the logs also hold. `plant(tickets)` puts them in
place of the draws at their indices; every other ticket stays exactly as drawn, since
the random draws before and after are unchanged.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta
from pathlib import Path

from ticket_model import Message, Person, Ticket, agent_person

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import tallybird_incidents as story  # noqa: E402  (sample_data/: times and ids)


def _conversation(start: datetime, turns: list[tuple[str, float, str]],
                  customer: Person, agent: Person) -> list[Message]:
    """Messages from (role, minutes after the ticket opened, text); agent replies are
    signed like the drawn ones, internal notes (role 'note') are not public."""
    out = []
    for role, minutes, text in turns:
        at = start + timedelta(minutes=minutes)
        if role == "note":
            out.append(Message("agent", text, at, public=False))
        elif role == "agent":
            out.append(Message("agent", f"Hi {customer.first},\n\n{text}\n\n{agent.first}", at))
        else:
            out.append(Message("customer", text, at))
    return out


def _ticket(*, subject: str, category: str, priority: str, kind: str, plan: str, channel: str,
            customer: Person, agent: str, at: datetime, body: str, turns: list,
            resolution: str, tags: list[str], satisfaction: str, ip: str) -> Ticket:
    staff = agent_person(agent)
    messages = [Message("customer", body, at)] + _conversation(at, turns, customer, staff)
    last = messages[-1].at + timedelta(minutes=7)
    messages.append(Message("agent", f"Hi {customer.first},\n\n{resolution}\n\nBest,\n"
                                     f"{staff.first}\nTallybird Support", last))
    return Ticket(subject=subject, category=category, priority=priority, kind=kind, solved=True,
                  status="solved", plan=plan, channel=channel, customer=customer, agent=staff,
                  messages=messages, resolution=resolution, tags=[category] + tags + [plan.lower()],
                  satisfaction=satisfaction, customer_ip=ip, body_parts=("", body, ""))


def invoices_terms() -> Ticket:
    """INC-2024-0514-01, tickets.csv: quotes the request id and the error code."""
    inc = story.TERMS
    maren = Person("Maren Holt", "maren.holt@proton.me", "+49 30 90182044", "Lumen Bakery")
    body = (
        "Hi,\n\nSince this morning I can't create a single invoice. Every time I press Save "
        f"I get \"Payment terms could not be read ({inc['error_code']})\" and the invoice stays "
        "a draft. The last try was a few minutes ago, at 11:02 our time; the error box said "
        f"request ID {inc['request_id']}.\n\n"
        "What I noticed: the payment terms on the invoice form now show \"2w\" where it always "
        "said 14 days, and for our catering customers \"4w 2d\" instead of 30 days. An invoice "
        "that is due on receipt saves fine, and so does one where I typed 5 days. 7 days turns "
        "into \"1w\" and fails again. So it looks like anything of a week or more is written as "
        "weeks now and then can't be read back.\n\n"
        "We send about 40 invoices on Tuesdays, this is blocking our whole team today.\n\n"
        f"Thanks,\n{maren.name}\n{maren.company}\n{maren.phone}")
    return _ticket(
        subject=f"Can't create invoices since this morning - {inc['error_code']}",
        category="bug_report", priority="urgent", kind="incident", plan="Growth", channel="email",
        customer=maren, agent="Sunita Rao", at=inc["ticket_at"], body=body,
        turns=[("agent", 21, "Thank you for the request ID, it let us find your failed saves "
                              "straight away. We see the same error on every invoice with "
                              "payment terms of a week or more since this morning's release, "
                              "and our engineers are on it. I'll update you here."),
               ("customer", 34, "Thanks. Should I keep the drafts or delete them?")],
        resolution=("Invoices save normally again: we rolled back this morning's release at "
                    "09:58 UTC, and the fix for payment terms written in weeks (\"2w\") is done. "
                    "Keep your drafts, they are under Invoices > Drafts and will save with their "
                    "original 14-day and 30-day terms. Sorry for the disruption to your "
                    "Tuesday invoicing!"),
        tags=["invoices", "incident"], satisfaction="good", ip="203.0.113.58")


def store_checkout() -> Ticket:
    """INC-2024-0730-01, zendesk_export.json: quotes the trace id shown on the error page."""
    inc = story.DISPATCH
    tom = Person("Tom Okafor", "tom@spokeandchain.example", "+44 20 7946 0412",
                 "Spoke & Chain Bikes")
    body = (
        "Hello,\n\nI'm trying to order a replacement Receipt Printer 80 from your hardware "
        "store and checkout fails every time: after I click 'Place order' I get 'Something went "
        f"wrong, please try again. Reference: {inc['trace_id']}'. I tried three times since "
        "about 15:35, the last one at 15:41 (Dublin time). My colleague ordered paper rolls "
        "this morning without any problem.\n\nOur only printer died so we're writing receipts "
        f"by hand - please help!\n\n{tom.name}\n{tom.company}")
    return _ticket(
        subject="Checkout fails when ordering a receipt printer",
        category="bug_report", priority="high", kind="incident", plan="Starter", channel="web",
        customer=tom, agent="Pieter de Vries", at=inc["ticket_at"], body=body,
        turns=[("agent", 9, "Thanks for the reference, that helps. Did the basket show an "
                            "'Estimated dispatch' line before you clicked Place order, and what "
                            "did it say?"),
               ("customer", 19, "Yes: 'Estimated dispatch: tomorrow 10:00', then Place order "
                                "failed. The paper rolls this morning said 'dispatch today "
                                "13:00'."),
               ("agent", 44, "That matches what our engineers see. The dispatch estimate is "
                             "the order time plus two business hours of our Dublin warehouse "
                             "(09:00-17:00, Monday to Friday, Irish time). Since 15:00 every "
                             "estimate runs into the next working day, and then the calculation "
                             "returns the next morning's time without the warehouse's time "
                             "zone, so the checkout fails when it compares it with the order "
                             "time. Orders whose estimate stays within the same day are fine. "
                             "We're fixing it now."),
               ("note", 47, f"store-api trace {inc['trace_id']}: checkout.failed at "
                            "dispatch_estimate, naive vs aware datetime. Store team rolling "
                            "back 2024.07.3.")],
        resolution=("Checkout in the hardware store works again since 17:05 Irish time: the "
                    "dispatch estimate kept the warehouse's time zone only when it stayed within "
                    "the same working day. Please place the Receipt Printer 80 order again; "
                    "we've upgraded it to free express shipping."),
        tags=["hardware", "checkout", "incident"], satisfaction="good", ip="198.51.100.64")


def webhook_retries() -> Ticket:
    """INC-2024-1008-01, jira_export.csv: names webhooks and the symptom, no identifier."""
    inc = story.RETRY
    jonas = Person("Jonas Lindqvist", "jonas.lindqvist@outlook.com", "+33 1 99 00 41 27",
                   "Harbor Street Books")
    body = (
        "Hi Tallybird team,\n\nsince this morning our order webhooks are getting lost. Our "
        "endpoint answers 503 for a few seconds a couple of times an hour while it scales, and "
        "until yesterday your webhooks simply retried half a second later and everything "
        "arrived. Since about 11:00 (CEST) the event log in Settings > Webhooks shows those "
        "events as 'Expired' right after the first failed attempt, with 'next retry in 8h 20m'. "
        "Our endpoint's retry delay is still the default, 500ms. 8h 20m is exactly 500 minutes, "
        "so it looks like the 500ms is being read as 500 minutes, and a retry that far out is "
        "past your one-hour delivery window.\n\nWe've lost about 30 order events in the last "
        "hour and have to re-import orders by hand. Need this fixed asap please.\n\n"
        f"Jonas Lindqvist\n{jonas.company}")
    return _ticket(
        subject="Webhooks: failed deliveries expire instead of being retried",
        category="integration_api", priority="high", kind="incident", plan="Scale",
        channel="web", customer=jonas, agent="Omar Farouk", at=inc["ticket_at"], body=body,
        turns=[("agent", 17, "Thanks for the very clear report. I reproduced it with a test "
                             "endpoint: the retry is scheduled 500 minutes out, past the "
                             "one-hour delivery window, so the event expires. I've escalated it "
                             "to the team that runs webhooks as urgent."),
               ("customer", 39, "Great, thanks. Is there a way to get the expired events "
                                "again?")],
        resolution=("This morning's webhooks release was rolled back at 10:48 UTC, so failed "
                    "deliveries are retried after 500 ms again, and the fix for '500ms' being "
                    "read as 500 minutes is done. Events that expired between 08:55 and 10:48 "
                    "UTC can be sent again from Settings > Webhooks > Event log > Redeliver "
                    "expired."),
        tags=["webhooks", "incident"], satisfaction="good", ip="203.0.113.201")


def pdf_request_decoy() -> Ticket:
    """Decoy: quotes a request id that no log holds (the day after the invoices incident)."""
    inc = story.UNKNOWN_REQUEST
    ana = Person("Ana Ferreira", "ana_ferreira@gmail.com", "(312) 555-0147", "Two Rivers Deli")
    body = (
        "Hello, when I click 'Download PDF' on invoice INV-24518 I get \"We couldn't generate "
        f"this PDF (request {inc['request_id']})\". Other invoices download fine. Could you "
        f"have a look? No rush.\n\nAna\n{ana.company}")
    return _ticket(
        subject="PDF download fails for one invoice",
        category="bug_report", priority="low", kind="problem", plan="Starter", channel="email",
        customer=ana, agent="Grace Lin", at=inc["ticket_at"], body=body,
        turns=[("agent", 95, "Thanks Ana. Did you change the logo in Settings > Store recently?"),
               ("customer", 160, "Yes, yesterday, a photo from my phone.")],
        resolution=("The new logo was a HEIC photo, which the PDF renderer can't embed, and "
                    "INV-24518 was the first invoice created after the change. I converted the "
                    "logo to PNG under Settings > Store > Logo; INV-24518 downloads now."),
        tags=["invoices", "pdf"], satisfaction="offered", ip="198.51.100.19")


def webhook_question_decoy() -> Ticket:
    """Decoy: names webhooks on a day when the webhooks log has no errors."""
    inc = story.QUIET_SERVICE
    li = Person("Li Na Park", "lina.park@icloud.com", "+1 415-555-0183", "Pixel Toy Shop")
    body = (
        "Hi! Our developer says some webhooks arrive twice for the same order today - once "
        "right when the order is placed and once a minute later. Is that expected or are your "
        "webhooks being resent? Thanks, Li Na")
    return _ticket(
        subject="Webhooks arriving twice?",
        category="integration_api", priority="normal", kind="question", plan="Growth",
        channel="chat", customer=li, agent="Jess Moreno", at=inc["ticket_at"], body=body,
        turns=[("agent", 12, "Could you send me the two event types your developer sees?"),
               ("customer", 31, "order.created and then order.updated, same order number.")],
        resolution=("Those are two different events: order.created when the order is placed "
                    "and order.updated when the payment is captured a minute later. Nothing is "
                    "resent; your developer can subscribe to order.created only under "
                    "Settings > Webhooks if the second one isn't needed."),
        tags=["webhooks"], satisfaction="good", ip="203.0.113.133")


PLANTED = {
    story.TERMS["ticket_index"]: invoices_terms,
    story.UNKNOWN_REQUEST["ticket_index"]: pdf_request_decoy,
    story.DISPATCH["ticket_index"]: store_checkout,
    story.QUIET_SERVICE["ticket_index"]: webhook_question_decoy,
    story.RETRY["ticket_index"]: webhook_retries,
}


def plant(tickets: list[Ticket]) -> list[Ticket]:
    """`tickets` with the planted ones in place of the draws at their indices (a ticket
    keeps its place in the time order: it opens after the one before it and before the
    one after it)."""
    out = list(tickets)
    for i, make in PLANTED.items():
        if i < len(out):
            t = make()
            assert (i == 0 or out[i - 1].created_at < t.created_at) and (
                i + 1 >= len(out) or t.created_at < out[i + 1].created_at), i
            out[i] = t
    return out
