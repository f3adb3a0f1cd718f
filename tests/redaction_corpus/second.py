"""A second held-out corpus for measuring redaction, from another fake-data source.

`heldout.py` draws its values from `faker`; this one draws names, words, dates and
passwords from `mimesis` (seeded) and writes its own phrasings, in eight languages (en,
de, fr, es, it, nl, pt, pl), so that a rule tuned to one generator's lists or sentences
shows up as a gap here. National ids are made with each country's published checksum
(the corpus must plant valid ones, and hard negatives that fail the checksum); phones are
written in each country's own national and international shapes.

The phrasings were written for this file, not taken from `heldout.py` or from the
detector's word lists. Record shape as in `heldout.py`: ``{"locale", "text", "planted":
[[start, end, kind, group]], "negatives": [[start, end, label]]}``. Same seed, same
corpus: ``build(n, seed)``.
"""

from __future__ import annotations

import random
import re
import unicodedata

LANGS = ("en", "de", "fr", "es", "it", "nl", "pt", "pl")
SLOT = re.compile(r"\{([a-z_0-9]+)\}")

# Slots: pw (a password), pin (4-6 digits), otp (6 digits), dob, natid (this language's
# national id), email, obf (an obfuscated e-mail), phone (a national-format phone), name;
# negatives: order (an order number), odate (an order date), price, err (an HTTP/error
# code), badid (a digit run of an id's length that fails its checksum).
SENTENCES = {
    "en": [
        "Password: {pw}", "I've set the new password to {pw} as you asked.",
        "The PIN for the card is {pin}.", "Your one-time code {otp} did not work.",
        "Date of birth: {dob}.", "I was born on {dob}, please check the record.",
        "My SSN {natid} is on file.", "Send it to {email} please.",
        "Write to me at {obf}.", "Best number is {phone}.", "This is {name} from accounts.",
        "I forgot my password again and the reset link has expired.",
        "Order {order} was placed on {odate} and charged {price}.",
        "The page shows error code {err} after login.", "Reference {badid} is on the label.",
    ],
    "de": [
        "Kennwort: {pw}", "Ich habe mein Passwort auf {pw} geändert.", "Die PIN lautet {pin}.",
        "Der Bestätigungscode {otp} kommt nicht an.", "Ich bin am {dob} geboren.",
        "Geburtsdatum: {dob}", "Meine Steuer-ID ist {natid}.", "Konto: {email}",
        "Mail bitte an {obf}.", "Tagsüber unter {phone} erreichbar.",
        "Mit freundlichen Grüßen, {name}",
        "Der Link zum Zurücksetzen des Passworts funktioniert nicht.",
        "Bestellung {order} vom {odate} über {price}.", "Es kommt Fehlercode {err}.",
        "Kundennummer {badid} steht auf der Rechnung.",
    ],
    "fr": [
        "Mot de passe : {pw}", "J'ai remplacé mon mot de passe par {pw} hier soir.",
        "Le code PIN est {pin}.", "Le code de vérification {otp} est refusé.",
        "Je suis née le {dob} à Lyon.", "Date de naissance : {dob}",
        "Mon numéro national est le {natid}.", "Mon adresse : {email}",
        "Écrivez-moi à {obf}.", "Vous pouvez m'appeler au {phone}.",
        "Bien à vous, {name}", "J'ai oublié mon mot de passe et le lien ne marche pas.",
        "Commande {order} passée le {odate}, montant {price}.", "Erreur {err} sur la page.",
        "Numéro client {badid}.",
    ],
    "es": [
        "Clave: {pw}", "He cambiado la contraseña a {pw} esta mañana.",
        "El PIN es {pin}.", "No me llega el código de verificación {otp}.",
        "Nacida el {dob} en Sevilla.", "Fecha de nacimiento: {dob}", "Mi DNI es {natid}.",
        "Cuenta: {email}", "Escríbeme a {obf}.", "Mi móvil es el {phone}.",
        "Un saludo, {name}", "Olvidé mi contraseña y el enlace para restablecerla caducó.",
        "El pedido {order} del {odate} costó {price}.", "Sale el error {err} al pagar.",
        "Número de cliente {badid}.",
    ],
    "it": [
        "Password: {pw}", "Ho cambiato la password in {pw} ieri.", "Il PIN è {pin}.",
        "Il codice OTP {otp} risulta scaduto.", "Data di nascita: {dob}",
        "Sono nata il {dob}.", "Il mio personnummer svedese è {natid}.",
        "Account: {email}", "Scrivetemi a {obf}.", "Potete chiamarmi al {phone}.",
        "Cordiali saluti, {name}", "Ho dimenticato la password e il link di reset non va.",
        "L'ordine {order} del {odate} era di {price}.", "Compare l'errore {err}.",
        "Codice cliente {badid}.",
    ],
    "nl": [
        "Wachtwoord: {pw}", "Ik heb mijn wachtwoord veranderd in {pw}.",
        "De pincode is {pin}.", "De verificatiecode {otp} werkt niet.",
        "Geboortedatum: {dob}", "Ik ben geboren op {dob}.", "Mijn BSN is {natid}.",
        "Account: {email}", "Mail naar {obf}.", "Bel me op {phone}.",
        "Met vriendelijke groet, {name}",
        "Ik ben mijn wachtwoord vergeten en de resetlink is verlopen.",
        "Bestelling {order} van {odate} kostte {price}.", "Ik krijg foutcode {err}.",
        "Klantnummer {badid}.",
    ],
    "pt": [
        "Senha: {pw}", "Mudei a senha para {pw} ontem.", "O PIN é {pin}.",
        "O código de verificação {otp} não chegou.", "Data de nascimento: {dob}",
        "Nasci em {dob}.", "O meu NIF é {natid}.", "Conta: {email}",
        "Escreva para {obf}.", "O meu telemóvel é {phone}.", "Cumprimentos, {name}",
        "Esqueci-me da senha e o link de recuperação expirou.",
        "A encomenda {order} de {odate} custou {price}.", "Aparece o erro {err}.",
        "Número de cliente {badid}.",
    ],
    "pl": [
        "Hasło: {pw}", "Zmieniłam hasło na {pw} wczoraj.", "Mój PIN to {pin}.",
        "Kod weryfikacyjny {otp} nie działa.", "Data urodzenia: {dob}",
        "Urodziłem się {dob}.", "Mój PESEL to {natid}.", "Konto: {email}",
        "Proszę pisać na {obf}.", "Mój numer telefonu to {phone}.", "Pozdrawiam, {name}",
        "Zapomniałem hasła, a link do resetu wygasł.",
        "Zamówienie {order} z dnia {odate} kosztowało {price}.", "Pojawia się błąd {err}.",
        "Numer klienta {badid}.",
    ],
}
# Sentences with no slot are hard negatives as a whole (nothing in them may be redacted).
DATE_FORMATS = {"en": ("%m/%d/%Y", "%d/%m/%Y"), "de": ("%d.%m.%Y",), "fr": ("%d/%m/%Y",),
                "es": ("%d/%m/%Y", "%d-%m-%Y"), "it": ("%d/%m/%Y", "%d-%m-%Y"),
                "nl": ("%d-%m-%Y",), "pt": ("%d/%m/%Y", "%d-%m-%Y"), "pl": ("%d.%m.%Y",)}
