"""What Tallybird's customers write about, and what its agents answer.

Tallybird is a fictional company: inventory, invoicing and point-of-sale software for
small shops, sold as a subscription (Starter, Growth, Scale, Enterprise), plus a little
hardware (barcode scanners, receipt printers, card readers) shipped from its own store.
Every name, number, address and key in here is invented.

Each scenario is a function that draws its slot values from the generator's seeded
random source and returns a `Draft`: the customer's opening message, clarifying
exchanges, the agent's resolution and the labels. Slot values flow from the opening
message into the resolution (the same order number, plan, amount or menu path), so a
grader can check a reply against the facts of the real resolution.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field

COMPANY = "Tallybird"
SUPPORT_DOMAIN = "tallybird.example"

CATEGORIES = (
    "billing",
    "login_access",
    "bug_report",
    "feature_request",
    "shipping_order",
    "privacy_deletion",
    "performance",
    "integration_api",
    "account_management",
)
PRIORITIES = ("low", "normal", "high", "urgent")
PLANS = {"Starter": 19, "Growth": 59, "Scale": 149, "Enterprise": 0}
HARDWARE = {
    "Scan S2 barcode scanner": 129,
    "Receipt Printer 80": 189,
    "Card Reader R3": 59,
    "Cash Drawer CD-41": 99,
    "Label Printer L4": 249,
}
BROWSERS = ("Chrome 124", "Firefox 126", "Safari 17.4", "Edge 125", "Chrome on Android",
            "Safari on iPad")
RELEASES = ("4.11.2", "4.12.0", "4.12.3", "4.13.1", "4.14.0")
CARRIERS = {"UPS": "1Z{a}{d}", "FedEx": "{d12}", "DHL": "JD{d}"}


@dataclass
class Draft:
    """One conversation before it gets people, times and a vendor format."""

    category: str
    subject: str
    body: str
    resolution: str
    priority: str = "normal"
    kind: str = "question"  # Zendesk ticket type: question, incident, problem, task
    exchanges: list[tuple[str, str]] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    internal_note: str = ""


class Slots:
    """Seeded draws of the values a scenario needs (numbers, keys, planted PII)."""

    def __init__(self, rng: random.Random, plan: str):
        self.rng = rng
        self.plan = plan

    def pick(self, seq):
        return self.rng.choice(seq)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def digits(self, n: int) -> str:
        return "".join(self.rng.choice(string.digits) for _ in range(n))

    def order_no(self) -> str:
        return f"TB-{self.rng.randint(100000, 199999)}"

    def invoice_no(self) -> str:
        return f"INV-2024-{self.rng.randint(1, 9999):05d}"

    def money(self, lo: int, hi: int) -> str:
        return f"${self.rng.randint(lo, hi)}.{self.pick(('00', '00', '50', '99', '40'))}"

    def day(self) -> str:
        months = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                  "Nov", "Dec")
        return f"{self.pick(months)} {self.rng.randint(1, 28)}"

    def tracking(self) -> tuple[str, str]:
        carrier = self.pick(sorted(CARRIERS))
        alnum = "".join(self.rng.choice(string.ascii_uppercase + string.digits)
                        for _ in range(6))
        number = CARRIERS[carrier].format(a=alnum, d=self.digits(10), d12=self.digits(12))
        return carrier, number

    def card(self) -> str:
        """A 16-digit number that passes the Luhn check, written as people write it."""
        prefix = self.pick(("4", "4", "51", "53", "55"))
        body = prefix + self.digits(15 - len(prefix))
        total = 0
        for i, ch in enumerate(reversed(body)):
            d = int(ch)
            if i % 2 == 0:
                d *= 2
                if d > 9:
                    d -= 9
            total += d
        number = body + str((10 - total % 10) % 10)
        style = self.rng.randint(0, 2)
        if style == 0:
            return " ".join(number[i:i + 4] for i in range(0, 16, 4))
        if style == 1:
            return "-".join(number[i:i + 4] for i in range(0, 16, 4))
        return number

    def iban(self) -> str:
        """A German, Dutch, French or British IBAN with a valid mod-97 check."""
        country = self.pick(("DE", "NL", "FR", "GB"))
        if country == "DE":
            bban = self.digits(18)
        elif country == "NL":
            bban = self.pick(("ABNA", "INGB", "RABO", "TRIO")) + self.digits(10)
        elif country == "FR":
            bban = self.digits(10) + self.digits(11) + self.digits(2)
        else:
            bban = self.pick(("NWBK", "BARC", "MIDL", "LOYD")) + self.digits(14)
        rearranged = bban + country + "00"
        numeric = "".join(str(int(c, 36)) for c in rearranged)
        check = 98 - int(numeric) % 97
        iban = f"{country}{check:02d}{bban}"
        if self.chance(0.6):
            return " ".join(iban[i:i + 4] for i in range(0, len(iban), 4))
        return iban

    def ipv4(self) -> str:
        net = self.pick(("203.0.113", "198.51.100", "192.0.2", "10.20.4", "172.16.31"))
        return f"{net}.{self.rng.randint(2, 254)}"

    def ipv6(self) -> str:
        groups = ":".join(f"{self.rng.randint(0, 0xffff):x}" for _ in range(4))
        return f"2001:db8:{self.rng.randint(1, 0xfff):x}::{groups.split(':', 1)[1]}"

    def token(self, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def api_key(self) -> str:
        kind = self.rng.randint(0, 4)
        if kind == 0:
            return "tb_live_" + self.token(32)
        if kind == 1:
            return "sk_live_" + self.token(24)
        if kind == 2:
            return "AKIA" + self.token(16, string.ascii_uppercase + string.digits)
        if kind == 3:
            return "ghp_" + self.token(36)
        return "xoxb-" + self.digits(11) + "-" + self.digits(12) + "-" + self.token(24)

    def password(self) -> str:
        word = self.pick(("Summer", "Bakery", "Tigers", "Maple", "Orchid", "Rocket",
                          "Harbor", "Falcon", "Pepper"))
        return f"{word}{self.rng.randint(1, 2024)}{self.pick('!?#$*')}"

    def uuid(self) -> str:
        h = self.token(32, "0123456789abcdef")
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{h[16:20]}-{h[20:]}"

    def request_id(self) -> str:
        return "req_" + self.token(20, "0123456789abcdef")


# ---------------------------------------------------------------- billing

def double_charge(s: Slots) -> Draft:
    amount = s.money(19, 149) if s.plan != "Enterprise" else s.money(400, 900)
    inv = s.invoice_no()
    card_line = ""
    if s.chance(0.5):
        card_line = s.pick((
            f"\n\nThe card is {s.card()} if that helps you find it.",
            f"\nCard used: {s.card()} exp {s.rng.randint(1, 12):02d}/{s.rng.randint(25, 29)}",
            f" It's the card ending in the number {s.card()}.",
        ))
    body = s.pick((
        f"I was charged {amount} twice this month for our {s.plan} plan. Both charges show "
        f"on my statement on {s.day()}. Please refund the duplicate.{card_line}",
        f"We got billed two times for the same invoice ({inv}), {amount} each. This is "
        f"the second time this happens.{card_line}",
        f"Hello, my bank statement has a double payment to Tallybird, {amount} x2. Our "
        f"subscription is {s.plan}. Can you check?{card_line}",
    ))
    return Draft(
        category="billing", kind="incident",
        priority=s.pick(("normal", "normal", "high")),
        subject=s.pick(("Charged twice", "Double charge on my card", f"Duplicate payment {inv}",
                        "billed 2x this month??", "Refund duplicate charge")),
        body=body,
        exchanges=[(
            "Thanks for flagging this. Could you send the last four digits of the card and "
            "the dates of both charges so I can match them?",
            s.pick(("Both on the same day, one a few minutes after the other.",
                    "the second one came a day later. same amount",
                    f"Dates are {s.day()} and the day after.")),
        )],
        resolution=(
            f"I found the duplicate charge of {amount} on invoice {inv}: our payment "
            f"provider retried a payment that had already gone through. I've refunded "
            f"{amount} to the original card; refunds take 5-10 business days to show on "
            f"your statement. Your {s.plan} plan is not affected."
        ),
        tags=["refund", "duplicate_charge"],
        internal_note=(f"Confirmed in the payments dashboard, retry after timeout. "
                       f"Refund issued for {inv}."),
    )


def vat_invoice(s: Slots) -> Draft:
    inv = s.invoice_no()
    vat = f"{s.pick(('DE', 'FR', 'NL', 'IE'))}{s.digits(9)}"
    return Draft(
        category="billing", priority=s.pick(("low", "normal", "normal")),
        subject=s.pick(("VAT number missing on invoice", "Need invoice with our VAT ID",
                        f"Invoice {inv} wrong company details", "invoice correction")),
        body=s.pick((
            f"Our accountant says invoice {inv} is missing our VAT number ({vat}) and the "
            f"company address is the old one. Can you reissue it?",
            f"Hi, can you add VAT ID {vat} to our invoices? We need it for the tax return. "
            f"Latest one is {inv}.",
        )),
        resolution=(
            f"I've added VAT ID {vat} to your billing profile and reissued invoice {inv}. "
            f"You can download the corrected PDF from Settings > Billing > Invoices. Future "
            f"invoices will include the VAT ID automatically."
        ),
        tags=["invoice", "vat"],
    )


def refund_after_cancel(s: Slots) -> Draft:
    amount = s.money(150, 1500)
    iban_line = f"\n\nYou can send it to our account: {s.iban()}" if s.chance(0.6) else ""
    return Draft(
        category="billing", priority=s.pick(("normal", "high")),
        subject=s.pick(("Refund for annual plan", "Charged after cancelling",
                        "want my money back", "Annual renewal refund request")),
        body=s.pick((
            f"We cancelled our {s.plan} subscription last month but were still charged "
            f"{amount} for the annual renewal. We want a refund.{iban_line}",
            f"The annual {s.plan} plan renewed automatically for {amount}, I forgot to "
            f"turn off auto renew. We closed the shop in {s.day()}. Can I get a refund?"
            f"{iban_line}",
        )),
        exchanges=[(
            "I'm sorry to hear the shop closed. Can you confirm you'd like the account "
            "closed as well, or only the renewal refunded?",
            s.pick(("Just refund please, we might reopen next year.",
                    "Close everything, we won't use it anymore.")),
        )],
        resolution=(
            f"Annual renewals can be refunded within 30 days, so I've refunded the full "
            f"{amount} to the card on file (we can only refund to the original payment "
            f"method, not to a bank account). Auto-renew is now off; you can check it under "
            f"Settings > Billing > Subscription."
        ),
        tags=["refund", "renewal"],
    )


def card_declined(s: Slots) -> Draft:
    card = s.card()
    return Draft(
        category="billing", priority=s.pick(("high", "high", "urgent")), kind="problem",
        subject=s.pick(("Card declined, account suspended?", "Payment failed",
                        "can't update payment method", "Subscription payment keeps failing")),
        body=s.pick((
            f"Our payment failed and now there's a red banner saying the account will be "
            f"suspended in 3 days. I tried to add a new card {card} but it says 'card "
            f"declined'. The bank says there's no problem on their side.",
            f"I keep getting payment failed emails. Updated the card twice. New card number "
            f"is {card}, please just charge it manually.",
        )),
        resolution=(
            "The new card was declined by our payment provider because the billing postcode "
            "didn't match the one your bank has. Please re-enter the card under Settings > "
            "Billing > Payment method with the postcode from your bank statement. I've "
            "extended your grace period by 7 days so the account won't be suspended. For "
            "your security, please never send full card numbers by e-mail; I've removed "
            "it from this ticket."
        ),
        tags=["payment_failed", "dunning"],
    )


# ---------------------------------------------------------------- login / access

def password_reset_missing(s: Slots) -> Draft:
    pw = s.password()
    pw_line = s.pick((f" I'm sure my password is {pw}.", f" Tried {pw} and variations.",
                      "", ""))
    return Draft(
        category="login_access", priority=s.pick(("normal", "high")),
        subject=s.pick(("Can't log in", "password reset email never arrives",
                        "Locked out of my account", "Login not working")),
        body=s.pick((
            f"I can't log into Tallybird since this morning, it says invalid credentials."
            f"{pw_line} I requested a password reset 3 times but the e-mail never arrives, "
            f"not in spam either.",
            f"reset password link doesn't come. checked junk folder.{pw_line}",
            f"Locked out after too many attempts.{pw_line} Please help me get back in, "
            f"I need to do invoices today.",
        )),
        exchanges=[(
            "Can you confirm the e-mail address you log in with? Sometimes it's a shared "
            "address like info@ or orders@.",
            s.pick(("Yes it's the one I'm writing from.", "Ah, it might be our orders@ "
                    "address actually.")),
        )],
        resolution=(
            "Your address was on our mail provider's suppression list after an earlier "
            "bounce, so reset e-mails were silently dropped. I've removed it and unlocked "
            "the account. Please reset your password from the login page (Forgot "
            "password?) and then turn on two-factor authentication from Settings > Security. "
            "The reset link is valid for 60 minutes."
        ),
        tags=["password_reset", "locked"],
        internal_note="Suppression list entry removed. Lockout counter cleared.",
    )


def lost_2fa(s: Slots) -> Draft:
    return Draft(
        category="login_access", priority=s.pick(("high", "high", "urgent")),
        subject=s.pick(("Lost phone, can't get 2FA code", "2FA reset please",
                        "New phone - authenticator codes gone", "two factor locked out")),
        body=s.pick((
            "I got a new phone and the authenticator app didn't transfer, so I can't get "
            "the 6-digit code anymore. I don't have the backup codes. I'm the account owner.",
            "My phone was stolen yesterday and I can't log in because of two-factor. Our "
            "staff can't open the till without me approving things.",
        )),
        exchanges=[(
            "For security we need to verify ownership before removing 2FA. Please reply "
            "with the last invoice number and the date the account was created (roughly).",
            s.pick((f"Last invoice is {s.invoice_no()}, account since 2021 I think.",
                    f"{s.invoice_no()} and we signed up around spring 2022")),
        )],
        resolution=(
            "Thanks, ownership is verified. I've removed two-factor authentication from "
            "your login. Please sign in, then set it up again from Settings > Security > "
            "Two-factor authentication and download the backup codes this time (store them "
            "somewhere other than your phone)."
        ),
        tags=["2fa", "identity_verification"],
    )


def sso_error(s: Slots) -> Draft:
    rid = s.request_id()
    return Draft(
        category="login_access", priority=s.pick(("high", "urgent")), kind="incident",
        subject=s.pick(("SSO login fails with SAML error", "Okta SSO broken",
                        "Nobody can log in via SSO", "SAML response invalid")),
        body=s.pick((
            f"Since this morning all our staff get 'SAML response signature invalid' when "
            f"logging in through Okta. Request id {rid}. We rotated our IdP certificate "
            f"yesterday, could that be it?",
            f"SSO login error for the whole team: 'Invalid SAML response'. Error reference "
            f"{rid}. Nothing changed on our side as far as I know.",
        )),
        resolution=(
            "The login failures come from the new signing certificate on your identity "
            "provider: Tallybird still had the old one. Please upload the new certificate "
            "under Settings > Security > Single sign-on (SAML), then use 'Test connection'. "
            "Until then, account owners can still log in with e-mail and password."
        ),
        tags=["sso", "saml"],
    )


# ---------------------------------------------------------------- bug reports

def pdf_export_blank(s: Slots) -> Draft:
    browser = s.pick(BROWSERS)
    version = s.pick(RELEASES)
    return Draft(
        category="bug_report", priority=s.pick(("normal", "normal", "high")), kind="problem",
        subject=s.pick(("Invoice PDF is blank", "PDF export empty", "exported invoices "
                        "have no line items", "Blank PDF when downloading invoice")),
        body=s.pick((
            f"When I download an invoice as PDF the file is blank, just the header. Using "
            f"{browser}. It started after the update to {version}.",
            f"Exported invoices come out empty (no line items). Tried {browser} and a "
            f"different computer. Customers are asking for their invoices.",
        )),
        exchanges=[(
            "Thanks for the details. Do the invoices that come out blank have line items "
            "with a discount applied?",
            s.pick(("Yes, now that you say it, all of them have a discount.",
                    "some do, not sure about all")),
        )],
        resolution=(
            f"This was a bug in release {version}: invoices with a line-item discount "
            f"rendered an empty table in the PDF. It is fixed in release 4.14.1, which is "
            f"live now. Please download the invoice again from Invoices > All invoices; no "
            f"need to recreate it."
        ),
        tags=["pdf", "invoices", "regression"],
    )


def negative_stock(s: Slots) -> Draft:
    sku = f"{s.pick(('TSH', 'MUG', 'CND', 'BK', 'PLT'))}-{s.rng.randint(100, 999)}"
    return Draft(
        category="bug_report", priority=s.pick(("normal", "high")), kind="problem",
        subject=s.pick(("Stock goes negative", f"Inventory count wrong for {sku}",
                        "stock levels wrong after sale", "Negative inventory bug")),
        body=s.pick((
            f"Item {sku} shows -3 in stock even though we counted 12 on the shelf "
            f"yesterday. It looks like sales on the POS are subtracted twice.",
            f"after selling on the register the stock of {sku} drops by 2 instead of 1. "
            f"happens since last week.",
        )),
        exchanges=[(
            "Could you tell me whether the register was offline at any point that day?",
            s.pick(("Yes the wifi dropped for a while in the afternoon.",
                    "Maybe, the internet is not great in the shop.")),
        )],
        resolution=(
            f"When a register comes back online it re-sent sales it had already synced, "
            f"so {sku} was counted twice. Engineering fixed the duplicate sync in release "
            f"4.13.1. To correct the numbers, run a stock count for {sku} from Inventory > "
            f"Stock counts > New count; the adjustment will be logged."
        ),
        tags=["inventory", "pos", "sync"],
    )


def dashboard_totals(s: Slots) -> Draft:
    a = s.money(1000, 9000)
    return Draft(
        category="bug_report", priority=s.pick(("low", "normal")),
        subject=s.pick(("Dashboard total doesn't match report", "Sales total wrong on "
                        "dashboard", "numbers different dashboard vs export")),
        body=s.pick((
            f"The dashboard says {a} for last month but the sales report export adds up to "
            f"a different number. Which one is right?",
            f"Monthly revenue on the home screen ({a}) is not the same as in Reports > "
            f"Sales. Timezone issue maybe? We're in Europe/Berlin.",
        )),
        resolution=(
            "Both are right but use different days: the dashboard counts sales by UTC day "
            "and the report by your store's time zone. We changed the dashboard to use the "
            "store time zone as well (set under Settings > Store > Time zone), so the "
            "numbers now match."
        ),
        tags=["reports", "timezone"],
    )


# ---------------------------------------------------------------- feature requests

def feature_wish(s: Slots) -> Draft:
    wish, why = s.pick((
        ("dark mode", "we work late and the white screen is really bright"),
        ("multi-currency invoices", "we sell to Switzerland and the UK"),
        ("custom fields on products", "we need to track the supplier batch"),
        ("bulk editing prices", "changing 400 prices one by one takes forever"),
        ("scheduled reports by e-mail", "the owner wants the weekly numbers on Monday"),
        ("a Spanish translation of the POS", "half our staff prefers Spanish"),
        ("gift cards", "customers keep asking for them at Christmas"),
    ))
    fr = f"FR-{s.rng.randint(1000, 2999)}"
    return Draft(
        category="feature_request", priority=s.pick(("low", "low", "normal")), kind="task",
        subject=s.pick((f"Feature request: {wish}", f"Any plans for {wish}?",
                        f"Suggestion - {wish}", f"please add {wish}")),
        body=s.pick((
            f"Would love to see {wish} in Tallybird, {why}. Is it on the roadmap?",
            f"Hi! Small suggestion: {wish}. Reason: {why}. Thanks for a great product.",
            f"Is {wish} possible? {why[0].upper()}{why[1:]}.",
        )),
        resolution=(
            f"Thanks for the suggestion! I've added your vote to our roadmap item {fr} "
            f"({wish}). It isn't scheduled yet, but requests with many votes get picked up "
            f"first, and you'll get an e-mail when it ships. You can follow it on the public "
            f"roadmap under Help > Roadmap."
        ),
        tags=["roadmap", wish.replace(" ", "_").replace("-", "_")[:24]],
    )


# ---------------------------------------------------------------- shipping / orders

def hardware_not_arrived(s: Slots) -> Draft:
    item = s.pick(sorted(HARDWARE))
    order = s.order_no()
    carrier, tracking = s.tracking()
    return Draft(
        category="shipping_order", priority=s.pick(("normal", "high")),
        subject=s.pick((f"Order {order} not delivered", "Where is my scanner?",
                        "hardware order still not here", f"Tracking for order {order}")),
        body=s.pick((
            f"I ordered a {item} ({order}) two weeks ago and it still hasn't arrived. The "
            f"tracking hasn't updated in 6 days.",
            f"order {order} - {item}. Status says shipped but nothing came. We open the "
            f"new location next week and need it.",
        )),
        exchanges=[(
            "Could you confirm the delivery address on the order is still correct?",
            s.pick(("Yes, same address as the invoice.", "It should go to the new shop "
                    "actually, not the old one! Sorry")),
        )],
        resolution=(
            f"The parcel for order {order} was lost in transit, so I've shipped a "
            f"replacement {item} by express at no cost. {carrier} tracking number: "
            f"{tracking}. It should arrive within 2 business days. If the first parcel "
            f"turns up, just refuse it or send it back with the prepaid label."
        ),
        tags=["hardware", "lost_parcel", carrier.lower()],
    )


def wrong_item(s: Slots) -> Draft:
    got, wanted = s.rng.sample(sorted(HARDWARE), 2)
    order = s.order_no()
    rma = f"RMA-{s.rng.randint(20000, 29999)}"
    return Draft(
        category="shipping_order", priority="normal",
        subject=s.pick(("Wrong item received", f"Order {order}: wrong product",
                        "received the wrong device", "Return and exchange")),
        body=s.pick((
            f"We received a {got} but we ordered a {wanted} (order {order}). How do we "
            f"exchange it?",
            f"Box for order {order} contained a {got}. We need the {wanted}!",
        )),
        resolution=(
            f"Sorry for the mix-up. I've created return {rma} for the {got}; the prepaid "
            f"return label is attached to this e-mail. The {wanted} ships today, you don't "
            f"need to wait for the return to arrive. Order reference: {order}."
        ),
        tags=["hardware", "return", "exchange"],
    )


def printer_damaged(s: Slots) -> Draft:
    order = s.order_no()
    return Draft(
        category="shipping_order", priority=s.pick(("normal", "high")),
        subject=s.pick(("Printer arrived broken", "Damaged in shipping",
                        "receipt printer cracked")),
        body=s.pick((
            f"The Receipt Printer 80 from order {order} arrived with a cracked case and it "
            f"doesn't power on. Photos attached.",
            f"printer from order {order} is damaged, box was crushed. need a new one",
        )),
        resolution=(
            f"Thanks for the photos. I've filed a damage claim with the carrier and sent a "
            f"new Receipt Printer 80 for order {order}; you'll get the tracking number by "
            f"e-mail today. No need to return the damaged one."
        ),
        tags=["hardware", "damaged"],
    )


# ---------------------------------------------------------------- privacy / deletion

def delete_account(s: Slots) -> Draft:
    return Draft(
        category="privacy_deletion", priority=s.pick(("low", "normal")), kind="task",
        subject=s.pick(("Delete my account", "Please remove all my data",
                        "Account deletion request (GDPR)", "close account and delete data")),
        body=s.pick((
            "We are closing the business. Please delete our Tallybird account and all data "
            "you hold about us, as per GDPR article 17.",
            "I want my account and personal data deleted. I do not consent to you keeping "
            "anything.",
            "Hi, please delete everything. We moved to another system.",
        )),
        exchanges=[(
            "Before we delete anything: do you want an export of your invoices first? Once "
            "deleted, we can't recover them.",
            s.pick(("Yes please send the export first.", "No export needed.")),
        )],
        resolution=(
            "Your deletion request is confirmed. The account is closed now and all personal "
            "data will be permanently deleted within 30 days; invoices we are legally "
            "required to keep for tax purposes are retained for 10 years and then deleted. "
            "If you need your data first, download it from Settings > Privacy > Export data "
            "before the account closes."
        ),
        tags=["gdpr", "deletion"],
    )


def data_export_request(s: Slots) -> Draft:
    return Draft(
        category="privacy_deletion", priority="normal", kind="task",
        subject=s.pick(("Data access request", "GDPR export of my data",
                        "What personal data do you store?")),
        body=s.pick((
            "Under GDPR I would like a copy of all personal data Tallybird holds about me "
            "and my staff.",
            "Please send me all data you have about our account, including logs of who "
            "logged in.",
        )),
        resolution=(
            "You can download a full export yourself from Settings > Privacy > Export data; "
            "it includes your account, staff members, customers, invoices and login history "
            "as CSV files in a ZIP. The export link is valid for 7 days. We answered within "
            "the 30-day period required by GDPR."
        ),
        tags=["gdpr", "data_export"],
    )


def remove_former_employee(s: Slots) -> Draft:
    return Draft(
        category="privacy_deletion", priority=s.pick(("normal", "high")),
        subject=s.pick(("Remove former employee's data", "Ex-staff member wants data deleted")),
        body=s.pick((
            f"A former employee asked us to delete her data. Her login and phone number "
            f"({s.pick(('+44 20 7946 0', '+1 415 555 0', '+49 30 90182'))}"
            f"{s.rng.randint(100, 199)}) are still in the staff list. How do we remove her "
            f"completely?",
        )),
        resolution=(
            "Go to Settings > Team, open the staff member and choose 'Remove and anonymise'. "
            "That deletes the login and replaces the name and phone number on past sales with "
            "'Former staff'. Sales totals are kept."
        ),
        tags=["gdpr", "staff"],
    )


# ---------------------------------------------------------------- performance

def slow_reports(s: Slots) -> Draft:
    secs = s.rng.randint(45, 240)
    return Draft(
        category="performance", priority=s.pick(("normal", "high")), kind="problem",
        subject=s.pick(("Reports extremely slow", "Sales report takes minutes",
                        "Timeout when loading reports", "reports page hangs")),
        body=s.pick((
            f"The sales report for the year takes {secs} seconds to load and sometimes "
            f"fails with a 504. We have about 80,000 sales.",
            f"reports are super slow since last week, {secs}s for a monthly report. "
            f"Is something wrong on your end?",
        )),
        resolution=(
            "Large date ranges were computed from raw sales every time. I've enabled "
            "pre-aggregated reports for your account, so yearly reports now load in a few "
            "seconds. For ranges over 2 years, use Reports > Scheduled to get the file by "
            "e-mail."
        ),
        tags=["reports", "slow"],
    )


def pos_lag(s: Slots) -> Draft:
    ip = s.ipv4()
    return Draft(
        category="performance", priority=s.pick(("high", "urgent")), kind="incident",
        subject=s.pick(("POS very slow at checkout", "Register lagging, queue of customers",
                        "checkout takes 10+ seconds")),
        body=s.pick((
            f"Every sale takes 10-15 seconds to complete on the register. Our public IP is "
            f"{ip} in case you need it for logs. Saturday is our busiest day.",
            f"the register freezes for several seconds after scanning each item. started "
            f"today. store network {ip}.",
        )),
        exchanges=[(
            "Is the slowness on every register, or only one?",
            s.pick(("All three registers.", "only the one by the door, the others are ok")),
        )],
        resolution=(
            "A database maintenance job ran during opening hours in your region and slowed "
            "checkouts between 09:40 and 11:15. It has been moved to the night window and "
            "checkout times are back to normal (under 1 second). We're sorry for the busy "
            "morning; I've added a credit of one month to your account."
        ),
        tags=["pos", "latency", "incident"],
    )


# ---------------------------------------------------------------- integration / API

def api_401(s: Slots) -> Draft:
    key = s.api_key()
    return Draft(
        category="integration_api", priority=s.pick(("normal", "high")),
        subject=s.pick(("API returns 401 Unauthorized", "API key not working",
                        "401 on /v2/items", "Authentication error with API")),
        body=s.pick((
            f"Our script calls GET https://api.{SUPPORT_DOMAIN}/v2/items and gets 401 "
            f"Unauthorized. Here is the key we use:\n\n    Authorization: Bearer {key}\n\n"
            f"It worked until yesterday.",
            f"Getting 401 from the API with key {key}. What's wrong?",
        )),
        exchanges=[(
            "Did anyone on your team regenerate or delete API keys recently?",
            s.pick(("Not that I know of.", "Our developer may have clicked regenerate...")),
        )],
        resolution=(
            "The key in your request was revoked yesterday when a new one was generated, so "
            "every call returned 401. Because the key was also posted in this ticket, I've "
            "revoked it for safety: please create a new key under Settings > API keys, store "
            "it in your server's environment rather than in the script, and never share it "
            "in e-mail."
        ),
        tags=["api", "auth", "key_rotation"],
    )


def webhooks_not_firing(s: Slots) -> Draft:
    hook = s.uuid()
    ip = s.ipv4()
    return Draft(
        category="integration_api", priority=s.pick(("normal", "high")), kind="problem",
        subject=s.pick(("Webhooks stopped firing", "No webhook events since Monday",
                        "order.created webhook not received")),
        body=s.pick((
            f"Our endpoint hasn't received any order.created webhooks since Monday. Webhook "
            f"id {hook}. The endpoint is up, our firewall allows {ip}.",
            f"webhook {hook} seems disabled? we get nothing. endpoint returns 200 when I "
            f"curl it.",
        )),
        resolution=(
            f"Webhook {hook} was disabled automatically after 50 failed deliveries in a row "
            f"(your endpoint answered with 500 errors for a few hours on Sunday). I've "
            f"re-enabled it and replayed the missed events. You can see delivery attempts and "
            f"re-enable webhooks yourself under Settings > Webhooks."
        ),
        tags=["webhooks"],
    )


def shopify_sync(s: Slots) -> Draft:
    n = s.rng.randint(12, 400)
    platform = s.pick(("Shopify", "WooCommerce", "QuickBooks", "Xero"))
    return Draft(
        category="integration_api", priority=s.pick(("normal", "high")),
        subject=s.pick((f"{platform} sync creating duplicates", f"{platform} integration broken",
                        f"products duplicated from {platform}")),
        body=s.pick((
            f"After connecting {platform} we have {n} duplicated products in Tallybird. "
            f"How do I undo this?",
            f"{platform} sync keeps failing with 'mapping conflict', and now some items are "
            f"doubled.",
        )),
        resolution=(
            f"Products were matched by name instead of SKU, so items with slightly different "
            f"names were imported twice. I've switched the {platform} matching rule to SKU "
            f"and merged the {n} duplicates. To check, go to Settings > Integrations > "
            f"{platform} > Sync log."
        ),
        tags=["integration", platform.lower()],
    )


def rate_limit(s: Slots) -> Draft:
    return Draft(
        category="integration_api", priority="normal",
        subject=s.pick(("429 Too Many Requests", "API rate limit?", "Hitting rate limits")),
        body=s.pick((
            "Our nightly import gets HTTP 429 after a few hundred requests. What is the rate "
            "limit and can it be raised?",
            "we get 429 errors from the API when syncing stock. Request ids: "
            f"{s.request_id()}, {s.request_id()}",
        )),
        resolution=(
            f"The API allows 120 requests per minute per key on the {s.plan} plan; a 429 "
            f"response carries a Retry-After header with the seconds to wait. For bulk "
            f"imports use the batch endpoint POST /v2/items/batch (up to 100 items per "
            f"request), which counts as one request."
        ),
        tags=["api", "rate_limit"],
    )


# ---------------------------------------------------------------- account management

def add_seats(s: Slots) -> Draft:
    n = s.rng.randint(2, 12)
    return Draft(
        category="account_management", priority=s.pick(("low", "normal")), kind="task",
        subject=s.pick(("Add more staff logins", f"Need {n} more seats",
                        "How to add users", "upgrade number of users")),
        body=s.pick((
            f"We're opening a second location and need {n} more staff logins. We're on "
            f"{s.plan}. How much will it cost?",
            f"how do i add {n} users to our account",
        )),
        resolution=(
            f"You can add seats yourself under Settings > Team > Seats. On the {s.plan} plan "
            f"extra seats are billed per month and prorated for the current period, so "
            f"adding {n} seats today only charges the remaining days of this month."
        ),
        tags=["seats", "team"],
    )


def transfer_owner(s: Slots) -> Draft:
    new_email = s.pick(("sam.okafor", "lea.schmitt", "j.martinez", "priya.n", "tomasz.w"))
    domain = s.pick(("gmail.com", "outlook.com", "yahoo.co.uk", "icloud.com", "gmx.de"))
    return Draft(
        category="account_management", priority="normal", kind="task",
        subject=s.pick(("Change account owner", "Transfer ownership", "new owner of the shop")),
        body=s.pick((
            f"I sold the shop. The new owner is {new_email}@{domain}, please make them the "
            f"account owner and remove me.",
            f"Please transfer the account to my business partner ({new_email}@{domain}).",
        )),
        resolution=(
            f"Only the current owner can start the transfer: go to Settings > Account > "
            f"Owner, choose 'Transfer ownership' and enter {new_email}@{domain}. The new "
            f"owner gets an e-mail to accept; billing moves to them once they add a payment "
            f"method."
        ),
        tags=["ownership"],
    )


def plan_change(s: Slots) -> Draft:
    plans = [p for p in PLANS if p != s.plan]
    target = s.pick(plans)
    return Draft(
        category="account_management", priority=s.pick(("low", "normal")), kind="question",
        subject=s.pick((f"Switch to {target} plan", "Change plan", f"Downgrade/upgrade to "
                        f"{target}?", "plan question")),
        body=s.pick((
            f"We're on {s.plan} and want to move to {target}. Do we lose any data or "
            f"features?",
            f"Thinking about switching from {s.plan} to {target}. What happens to our "
            f"reports history?",
        )),
        resolution=(
            f"You can switch from {s.plan} to {target} under Settings > Billing > "
            f"Subscription > Change plan. No data is deleted; features that {target} does "
            f"not include become read-only. The price difference is prorated on your next "
            f"invoice."
        ),
        tags=["plan_change", target.lower()],
    )


SCENARIOS = (
    double_charge, vat_invoice, refund_after_cancel, card_declined,
    password_reset_missing, lost_2fa, sso_error,
    pdf_export_blank, negative_stock, dashboard_totals,
    feature_wish, feature_wish,
    hardware_not_arrived, wrong_item, printer_damaged,
    delete_account, data_export_request, remove_former_employee,
    slow_reports, pos_lag,
    api_401, webhooks_not_firing, shopify_sync, rate_limit,
    add_seats, transfer_owner, plan_change,
)

# Sentences a customer adds to say how pressing it is; the triage label follows them.
URGENCY = {
    "urgent": ("URGENT: ", "This is urgent, we cannot take payments right now. ",
               "Our store is basically down. ", "Please treat as emergency!! "),
    "high": ("This is blocking our team today. ", "Need this fixed asap please. ",
             "Customers are already complaining. "),
    "low": ("No rush on this. ", "Whenever you get a chance. ", "Not urgent, just curious. "),
    "normal": ("", ""),
}

GREETINGS = ("Hi,\n\n", "Hello,\n\n", "Hi Tallybird team,\n\n", "hey\n", "Good morning,\n\n",
             "", "Dear support,\n\n", "Hi there!\n\n")
CONTEXT = ("We're a small bakery with two shops.", "I've been a customer since 2021.",
           "This worked fine last week.", "We run a bike repair shop.",
           "I'm not very technical, sorry.", "Our bookkeeper noticed this first.",
           "We sell mostly online and at weekend markets.", "")
SIGNOFFS = ("\n\nThanks,\n{name}", "\n\nBest regards,\n{name}\n{company}", "\n\n{first}",
            "\n\nthx", "\n\nCheers, {first}", "\n\nKind regards,\n{name}\n{company}\n{phone}",
            "\n\n--\n{name} | {company}\nTel. {phone} | {email}", "")
# Longer tickets: paragraphs some customers add after the problem itself.
DETAILS = (
    "What I already tried:\n- logged out and back in\n- cleared the browser cache\n- "
    "another computer, same result",
    "Some background: we have two registers and a tablet in the back office, all on the "
    "latest version as far as I can tell. Nothing changed in our setup recently, except "
    "that our internet provider replaced the router last month.",
    "I called your phone line earlier but the wait was 40 minutes and I had to serve "
    "customers, so I'm writing instead.",
    "Screenshot attached. The rest of the app works normally, it's only this part.",
    "This is costing us time every day. My colleague spent the whole morning on it and we "
    "still don't know what's going on. We like Tallybird a lot but this needs to work.",
    "Our accountant needs this for the quarterly filing, which is due at the end of the "
    "month.",
)
FOLLOW_UPS = (  # (agent, customer): a holding answer, then the customer chasing
    ("We're still looking into it and will update you as soon as we know more.",
     "Any update on this?"),
    ("Sorry for the wait, I've escalated this to the team that owns it.",
     "Hello?? still waiting"),
    ("Thanks for your patience, I expect an answer from engineering today.",
     "Just checking in on this ticket. thx \U0001F64F"),
)
ADDENDA = ("Also forgot to say: this affects all of our staff.",
           "PS: it's the same on my phone.", "Sorry, one more thing: we're on the "
           "{plan} plan.", "Update: tried again this morning, same thing.")


FIRST_NAMES = ("Maria", "James", "Aisha", "Tom", "Lena", "Kenji", "Sofia", "Daniel",
               "Chloe", "Mateo", "Fatima", "Oliver", "Hannah", "Raj", "Emma", "Lucas",
               "Nora", "Ahmed", "Zoë", "Pavel", "Ines", "Grace", "Yusuf", "Mia", "Liam",
               "Elif", "Noah", "José", "Felix", "Priya", "Jonas", "Camille", "Diego",
               "Sara", "Ben", "Olga", "Hugo", "Layla", "Finn", "Rosa")
LAST_NAMES = ("Keller", "Okafor", "Nguyen", "Schmidt", "Rossi", "Tanaka", "Dubois",
              "Haddad", "Kowalski", "Jensen", "Moreau", "Silva", "Brennan", "Lindqvist",
              "Costa", "Novak", "Müller", "Ahmed", "Walsh", "Petrov", "Garcia", "Yilmaz",
              "Murphy", "Bauer", "Sato", "Oyelaran", "Virtanen", "Mendes", "Clarke",
              "Horvat")
SHOPS = ("Blue Fern Florist", "Harbor Street Books", "Kettle & Crumb Bakery",
         "Northside Bikes", "Luna Candle Co.", "Two Rivers Deli", "Pixel Toy Shop",
         "Maple Lane Pharmacy", "Copper Pot Kitchenware", "Saltwater Surf Supply",
         "Green Thumb Garden Center", "The Vinyl Corner", "Oak & Iron Hardware",
         "Petal Studio", "Brightside Optics", "Little Acorn Kids", "Urban Grind Coffee",
         "Fjord Outdoor", "Paper Crane Stationery", "Golden Hour Gallery")
MAIL_DOMAINS = ("gmail.com", "outlook.com", "yahoo.com", "icloud.com", "gmx.de",
                "hotmail.co.uk", "proton.me", "web.de")
AGENTS = ("Dana Whitfield", "Marco Ilić", "Sunita Rao", "Pieter de Vries", "Grace Lin",
          "Omar Farouk", "Jess Moreno", "Ruth Adeyemi")