MIMESIS_LOCALE = {"en": "EN", "de": "DE", "fr": "FR", "es": "ES", "it": "IT", "nl": "NL",
                  "pt": "PT", "pl": "PL"}
DOMAINS = ("gmail.com", "yahoo.es", "web.de", "libero.it", "outlook.com", "wp.pl", "sapo.pt",
           "orange.fr", "ziggo.nl", "hotmail.com")


def _ascii(s: str) -> str:
    return unicodedata.normalize("NFKD", s).encode("ascii", "ignore").decode().lower()


def _digits(r: random.Random, n: int) -> str:
    return "".join(r.choice("0123456789") for _ in range(n))


# --- national ids, from their published checksums --------------------------------------

def dni(r: random.Random) -> str:
    n = r.randrange(10_000_000, 100_000_000)
    return f"{n}{'TRWAGMYFPDXBNJZSQVHLCKE'[n % 23]}"


def nie(r: random.Random) -> str:
    lead, n = r.randrange(3), r.randrange(10_000_000)
    return f"{'XYZ'[lead]}{n:07d}{'TRWAGMYFPDXBNJZSQVHLCKE'[int(f'{lead}{n:07d}') % 23]}"


def pesel(r: random.Random, birth) -> str:
    month = birth.month + (20 if birth.year >= 2000 else 0)
    body = f"{birth.year % 100:02d}{month:02d}{birth.day:02d}{_digits(r, 4)}"
    total = sum(int(c) * w for c, w in zip(body, (1, 3, 7, 9, 1, 3, 7, 9, 1, 3)))
    return body + str((10 - total % 10) % 10)


def nif_pt(r: random.Random) -> str:
    body = r.choice("123") + _digits(r, 7)
    rest = sum(int(c) * w for c, w in zip(body, range(9, 1, -1))) % 11
    return body + str(0 if rest < 2 else 11 - rest)


def be_number(r: random.Random, birth) -> str:
    body = f"{birth.year % 100:02d}{birth.month:02d}{birth.day:02d}{r.randrange(1, 998):03d}"
    base = int(("2" if birth.year >= 2000 else "") + body)
    check = 97 - base % 97
    return f"{body[:2]}.{body[2:4]}.{body[4:6]}-{body[6:]}.{check:02d}"


def personnummer(r: random.Random, birth) -> str:
    body = f"{birth.year % 100:02d}{birth.month:02d}{birth.day:02d}{_digits(r, 3)}"
    total = 0
    for i, c in enumerate(body):
        d = int(c) * (2 if i % 2 == 0 else 1)
        total += d - 9 if d > 9 else d
    return f"{body[:6]}-{body[6:]}{(10 - total % 10) % 10}"


def bsn(r: random.Random) -> str:
    while True:
        body = _digits(r, 8)
        total = sum(int(c) * w for c, w in zip(body, range(9, 1, -1)))
        if total % 11 < 10 and body[0] != "0":
            return body + str(total % 11)


def steuer_id(r: random.Random) -> str:
    while True:
        body = str(r.randrange(1, 10)) + _digits(r, 9)
        if max(body.count(c) for c in body) in (2, 3):  # one digit twice or thrice (the law)
            break
    product = 10
    for c in body:
        total = (int(c) + product) % 10 or 10
        product = total * 2 % 11
    return body + str((11 - product) % 10)


def ssn(r: random.Random) -> str:
    return f"{r.randrange(1, 665):03d}-{r.randrange(1, 100):02d}-{r.randrange(1, 10000):04d}"


# --- phones, in each country's own shapes ----------------------------------------------

def phone(r: random.Random, lang: str) -> str:
    d = _digits
    return r.choice({
        "en": [f"({r.randrange(201, 990)}) {r.randrange(201, 999)}-{d(r, 4)}",
               f"+1 {r.randrange(201, 990)} {r.randrange(201, 999)} {d(r, 4)}",
               f"07{r.randrange(400, 990)} {d(r, 6)}"],
        "de": [f"030 / {r.randrange(2000, 9999)} {d(r, 4)}", f"0{r.choice(['151', '160', '176'])} "
               f"{d(r, 8)}", f"+49 {r.choice(['30', '89', '40'])} {r.randrange(2000, 9999)} {d(r, 4)}",
               f"089/{r.randrange(2000000, 9999999)}"],
        "fr": [f"0{r.choice('67')} {d(r, 2)} {d(r, 2)} {d(r, 2)} {d(r, 2)}",
               f"+33 {r.choice('67')} {d(r, 2)} {d(r, 2)} {d(r, 2)} {d(r, 2)}",
               f"01.{d(r, 2)}.{d(r, 2)}.{d(r, 2)}.{d(r, 2)}"],
        "es": [f"6{d(r, 2)} {d(r, 2)} {d(r, 2)} {d(r, 2)}", f"+34 6{d(r, 2)} {d(r, 3)} {d(r, 3)}",
               f"9{r.choice('1345')}{d(r, 1)} {d(r, 3)} {d(r, 3)}", f"6{d(r, 8)}"],
        "it": [f"3{r.choice(['47', '33', '28', '39'])} {d(r, 3)} {d(r, 4)}",
               f"+39 3{r.choice(['47', '33'])} {d(r, 7)}", f"06 {d(r, 4)} {d(r, 4)}"],
        "nl": [f"06-{r.randrange(10000000, 99999999)}", f"06 {d(r, 2)} {d(r, 2)} {d(r, 2)} {d(r, 2)}",
               f"+31 6 {d(r, 4)} {d(r, 4)}", f"020 {r.randrange(200, 999)} {d(r, 4)}"],
        "pt": [f"9{r.choice('1236')}{d(r, 1)} {d(r, 3)} {d(r, 3)}", f"+351 9{r.choice('1236')}{d(r, 7)}",
               f"21 {r.randrange(200, 999)} {d(r, 4)}"],
        "pl": [f"{r.choice('5678')}{d(r, 2)} {d(r, 3)} {d(r, 3)}",
               f"+48 {r.choice('5678')}{d(r, 2)} {d(r, 3)} {d(r, 3)}",
               f"{r.choice('5678')}{d(r, 2)}-{d(r, 3)}-{d(r, 3)}"],
    }[lang])


class _Gen:
    def __init__(self, seed: int):
        from mimesis import Datetime, Person, Text
        from mimesis.locales import Locale

        self.r = random.Random(seed)
        self.person, self.when, self.text = {}, {}, {}
        for i, lang in enumerate(LANGS):
            loc = getattr(Locale, MIMESIS_LOCALE[lang])
            self.person[lang] = Person(loc, seed=seed * 10 + i)
            self.when[lang] = Datetime(loc, seed=seed * 10 + i)
            self.text[lang] = Text(loc, seed=seed * 10 + i)

    def date(self, lang: str, first: int, last: int) -> str:
        return self.when[lang].date(first, last).strftime(self.r.choice(DATE_FORMATS[lang]))

    def password(self, lang: str) -> str:
        r = self.r
        if r.random() < 0.5:
            return self.person[lang].password(length=r.randint(8, 14))
        word = _ascii(self.text[lang].word() if r.random() < 0.5 else self.person[lang].first_name())
        return word.capitalize() + str(r.randrange(1970, 2026)) + r.choice("*#!$.?")

    def natid(self, lang: str) -> str:
        r, birth = self.r, self.when[lang].date(1940, 2006)
        return {"en": lambda: ssn(r), "de": lambda: steuer_id(r),
                "fr": lambda: be_number(r, birth),
                "es": lambda: r.choice([dni(r), nie(r)]), "it": lambda: personnummer(r, birth),
                "nl": lambda: bsn(r), "pt": lambda: nif_pt(r), "pl": lambda: pesel(r, birth)}[lang]()

    def email(self, lang: str) -> tuple[str, str]:
        p, r = self.person[lang], self.r
        first, last = (re.sub(r"[^a-z0-9]", "", _ascii(x)) for x in (p.first_name(), p.last_name()))
        local = r.choice([f"{first}.{last}", f"{first[0]}.{last}", f"{first}{r.randrange(100)}"])
        domain = r.choice(DOMAINS)
        name, tld = domain.rsplit(".", 1)
        obf = r.choice([f"{local.replace('.', ' dot ')} at {name} dot {tld}",
                        f"{local} [at] {name} [dot] {tld}", f"{local}(at){domain}",
                        f"{local} (at) {name} (dot) {tld}", f"{local} AT {domain}"])
        return f"{local}@{domain}", obf

    def fill(self, lang: str, slot: str) -> tuple[str, str | None]:
        r, p = self.r, self.person[lang]
        if slot == "pw":
            return self.password(lang), "PASSWORD"
        if slot == "pin":
            return _digits(r, r.choice([4, 4, 6])), "PASSWORD"
        if slot == "otp":
            return _digits(r, 6), "PASSWORD"
        if slot == "dob":
            return self.date(lang, 1935, 2006), "DOB"
        if slot == "natid":
            return self.natid(lang), "NATIONAL_ID"
        if slot in ("email", "obf"):
            plain, obf = self.email(lang)
            return (plain if slot == "email" else obf), "EMAIL"
        if slot == "phone":
            return phone(r, lang), "PHONE"
        if slot == "name":
            return f"{p.first_name()} {p.last_name()}", "PERSON"
        if slot == "order":
            return str(r.randrange(10**6, 10**10)), None
        if slot == "odate":
            return self.date(lang, 2022, 2026), None
        if slot == "price":
            return r.choice(["€", "$", "zł ", "£"]) + f"{r.randrange(5, 3000)},{r.randrange(100):02d}", None
        if slot == "err":
            return str(r.choice([400, 401, 403, 404, 500, 502, 503])), None
        if slot == "badid":
            return _digits(r, r.choice([8, 9, 11])), None
        raise KeyError(slot)


def _ticket(g: _Gen, lang: str) -> dict:
    chosen = g.r.sample(SENTENCES[lang], g.r.randint(4, 7))
    text: list[str] = []
    planted: list[list] = []
    negatives: list[list] = []
    pos = 0
    for i, sentence in enumerate(chosen):
        if i:
            text.append(" ")
            pos += 1
        if not SLOT.search(sentence):
            negatives.append([pos, pos + len(sentence), "sentence"])
        last = 0
        for m in SLOT.finditer(sentence):
            text.append(sentence[last:m.start()])
            pos += m.start() - last
            last = m.end()
            value, kind = g.fill(lang, m.group(1))
            if kind:
                planted.append([pos, pos + len(value), kind, ""])
            else:
                negatives.append([pos, pos + len(value), m.group(1)])
            text.append(value)
            pos += len(value)
        text.append(sentence[last:])
        pos += len(sentence) - last
    return {"locale": lang, "text": "".join(text), "planted": planted, "negatives": negatives}


def build(n: int = 2000, seed: int = 46) -> list[dict]:
    g = _Gen(seed)
    return [_ticket(g, LANGS[i % len(LANGS)]) for i in range(n)]
