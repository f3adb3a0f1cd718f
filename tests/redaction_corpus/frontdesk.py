"""An eighth corpus, written by hand for session 53 by someone who never read the detector's
rules, its word lists or their tests, and scored once.

Why: every corpus before this one has been scored while rules were written, so each has
taught the rules something. This one stands apart in its sources as well as its values: the
text is what a front desk pastes into a ticket rather than what a customer types — CRM
call notes, helpdesk macros sent with their merge fields filled, community forum posts,
ticket threads that quote earlier replies, voicemail transcripts, escalation e-mails with
signature blocks, and order-system exports pasted as key/value rows — in eight languages
(en, de, fr, es, it, nl, pt, pl). Every name part, street, password and phrase was written
for this file; no generator is used. Names come from sixteen origins (Yoruba and Igbo,
Vietnamese, Arabic, Indian, Cantonese, Greek, Turkish, Polish, Icelandic and Nordic,
Spanish multi-part, Japanese, Persian, Kenyan, Ukrainian, French hyphenated, German
double-barrelled), written in full, lower case, upper case, surname first, with a title,
as an initial, as a given name alone, and next to capitalised product, team, place and
street words. IBANs, cards and national ids carry valid check digits.

Markup as in `fresh.py`: ``[[KIND|value]]`` plants a value, ``{{label|value}}`` a hard
negative that must be kept whole. Record shape as in `heldout.py`: ``{"locale", "text",
"planted": [[start, end, kind, group]], "negatives": [[start, end, label]]}``, plus
``origin`` (where the names of the record come from) and ``country`` (the source style,
so that score.py prints PERSON recall per style). ``group`` ties one value written twice
(a phone in two shapes) together. Same seed, same corpus: ``build(n, seed)``.
"""

from __future__ import annotations

import random
import re
import unicodedata

_MARK = re.compile(r"\[\[([A-Z_]+)\|(.+?)\]\]|\{\{([a-z_]+)\|(.+?)\}\}", re.S)
_SLOT = re.compile(r"⟨(\w+)⟩")

LANGS = ("en", "de", "fr", "es", "it", "nl", "pt", "pl")

# origin -> (given names, family names, family name written first?)
NAMES: dict[str, tuple[list[str], list[str], bool]] = {
    "yoruba_igbo": (["Oluwaseun", "Chidinma", "Babatunde", "Ngozi", "Emeka", "Folake", "Tobiloba",
                     "Ifeoma", "Kelechi", "Adaora", "Olamide Grace"],
                    ["Adeyemi", "Okonkwo", "Balogun", "Eze", "Oyelaran", "Nwachukwu", "Fashola",
                     "Adesanya", "Ogunleye", "Obi-Nnadi"], False),
    "vietnamese": (["Thị Mai", "Văn Hùng", "Minh Châu", "Quang Huy", "Thanh Tâm", "Ngọc Lan",
                    "Duc Anh", "Bao Ngoc", "Thu Trang"],
                   ["Nguyễn", "Trần", "Phạm", "Lê", "Võ", "Đặng", "Bui", "Huynh", "Do"], True),
    "arabic": (["Youssef", "Mariam", "Khalid", "Nour", "Rania", "Omar", "Layla", "Tariq", "Hiba",
                "Mohamed Amine"],
               ["El Amrani", "Al-Haddad", "Benali", "Mansour", "Bouzid", "Al Jaber", "Saleh",
                "Kassem", "Ait Oufella", "Ben Salah"], False),
    "indian": (["Priyanka", "Arjun", "Sneha", "Vikram", "Lakshmi", "Rohan", "Ananya", "Karthik",
                "Deepa", "Siddharth"],
               ["Venkataraman", "Iyer", "Chatterjee", "Deshpande", "Kulkarni", "Bhattacharya",
                "Reddy", "Menon", "Agarwal", "Subramanian"], False),
    "cantonese": (["Tai Man", "Siu Ling", "Ka Yan", "Chi Keung", "Wing Sze", "Man Kit",
                   "Kelvin Ka Ho", "Winnie Hoi Yee"],
                  ["Chan", "Wong", "Cheung", "Leung", "Lau", "Ho", "Tsang", "Yeung"], True),
    "greek": (["Georgios", "Eleni", "Dimitris", "Katerina", "Nikos", "Sofia", "Panagiotis",
               "Ioanna", "Vasiliki"],
              ["Papadopoulos", "Konstantinidou", "Karagiannis", "Alexiou", "Theodorakis",
               "Vlachou", "Georgiou", "Papageorgiou", "Tsakalidis"], False),
    "turkish": (["Mehmet", "Ayşe", "Emre", "Zeynep", "Burak", "Elif", "Hakan", "Gülşen",
                 "Oğuzhan"],
                ["Yılmaz", "Kaya", "Çelik", "Şahin", "Öztürk", "Aydın", "Doğan", "Arslan",
                 "Korkmaz"], False),
    "polish": (["Małgorzata", "Krzysztof", "Agnieszka", "Paweł", "Bożena", "Jędrzej", "Łukasz",
                "Grażyna", "Wojciech"],
               ["Wiśniewska", "Szczepański", "Wróblewska", "Zieliński", "Kwiatkowska", "Nowicki",
                "Dąbrowski", "Brzezińska", "Chmielewski"], False),
    "nordic": (["Sigríður", "Gunnar", "Ingrid", "Lars-Erik", "Åsa", "Bjørn", "Eyrún", "Halvard",
                "Solveig"],
               ["Jónsdóttir", "Ólafsson", "Haugland", "Nyström", "Lindqvist", "Sæther",
                "Guðmundsdóttir", "Bergqvist", "Kristiansen"], False),
    "spanish_multi": (["María José", "Juan Pablo", "Ana Lucía", "José Ignacio", "Luz Marina",
                       "Francisco Javier", "Inmaculada"],
                      ["Fernández de la Cruz", "Restrepo Ospina", "Villanueva Ibarra",
                       "Goñi Echeverría", "Martín del Río", "Quispe Mamani", "Ortega y Gasset"],
                      False),
    "japanese": (["Haruto", "Yui", "Ren", "Aoi", "Daisuke", "Misaki", "Kenta", "Sakura"],
                 ["Takahashi", "Sato", "Watanabe", "Kobayashi", "Yamamoto", "Inoue", "Fujiwara",
                  "Matsumoto"], True),
    "persian": (["Farhad", "Shirin", "Kian", "Parisa", "Dariush", "Nasrin", "Behnaz", "Arash"],
                ["Rezaei", "Tehrani", "Moradi", "Ghasemi", "Karimi", "Jafari", "Hosseinzadeh",
                 "Mirzaei"], False),
    "kenyan": (["Wanjiru", "Otieno", "Achieng", "Mwangi", "Zawadi", "Kiprono", "Nyambura",
                "Baraka"],
               ["Kamau", "Odhiambo", "Atieno", "Njoroge", "Mwakilema", "Chebet", "Wekesa",
                "Kiplagat"], False),
    "ukrainian": (["Oleksandr", "Nataliya", "Dmytro", "Iryna", "Yuliia", "Bohdan", "Oksana",
                   "Taras"],
                  ["Kovalenko", "Shevchuk", "Bondarenko", "Tkachenko", "Melnyk", "Hrytsenko",
                   "Kravchuk", "Lysenko"], False),
    "french_hyphen": (["Jean-Baptiste", "Marie-Claire", "Anne-Sophie", "Pierre-Yves",
                       "Marie-Hélène", "Jean-Luc", "Gwenaëlle"],
                      ["Lefèvre", "Dubois-Laurent", "de La Tour", "Le Goff", "Moreau-Vasseur",
                       "Kerbrat", "Delacroix"], False),
    "german_double": (["Hans-Jürgen", "Anneliese", "Karl-Heinz", "Friederike", "Jörg", "Ute",
                       "Wiebke"],
                      ["Müller-Lüdenscheidt", "Schäfer-Hoffmann", "von Bredow", "Oberhäuser",
                       "Zimmermann", "Brandstätter", "Graf-Kessler"], False),
}

TITLES = {"en": ["Mr", "Ms", "Mrs", "Dr"], "de": ["Herr", "Frau", "Dr."], "fr": ["M.", "Mme"],
          "es": ["Sr.", "Sra.", "D.ª"], "it": ["Sig.", "Sig.ra", "dott."],
          "nl": ["dhr.", "mevr."], "pt": ["Sr.", "Sra.", "Dra."], "pl": ["Pan", "Pani"]}

MONTHS = {
    "en": "January February March April May June July August September October November December",
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember",
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre",
    "nl": "januari februari maart april mei juni juli augustus september oktober november december",
    "pt": "janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro",
    "pl": "stycznia lutego marca kwietnia maja czerwca lipca sierpnia września października listopada grudnia",
}

STREETS = {
    "en": ["Holloway Crescent", "Bramblewood Drive", "Saint Aidan's Road", "Quarry Bank Lane",
           "Elmhurst Avenue", "Cobbler's Row"],
    "de": ["Kastanienallee", "Am Kiesgrund", "Lindenstraße", "Hohe Bleichen", "Zur Alten Mühle",
           "Friedrich-Ebert-Ring"],
    "fr": ["rue des Tanneurs", "avenue Jean-Jaurès", "impasse du Moulin", "boulevard de la Liberté",
           "chemin des Vignes", "quai Saint-Vincent"],
    "es": ["Calle de Zurbano", "Avenida del Puerto", "Calle Mayor", "Paseo de la Alameda",
           "Travesía de San Mateo", "Ronda de Levante"],
    "it": ["Via dei Mille", "Corso Vittorio Emanuele II", "Viale dei Platani", "Vicolo del Pozzo",
           "Piazza Garibaldi", "Via della Spiga"],
    "nl": ["Lange Nieuwstraat", "Kerkpad", "Prinses Irenelaan", "Oudegracht", "Molenweg",
           "Van Speijkstraat"],
    "pt": ["Rua da Boavista", "Avenida da República", "Travessa do Carmo", "Rua de Cedofeita",
           "Largo do Rato", "Rua Augusta"],
    "pl": ["ul. Piotrkowska", "ul. Świętokrzyska", "al. Jerozolimskie", "ul. Długa",
           "ul. Kościuszki", "os. Tysiąclecia"],
}
CITIES = {"en": ["Leeds", "Bristol", "Galway", "Columbus", "Norwich"],
          "de": ["Darmstadt", "Bielefeld", "Leipzig", "Freiburg im Breisgau"],
          "fr": ["Lyon", "Rennes", "Toulouse", "Lille"], "es": ["Madrid", "Valladolid", "Cádiz"],
          "it": ["Torino", "Bologna", "Bari"], "nl": ["Utrecht", "Zwolle", "Eindhoven"],
          "pt": ["Porto", "Coimbra", "Braga"], "pl": ["Łódź", "Gdańsk", "Poznań"]}

PW_WORDS = {"en": ["Pumpkin", "harbour", "Sunday", "greenTea"], "de": ["Sommer", "Katze", "Bahnhof"],
            "fr": ["soleil", "Chaton", "Bordeaux"], "es": ["Verano", "gatito", "Paella"],
            "it": ["Ciao", "pizzaiolo", "Estate"], "nl": ["Fietsen", "hondje", "Zomer"],
            "pt": ["Saudade", "gatinho", "Praia"], "pl": ["Kotek", "wiosna", "Zamek"]}

# hard negatives by label, per language where the words differ
PRODUCTS = ["Lumen Desk", "Harbor Pay", "Microsoft Teams", "SAP Concur", "Adobe Acrobat Pro",
            "Google Workspace", "Salesforce Service Cloud", "Shopify Plus", "Nimbus Sync",
            "Orchid CRM", "Atlas Router X2", "Zoom Rooms", "Kestrel Scanner", "Polaris POS"]
TEAMS = {"en": ["Customer Success", "Tier 2 Billing", "Team Phoenix", "Trust and Safety"],
         "de": ["Kundenservice Nord", "Team Abrechnung", "Technischer Support"],
         "fr": ["Équipe Facturation", "Service Client Grands Comptes", "Support Niveau 2"],
         "es": ["Soporte Nivel 2", "Atención al Cliente", "Equipo Cobros"],
         "it": ["Assistenza Clienti", "Ufficio Resi", "Team Fatturazione"],
         "nl": ["Klantenservice", "Team Facturatie", "Tweedelijns Support"],
         "pt": ["Apoio ao Cliente", "Equipa de Faturação", "Suporte Técnico"],
         "pl": ["Dział Reklamacji", "Obsługa Klienta", "Zespół Rozliczeń"]}
JOBS = {"en": ["Senior Account Manager", "Head of Customer Operations", "Escalations Lead"],
        "de": ["Teamleiterin Kundenservice", "Leiter Vertrieb", "Key Account Managerin"],
        "fr": ["Responsable Relation Client", "Chargée de clientèle", "Directeur des Opérations"],
        "es": ["Jefa de Atención al Cliente", "Gestor de Cuentas", "Director Comercial"],
        "it": ["Responsabile Assistenza", "Capo Reparto Logistica", "Direttrice Vendite"],
        "nl": ["Teamleider Klantenservice", "Accountmanager", "Hoofd Operations"],
        "pt": ["Gestora de Conta", "Diretor de Operações", "Coordenadora de Suporte"],
        "pl": ["Kierownik Działu Obsługi", "Specjalistka ds. Rozliczeń", "Dyrektor Sprzedaży"]}
GREETS = {"en": ["Hi team", "Dear Support Team", "Hello all"],
          "de": ["Hallo zusammen", "Liebes Support-Team", "Moin"],
          "fr": ["Bonjour à tous", "Chère équipe", "Bonsoir"],
          "es": ["Hola equipo", "Buenos días", "Estimado equipo"],
          "it": ["Buongiorno a tutti", "Gentile Assistenza", "Ciao ragazzi"],
          "nl": ["Beste collega's", "Hoi allemaal", "Goedemiddag"],
          "pt": ["Olá equipa", "Bom dia a todos", "Prezados"],
          "pl": ["Dzień dobry", "Cześć wszystkim", "Szanowni Państwo"]}
PLACES = {"en": ["Manchester", "the Canary Wharf office", "Dublin Airport", "Kings Cross",
                 "the Oxford Street store"],
          "de": ["Hamburg", "Standort München", "Frankfurt Flughafen", "Filiale Hohe Bleichen"],
          "fr": ["Marseille", "l'agence de Nantes", "La Défense", "la boutique rue de Rivoli"],
          "es": ["Sevilla", "la tienda de Gran Vía", "Bilbao", "la tienda de Calle Mayor"],
          "it": ["Napoli", "la sede di Verona", "Firenze", "il negozio di Via Roma"],
          "nl": ["Rotterdam", "vestiging Den Haag", "Schiphol", "de winkel op de Kalverstraat"],
          "pt": ["Lisboa", "a loja do Chiado", "Faro", "a loja da Rua Augusta"],
          "pl": ["Kraków", "oddział Wrocław", "Katowice", "sklep przy ul. Floriańskiej"]}
NOUNS = {"en": ["Invoice Correction Form", "Premium Plan", "Return Merchandise Authorization"],
         "de": ["Rechnungskorrektur", "Lieferschein", "Kündigungsbestätigung", "Gutschrift"],
         "fr": ["Bon de Commande", "Avoir", "Formulaire de Rétractation"],
         "es": ["Factura Rectificativa", "Albarán", "Hoja de Reclamaciones"],
         "it": ["Nota di Credito", "Documento di Trasporto", "Modulo Reso"],
         "nl": ["Creditnota", "Pakbon", "Opzegbevestiging"],
         "pt": ["Nota de Crédito", "Guia de Remessa", "Livro de Reclamações"],
         "pl": ["Faktura Korygująca", "List Przewozowy", "Formularz Zwrotu"]}
DAYS = {"en": ["Monday", "Thursday", "Easter Monday"], "de": ["Mittwoch", "Pfingstmontag"],
        "fr": ["Mardi", "la Toussaint"], "es": ["Viernes Santo", "Lunes"], "it": ["Ferragosto", "Giovedì"],
        "nl": ["Koningsdag", "Dinsdag"], "pt": ["Sexta-feira", "Carnaval"], "pl": ["Wigilia", "Środa"]}
CODES = ["UserProfileService", "getInvoicePdf()", "ERR_CONNECTION_RESET", "NullPointerException",
         "billing_address_line2", "customer.phone_number", "PasswordResetController",
         "SMTP 550 5.1.1", "OAuthTokenExpired", "ship_to_name", "ContactEmailValidator"]
COMPANIES = ["Brightwell Logistics GmbH", "Talavera Foods S.L.", "Noordkust B.V.",
             "Ferrovia Tessile S.p.A.", "Maison Crépin SARL", "Vistula Trade Sp. z o.o.",
             "Atlântico Seguros S.A.", "Pinecrest Dental LLC"]
MAIL_HOSTS = {"en": ["outlook.com", "btinternet.com", "icloud.com"], "de": ["web.de", "gmx.de", "t-online.de"],
              "fr": ["orange.fr", "free.fr", "laposte.net"], "es": ["telefonica.net", "hotmail.es"],
              "it": ["libero.it", "tiscali.it"], "nl": ["ziggo.nl", "kpnmail.nl"],
              "pt": ["sapo.pt", "netcabo.pt"], "pl": ["wp.pl", "onet.pl", "o2.pl"]}

_FOLD = str.maketrans({"ł": "l", "ø": "o", "đ": "d", "ð": "d", "þ": "th", "ß": "ss", "ı": "i", "æ": "ae"})


def _ascii(text: str) -> str:
    text = unicodedata.normalize("NFKD", text.lower().translate(_FOLD))
    return "".join(c for c in text if c.isascii() and (c.isalnum() or c in "-."))


def _digits(r: random.Random, n: int) -> str:
    return "".join(r.choice("0123456789") for _ in range(n))


def _luhn(body: str) -> str:
    total = 0
    for i, d in enumerate(reversed(body)):
        v = int(d) * (2 if i % 2 == 0 else 1)
        total += v - 9 if v > 9 else v
    return body + str((10 - total % 10) % 10)


def _iban(country: str, bban: str) -> str:
    moved = bban + country + "00"
    num = int("".join(str(int(c, 36)) for c in moved))
    return f"{country}{98 - num % 97:02d}{bban}"


class _Person:
    """One person of an origin, and the ways a ticket writes them."""

    def __init__(self, r: random.Random, origin: str):
        given, family, family_first = NAMES[origin]
        self.given, self.family, self.family_first = r.choice(given), r.choice(family), family_first
        self.r = r

    def full(self) -> str:
        return f"{self.family} {self.given}" if self.family_first else f"{self.given} {self.family}"

    def styled(self) -> str:
        """The full name in a style people write it in: as is, lower case, or surname first."""
        roll = self.r.random()
        if roll < 0.2:
            return self.full().lower()
        if roll < 0.3 and not self.family_first:
            return f"{self.family} {self.given}"
        return self.full()

    def initial(self) -> str:
        return f"{self.given[0]}. {self.family}"

    def email(self, host: str) -> str:
        g, f = _ascii(self.given.replace(" ", "")), _ascii(self.family.replace(" ", ""))
        shape = self.r.randrange(5)
        local = [f"{g}.{f}", f"{g[0]}{f}", f"{f}.{g}{self.r.randint(1, 99)}", f"{g}_{f[:4]}",
                 f"{g}+support"][shape]
        return f"{local}@{host}"


class _Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def phone(self, lang: str) -> tuple[str, str]:
        """(national shape, international shape) of one number."""
        r, d = self.r, lambda n: _digits(self.r, n)
        if lang == "en":
            if r.random() < 0.5:
                a, b = f"7{d(3)}", d(6)
                return f"0{a} {b}", f"+44 {a} {b}"
            a, b, c = f"{r.randint(2, 9)}{d(2)}", f"{r.randint(2, 9)}{d(2)}", d(4)
            return f"({a}) {b}-{c}", f"+1 {a}-{b}-{c}"
        if lang == "de":
            a, b = f"1{r.choice('567')}{d(1)}", d(7)
            return f"0{a} {b}", f"+49 {a} {b}"
        if lang == "fr":
            p = [f"{r.choice('67')}"] + [d(2) for _ in range(4)]
            return "0" + " ".join(p), "+33 " + " ".join(p)
        if lang == "es":
            a, b, c = f"6{d(2)}", d(3), d(3)
            return f"{a} {b} {c}", f"+34 {a} {b} {c}"
        if lang == "it":
            a, b, c = f"3{d(2)}", d(3), d(4)
            return f"{a} {b} {c}", f"+39 {a} {b} {c}"
        if lang == "nl":
            b = d(8)
            return f"06-{b}", f"+31 6 {b[:4]} {b[4:]}"
        if lang == "pt":
            a, b, c = f"9{r.choice('1236')}{d(1)}", d(3), d(3)
            return f"{a} {b} {c}", f"+351 {a} {b} {c}"
        a, b, c = f"{r.choice('5678')}{d(2)}", d(3), d(3)
        return f"{a} {b} {c}", f"+48 {a} {b} {c}"

    def address(self, lang: str) -> str:
        r = self.r
        street, city, n = r.choice(STREETS[lang]), r.choice(CITIES[lang]), r.randint(1, 240)
        if lang == "en":
            if city == "Columbus":
                return f"{n} {street}, Apt {r.randint(1, 9)}{r.choice('ABC')}, Columbus, OH 43{_digits(r, 3)}"
            if city == "Galway":
                return f"Unit {r.randint(1, 30)}, {street}, Galway H91 {r.choice('KPTX')}{_digits(r, 3)}"
            pc = f"{r.choice(['LS', 'BS', 'NR'])}{r.randint(1, 16)} {r.randint(1, 9)}{r.choice('ABDQTX')}{r.choice('JLNPUW')}"
            return f"{n} {street}, {city} {pc}"
        if lang == "de":
            return f"{street} {n}{r.choice(['', 'a', 'b'])}, {_digits(r, 5)} {city}"
        if lang == "fr":
            return f"{n}{r.choice(['', ' bis'])} {street}, {_digits(r, 5)} {city}"
        if lang == "es":
            return f"{street} {n}, {r.randint(1, 8)}º {r.choice(['izq.', 'dcha.', 'B'])}, {_digits(r, 5)} {city}"
        if lang == "it":
            return f"{street} {n}, {_digits(r, 5)} {city}"
        if lang == "nl":
            return f"{street} {n}, {r.randint(1000, 9999)} {r.choice('ABDKMPRT')}{r.choice('AEHJKLPW')} {city}"
        if lang == "pt":
            return f"{street} {n}, {r.randint(1, 6)}.º Esq., {r.randint(1000, 4999)}-{_digits(r, 3)} {city}"
        return f"{street} {n} m. {r.randint(1, 60)}, {r.randint(10, 99)}-{_digits(r, 3)} {city}"

    def dob(self, lang: str) -> str:
        r = self.r
        y, m, day = r.randint(1940, 2004), r.randint(1, 12), r.randint(1, 28)
        month = MONTHS[lang].split()[m - 1]
        shape = r.randrange(3)
        if shape == 0:
            return {"en": f"{month} {day}, {y}", "de": f"{day}. {month} {y}", "es": f"{day} de {month} de {y}",
                    "pt": f"{day} de {month} de {y}"}.get(lang, f"{day} {month} {y}")
        if shape == 1:
            sep = {"de": ".", "pl": ".", "nl": "-"}.get(lang, "/")
            return f"{m:02d}/{day:02d}/{y}" if lang == "en" else f"{day:02d}{sep}{m:02d}{sep}{y}"
        return f"{y}-{m:02d}-{day:02d}"

    def password(self, lang: str) -> str:
        r = self.r
        if r.random() < 0.35:
            return "".join(r.choice("abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789!#%&*?@$")
                           for _ in range(r.randint(10, 16)))
        word = r.choice(PW_WORDS[lang])
        return f"{word}{r.choice(['', '-', '_', '.'])}{r.randint(1, 2025)}{r.choice('!?#$%*&')}"

    def api_key(self) -> str:
        r = self.r
        low = "abcdefghijklmnopqrstuvwxyz0123456789"
        mixed = low + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        shape = r.randrange(6)
        if shape == 0:
            return "sk_live_" + "".join(r.choice(mixed) for _ in range(24))
        if shape == 1:
            return "AKIA" + "".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
        if shape == 2:
            return "AIza" + "".join(r.choice(mixed + "-_") for _ in range(35))
        if shape == 3:
            return f"xoxb-{_digits(r, 11)}-{_digits(r, 13)}-" + "".join(r.choice(mixed) for _ in range(24))
        if shape == 4:
            return "glpat-" + "".join(r.choice(mixed + "-_") for _ in range(20))
        return "".join(r.choice("0123456789abcdef") for _ in range(32))

    def github(self) -> str:
        return "ghp_" + "".join(self.r.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
                                for _ in range(36))

    def iban(self, lang: str) -> str:
        r, d = self.r, lambda n: _digits(self.r, n)
        country, bban = {
            "en": ("GB", r.choice(["NWBK", "BARC", "LOYD", "HBUK"]) + d(14)),
            "de": ("DE", d(18)), "fr": ("FR", d(23)), "es": ("ES", d(20)),
            "it": ("IT", r.choice("ABCDEFGHIJKLMNOPRSTUVWXYZ") + d(22)),
            "nl": ("NL", r.choice(["ABNA", "INGB", "RABO", "TRIO", "KNAB"]) + d(10)),
            "pt": ("PT", d(21)), "pl": ("PL", d(24)),
        }[lang]
        iban = _iban(country, bban)
        if r.random() < 0.6:
            return " ".join(iban[i:i + 4] for i in range(0, len(iban), 4))
        return iban

    def card(self) -> str:
        r = self.r
        if r.random() < 0.15:
            num = _luhn(r.choice(["34", "37"]) + _digits(r, 12))
            return f"{num[:4]} {num[4:10]} {num[10:]}"
        head = r.choice(["4", "51", "53", "55"])
        num = _luhn(head + _digits(r, 15 - len(head)))
        sep = r.choice([" ", "-", ""])
        return sep.join(num[i:i + 4] for i in range(0, 16, 4))

    def national_id(self, lang: str) -> str:
        """A national number with a valid check digit, of a country that writes the language."""
        r = self.r
        if lang == "es":
            n = r.randint(10_000_000, 99_999_999)
            return f"{n}{'TRWAGMYFPDXBNJZSQVHLCKE'[n % 23]}"
        if lang == "nl":
            while True:
                body = str(r.randint(1, 9)) + _digits(r, 7)
                last = sum(int(c) * w for c, w in zip(body, range(9, 1, -1))) % 11
                if last < 10:
                    return body + str(last)
        if lang == "pl":
            y, m, day = r.randint(50, 99), r.randint(1, 12), r.randint(1, 28)
            body = f"{y:02d}{m:02d}{day:02d}{_digits(r, 4)}"
            check = sum(int(c) * w for c, w in zip(body, (1, 3, 7, 9) * 3)) % 10
            return body + str((10 - check) % 10)
        if lang == "fr":
            body = f"{r.randint(1, 2)}{r.randint(50, 99)}{r.randint(1, 12):02d}{r.randint(1, 95):02d}{_digits(r, 6)}"
            key = 97 - int(body) % 97
            return f"{body[0]} {body[1:3]} {body[3:5]} {body[5:7]} {body[7:10]} {body[10:13]} {key:02d}"
        if lang == "pt":
            body = r.choice("125") + _digits(r, 7)
            check = 11 - sum(int(c) * w for c, w in zip(body, range(9, 1, -1))) % 11
            return body + str(0 if check >= 10 else check)
        area = r.choice([r.randint(1, 665), r.randint(667, 899)])
        return f"{area:03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"

    def negative(self, label: str, lang: str) -> str:
        r = self.r
        hexs = lambda n: "".join(r.choice("0123456789abcdef") for _ in range(n))  # noqa: E731
        if label == "order":
            return r.choice([f"#{_digits(r, 7)}", f"PO-2026-{_digits(r, 5)}", f"SO{_digits(r, 8)}",
                             f"A-{_digits(r, 6)}-{r.choice('KLMN')}"])
        if label == "ticket":
            return r.choice([f"INC{_digits(r, 7)}", f"ZD-{_digits(r, 5)}", f"OPS-{r.randint(100, 9999)}",
                             f"CASE-{_digits(r, 8)}"])
        if label == "version":
            return r.choice([f"v{r.randint(1, 9)}.{r.randint(0, 30)}.{r.randint(0, 12)}",
                             f"2026.{r.randint(1, 12)}.{r.randint(0, 9)}",
                             f"build 19045.{r.randint(1000, 5999)}", f"{r.randint(3, 17)}.{r.randint(0, 9)} LTS"])
        if label == "sha":
            return hexs(r.choice([7, 10, 12, 40]))
        if label == "digest":
            return r.choice(["sha256:" + hexs(64), f"{hexs(8)}-{hexs(4)}-4{hexs(3)}-a{hexs(3)}-{hexs(12)}"])
        if label == "product":
            return r.choice(PRODUCTS)
        if label == "code":
            return r.choice(CODES)
        if label == "company":
            return r.choice(COMPANIES)
        table = {"team": TEAMS, "job": JOBS, "greeting": GREETS, "place": PLACES, "noun": NOUNS,
                 "day": DAYS}[label]
        return r.choice(table[lang])


# (style, language, template). ⟨slot⟩ is filled when a record is built: the customer is
# ⟨name⟩ (full, in a written style), ⟨lname⟩ (lower case), ⟨first⟩, ⟨last⟩, ⟨tlast⟩ (a title
# and the surname), ⟨upper⟩ (SURNAME, GIVEN); a colleague of theirs ⟨name2⟩; the agent
# ⟨agent⟩ / ⟨afirst⟩. The other slots are values (⟨phone2⟩ is ⟨phone⟩ in its international
# shape) or hard negatives (see `_NEGATIVE_SLOTS`).
TEMPLATES: list[tuple[str, str, str]] = [
    # CRM call notes
    ("crm", "en", "CALL NOTE – inbound, 6 min\nSpoke w/ ⟨name⟩ (⟨company⟩) re: renewal of ⟨product⟩. Cust wants"
                  " invoices sent to ⟨email⟩ from now on and asked that ⟨team⟩ call back on ⟨phone⟩ before"
                  " ⟨day⟩. Logged under ⟨ticket⟩."),
    ("crm", "en", "Notes by ⟨agent⟩ ⟨team⟩, ⟨place⟩ shift: outbound to ⟨tlast⟩ re ⟨order⟩, no answer, left VM."
                  " 2nd attempt ⟨first⟩ picked up, confirmed new ship-to ⟨addr⟩."),
    ("crm", "en", "Spoke to ⟨first⟩ at ⟨company⟩ again – wants the ⟨product⟩ seats moved to ⟨name2⟩ (⟨job⟩)."
                  " New card for the renewal: ⟨card⟩, exp 09/28. DOB for ID check ⟨dob⟩."),
    ("crm", "de", "Telefonnotiz ⟨day⟩: Rückruf bei ⟨tlast⟩ wegen ⟨noun⟩ zu Auftrag ⟨order⟩. Kundin bittet um"
                  " Rückruf unter ⟨phone⟩ oder Mail an ⟨email⟩. Geburtsdatum zur Verifizierung: ⟨dob⟩."
                  " Weitergeleitet an ⟨team⟩."),
    ("crm", "fr", "Appel entrant – ⟨name⟩ de ⟨company⟩, souhaite changer l'adresse de livraison : ⟨addr⟩."
                  " Rappeler au ⟨phone⟩. Dossier transmis à ⟨team⟩ (réf. ⟨ticket⟩)."),
    ("crm", "es", "Nota de llamada: hablé con ⟨name⟩ sobre la ⟨noun⟩ del pedido ⟨order⟩. Pide el reembolso a"
                  " la cuenta ⟨iban⟩. DNI ⟨natid⟩ verificado. ⟨first⟩ prefiere WhatsApp al ⟨phone⟩."),
    ("crm", "it", "Chiamata ricevuta da ⟨tlast⟩ (⟨company⟩): ⟨product⟩ non si sincronizza dopo l'aggiornamento"
                  " a ⟨version⟩. Richiamare al ⟨phone2⟩ dopo le 15. Passato a ⟨team⟩, ⟨agent⟩."),
    ("crm", "nl", "Gespreksnotitie ⟨day⟩ – ⟨name⟩ belde over ⟨noun⟩ bij order ⟨order⟩. BSN ⟨natid⟩ opgegeven"
                  " ter verificatie (niet nodig, verwijderen!). Terugbellen op ⟨phone⟩. Behandeld door ⟨agent⟩"
                  " ⟨team⟩."),
    ("crm", "pt", "Registo de chamada: a ⟨tlast⟩ ligou de ⟨place⟩ por causa da ⟨noun⟩. Morada atualizada para"
                  " ⟨addr⟩. NIF ⟨natid⟩. Contacto: ⟨phone⟩ / ⟨email⟩."),
    ("crm", "pl", "Notatka z rozmowy: dzwonił(a) ⟨name⟩ w sprawie zamówienia ⟨order⟩ (⟨product⟩). Prosi o"
                  " kontakt pod numerem ⟨phone⟩. PESEL ⟨natid⟩ podany do weryfikacji. Przekazano do: ⟨team⟩."),
    ("crm", "de", "Rückmeldung ⟨place⟩: Kundin ⟨name⟩ ⟨product⟩ Vertrag gekündigt, ⟨noun⟩ folgt per Post an"
                  " ⟨addr⟩. Bearbeitet: ⟨agent⟩ ⟨team⟩"),
    # helpdesk macros with their merge fields filled
    ("macro", "en", "Hi ⟨first⟩,\n\nThanks for contacting ⟨product⟩ Support! Your request ⟨ticket⟩ has been"
                    " assigned to ⟨agent⟩ from ⟨team⟩. We'll reply to ⟨email⟩ within 24 hours.\n\nKind"
                    " regards,\n⟨agent⟩\n⟨job⟩"),
    ("macro", "de", "Sehr geehrte/r ⟨tlast⟩,\n\nvielen Dank für Ihre Nachricht zu Auftrag ⟨order⟩. Wir haben"
                    " die Lieferadresse auf ⟨addr⟩ geändert. Ihr vorläufiges Passwort für das Kundenportal"
                    " lautet: ⟨pw⟩\n\nMit freundlichen Grüßen\n⟨agent⟩ | ⟨team⟩"),
    ("macro", "fr", "Bonjour ⟨first⟩,\n\nNous avons bien reçu votre demande ⟨ticket⟩ concernant ⟨product⟩."
                    " Votre conseiller, ⟨agent⟩, vous contactera au ⟨phone⟩.\n\nCordialement,\n⟨team⟩"),
    ("macro", "es", "Estimado/a ⟨name⟩:\n\nLe confirmamos la devolución del pedido ⟨order⟩. El abono se"
                    " realizará en la cuenta ⟨iban⟩ en un plazo de 5 días hábiles.\n\nAtentamente,\n⟨agent⟩ –"
                    " ⟨job⟩"),
    ("macro", "it", "Gentile ⟨name⟩,\n\nla sua pratica ⟨ticket⟩ è stata presa in carico da ⟨team⟩. Per"
                    " sicurezza le chiediamo di confermare la data di nascita (⟨dob⟩) e l'indirizzo ⟨addr⟩."
                    "\n\nCordiali saluti,\n⟨agent⟩"),
    ("macro", "nl", "Beste ⟨first⟩,\n\nBedankt voor je bericht over ⟨product⟩. Je nieuwe inlogcode is ⟨pw⟩ —"
                    " wijzig deze na de eerste keer inloggen.\n\nMet vriendelijke groet,\n⟨agent⟩\n⟨team⟩"),
    ("macro", "pt", "Olá ⟨first⟩,\n\nA sua encomenda ⟨order⟩ foi enviada para ⟨addr⟩. Qualquer dúvida,"
                    " responda a este e-mail ou ligue para ⟨aphone⟩.\n\nCumprimentos,\n⟨agent⟩, ⟨team⟩"),
    ("macro", "pl", "Dzień dobry ⟨tlast⟩,\n\ndziękujemy za zgłoszenie ⟨ticket⟩. Zwrot środków nastąpi na"
                    " rachunek ⟨iban⟩.\n\nZ poważaniem\n⟨agent⟩\n⟨job⟩"),
    # community forum posts
    ("forum", "en", "Re: ⟨product⟩ ⟨version⟩ keeps logging me out\n\nQuote from ⟨lname⟩ on ⟨day⟩:\n> same"
                    " here since the update\n\n@⟨first⟩ try clearing the cache. If that doesn't work, DM"
                    " ⟨agent⟩ (moderator, ⟨team⟩). The stack trace mentions ⟨code⟩ at commit ⟨sha⟩."),
    ("forum", "en", "[⟨product⟩ User Group] ⟨name⟩ ⟨place⟩ asked: anyone else seeing ⟨code⟩ since ⟨version⟩?"
                    " Reply from ⟨agent⟩ ⟨job⟩: fixed in ⟨sha⟩, roll out ⟨day⟩."),
    ("forum", "de", "Betreff: ⟨code⟩ nach Update auf ⟨version⟩\n\n⟨greeting⟩, bei mir (⟨name⟩, ⟨place⟩) tritt"
                    " der Fehler auch auf. Trace-ID ⟨digest⟩. Bitte keine Zugangsdaten posten – ⟨agent⟩ hat"
                    " meinen alten Key ⟨key⟩ schon gesperrt."),
    ("forum", "fr", "[Résolu] ⟨product⟩ ne démarre plus\n\nMerci ⟨first⟩ ⟨last⟩ pour l'astuce ! Pour les"
                    " autres : la version ⟨version⟩ corrige le bug (commit ⟨sha⟩). — ⟨lname⟩"),
    ("forum", "es", "Hola a todos, soy ⟨name⟩ de ⟨place⟩. ¿A alguien más le falla ⟨product⟩ con el error"
                    " ⟨code⟩? Uso la versión ⟨version⟩.\n\nEditado por ⟨agent⟩ (moderador): eliminado el token"
                    " ⟨gh⟩ que se había publicado."),
    ("forum", "it", "⟨greeting⟩, qualcuno ha risolto con ⟨product⟩? Ho scritto anche a ⟨team⟩ ma niente. Se"
                    " serve sono ⟨lname⟩, scrivetemi a ⟨email⟩."),
    ("forum", "nl", "⟨greeting⟩! Na de update naar ⟨version⟩ crasht ⟨product⟩ bij het openen van een ⟨noun⟩."
                    " Groetjes, ⟨first⟩ (⟨place⟩)\n\n> Reactie van ⟨agent⟩: bekend probleem, zie ⟨ticket⟩."),
    ("forum", "pt", "Bom dia, alguém sabe resolver o ⟨code⟩ no ⟨product⟩? A imagem ⟨digest⟩ falha sempre."
                    " Abraço, ⟨name⟩"),
    ("forum", "pl", "⟨greeting⟩, po aktualizacji ⟨product⟩ do ⟨version⟩ nie działa logowanie. Pozdrawiam,"
                    " ⟨lname⟩ (⟨place⟩)"),
    # ticket threads quoting earlier replies
    ("quote", "en", "Thanks ⟨afirst⟩, that fixed it.\n\nOn ⟨day⟩, ⟨agent⟩ <⟨aemail⟩> wrote:\n> Hi ⟨first⟩,"
                    " please log in with the temporary password ⟨pw⟩ and change it straight away.\n>> On"
                    " Tue, ⟨name⟩ <⟨email⟩> wrote:\n>> I'm locked out of ⟨product⟩ again."),
    ("quote", "de", "Danke, ⟨afirst⟩!\n\n-----Ursprüngliche Nachricht-----\nVon: ⟨agent⟩ <⟨aemail⟩>\nAn:"
                    " ⟨name⟩ <⟨email⟩>\nBetreff: AW: ⟨ticket⟩ ⟨noun⟩\n\n> Die ⟨noun⟩ wurde an ⟨addr⟩"
                    " verschickt."),
    ("quote", "fr", "Le ⟨day⟩, ⟨name⟩ a écrit :\n> Voici mon nouveau numéro : ⟨phone⟩ (ou ⟨phone2⟩ depuis"
                    " l'étranger).\n\nBonjour ⟨first⟩, c'est noté. ⟨agent⟩, ⟨team⟩"),
    ("quote", "es", "El ⟨day⟩, ⟨agent⟩ escribió:\n> ¿Nos puede indicar su fecha de nacimiento?\n\n⟨dob⟩. Y el"
                    " pedido es el ⟨order⟩. Gracias, ⟨lname⟩"),
    ("quote", "it", "Il giorno ⟨day⟩ ⟨name⟩ <⟨email⟩> ha scritto:\n> Carta usata per l'ordine: ⟨card⟩\n\n"
                    "Buongiorno ⟨tlast⟩, per sicurezza abbiamo oscurato la carta nei nostri sistemi. ⟨agent⟩"),
    ("quote", "nl", "Op ⟨day⟩ schreef ⟨agent⟩ (⟨team⟩):\n> Kun je je IBAN nog eens sturen?\n\n⟨iban⟩ t.n.v."
                    " ⟨name⟩. Groet, ⟨first⟩"),
    ("quote", "pt", "Em ⟨day⟩, ⟨name⟩ escreveu:\n> A chave da API que estou a usar é ⟨key⟩\n\nOlá ⟨first⟩,"
                    " por favor revogue essa chave no ⟨product⟩ — ficou visível no ticket. ⟨agent⟩"),
    ("quote", "pl", "W dniu ⟨day⟩ ⟨agent⟩ napisał(a):\n> Prosimy o podanie adresu do wysyłki.\n\n⟨addr⟩,"
                    " tel. ⟨phone⟩. ⟨name⟩"),
    # voicemail transcripts
    ("voicemail", "en", "[Voicemail 00:41] hi um this is ⟨lname⟩ calling about ticket ⟨ticket⟩ i still"
                        " haven't had the refund uh you can call me back on ⟨phone⟩ or email ⟨semail⟩ thanks"
                        " bye"),
    ("voicemail", "en", "Transcribed by ⟨product⟩. Caller: ⟨name⟩, ⟨phone2⟩. \"yeah it's ⟨first⟩ again the"
                        " password you gave me ⟨pw⟩ doesn't work\""),
    ("voicemail", "de", "[Mailbox 0:37] ja hallo hier ist ⟨lname⟩ es geht um die ⟨noun⟩ äh bitte rufen Sie"
                        " mich zurück unter ⟨phone⟩ danke"),
    ("voicemail", "fr", "[Message vocal] oui bonjour c'est ⟨lname⟩ je vous appelle pour la commande ⟨order⟩"
                        " euh mon numéro c'est le ⟨phone⟩ merci au revoir"),
    ("voicemail", "es", "[Buzón de voz] hola buenas soy ⟨lname⟩ llamo por lo del pedido ⟨order⟩ eh mi"
                        " teléfono es el ⟨phone⟩ gracias"),
    ("voicemail", "it", "[Segreteria] pronto sì buongiorno sono ⟨lname⟩ chiamo per la pratica ⟨ticket⟩ mi"
                        " può richiamare al ⟨phone⟩ grazie"),
    ("voicemail", "nl", "[Voicemail] ja hallo met ⟨lname⟩ ik bel over ⟨product⟩ eh mijn nummer is ⟨phone⟩"
                        " dank je wel"),
    ("voicemail", "pt", "[Correio de voz] olá fala ⟨lname⟩ é sobre a encomenda ⟨order⟩ pode ligar-me para o"
                        " ⟨phone⟩ obrigado"),
    ("voicemail", "pl", "[Poczta głosowa] dzień dobry tu ⟨lname⟩ dzwonię w sprawie zamówienia ⟨order⟩"
                        " proszę o kontakt ⟨phone⟩ dziękuję"),
    # escalation e-mails with signatures
    ("escalation", "en", "Subject: ESCALATION – ⟨ticket⟩ – ⟨company⟩\n\n⟨greeting⟩,\n\nI'm escalating on"
                         " behalf of ⟨name⟩, whose ⟨product⟩ tenant has been down since ⟨day⟩. Their admin,"
                         " ⟨name2⟩, pasted a service key (⟨key⟩) in the thread – please rotate it.\n\nBest,\n"
                         "⟨agent⟩\n⟨job⟩, ⟨team⟩\nM: ⟨aphone⟩"),
    ("escalation", "de", "Betreff: Eskalation ⟨ticket⟩\n\n⟨greeting⟩,\n\nbitte dringend prüfen: ⟨tlast⟩"
                         " (⟨company⟩) wartet seit ⟨day⟩ auf die ⟨noun⟩. Kontakt: ⟨email⟩, ⟨phone⟩.\n\nViele"
                         " Grüße\n⟨agent⟩\n⟨job⟩\nMobil ⟨aphone⟩"),
    ("escalation", "fr", "Objet : Escalade – client ⟨name⟩\n\n⟨greeting⟩,\n\nle client attend depuis trois"
                         " semaines. Son numéro de sécurité sociale (⟨natid⟩) a été envoyé par erreur dans le"
                         " ticket ⟨ticket⟩ : merci de le purger.\n\n--\n⟨agent⟩\n⟨job⟩ – ⟨team⟩\nTél."
                         " ⟨aphone⟩"),
    ("escalation", "es", "Asunto: Escalado urgente ⟨ticket⟩\n\n⟨greeting⟩:\n\n⟨name⟩ (⟨company⟩) reclama el"
                         " cargo duplicado en la tarjeta ⟨card⟩. Adjunto la ⟨noun⟩.\n\nUn saludo,\n⟨agent⟩\n"
                         "⟨job⟩ | ⟨aphone⟩"),
    ("escalation", "it", "Oggetto: Escalation ⟨ticket⟩ – ⟨product⟩\n\n⟨greeting⟩,\n\n⟨tlast⟩ di ⟨company⟩"
                         " chiede un referente. Ha fornito il token ⟨gh⟩ per il debug del connettore: va"
                         " revocato.\n\n⟨agent⟩\n⟨job⟩\n⟨aemail⟩"),
    ("escalation", "nl", "Onderwerp: Escalatie ⟨ticket⟩\n\n⟨greeting⟩,\n\n⟨name⟩ van ⟨company⟩ is ontevreden"
                         " over ⟨team⟩. Geboortedatum volgens dossier: ⟨dob⟩.\n\nMet vriendelijke groet,\n\n"
                         "⟨agent⟩\n⟨job⟩ | ⟨place⟩\nT ⟨aphone⟩"),
    ("escalation", "pt", "Assunto: Escalamento ⟨ticket⟩\n\n⟨greeting⟩,\n\na cliente ⟨name⟩ enviou a"
                         " password ⟨pw⟩ por e-mail; pedimos reposição imediata. Conta associada:"
                         " ⟨email⟩.\n\nAtenciosamente,\n⟨agent⟩\n⟨job⟩ · ⟨company⟩"),
    ("escalation", "pl", "Temat: Eskalacja ⟨ticket⟩\n\n⟨greeting⟩,\n\nklient ⟨name⟩ (⟨company⟩) zgłasza"
                         " podwójne obciążenie. Numer konta do zwrotu: ⟨iban⟩.\n\nPozdrawiam\n⟨agent⟩\n⟨job⟩\n"
                         "tel. ⟨aphone⟩"),
    # order-system exports pasted into a ticket
    ("export", "en", "--- pasted from ⟨product⟩ ---\norder_id: ⟨order⟩\nship_to_name: ⟨upper⟩\nship_to_addr:"
                     " ⟨addr⟩\ncontact_email: ⟨email⟩\ncontact_phone: ⟨phone⟩\npayment: ⟨card⟩\nagent:"
                     " ⟨agent⟩ (⟨team⟩)\nbuild: ⟨version⟩ / ⟨sha⟩"),
    ("export", "de", "Export ⟨product⟩ ⟨version⟩\nAuftrag;Kunde;Geburtsdatum;Telefon;Status\n⟨order⟩;⟨upper⟩;"
                     "⟨dob⟩;⟨phone⟩;storniert\nbearbeitet von ⟨agent⟩, ⟨team⟩"),
    ("export", "fr", "Commande ⟨order⟩ | Client : ⟨upper⟩ | Adresse : ⟨addr⟩ | Tél : ⟨phone⟩ | Statut : en"
                     " attente (⟨code⟩)"),
    ("export", "es", "Pedido\t⟨order⟩\nCliente\t⟨name⟩\nDNI\t⟨natid⟩\nDirección\t⟨addr⟩\nCorreo\t⟨email⟩\n"
                     "Tienda\t⟨place⟩"),
    ("export", "it", "ORDINE ⟨order⟩ — CLIENTE ⟨upper⟩ — IBAN ⟨iban⟩ — STATO: rimborso (⟨team⟩) — rif."
                     " ⟨ticket⟩"),
    ("export", "nl", "| order | klant | e-mail | telefoon |\n| ⟨order⟩ | ⟨name⟩ | ⟨email⟩ | ⟨phone⟩ |\nBron:"
                     " ⟨product⟩ ⟨version⟩, export-id ⟨digest⟩"),
    ("export", "pt", "Encomenda: ⟨order⟩\nNome: ⟨upper⟩\nNIF: ⟨natid⟩\nMorada: ⟨addr⟩\nPagamento: cartão"
                     " ⟨card⟩\nLoja: ⟨place⟩"),
    ("export", "pl", "Zamówienie ⟨order⟩; Klient: ⟨upper⟩; PESEL: ⟨natid⟩; Adres: ⟨addr⟩; Tel.: ⟨phone⟩;"
                     " Dział: ⟨team⟩"),
    # tickets with no personal value at all: every capitalised word must stay
    ("negative", "en", "⟨greeting⟩, ⟨product⟩ ⟨version⟩ throws ⟨code⟩ when ⟨team⟩ exports the ⟨noun⟩ (commit"
                       " ⟨sha⟩, image ⟨digest⟩). Only ⟨place⟩ is affected, since ⟨day⟩. See ⟨ticket⟩ /"
                       " ⟨order⟩. Escalated to the ⟨job⟩ at ⟨company⟩."),
    ("negative", "de", "⟨greeting⟩, seit ⟨day⟩ meldet ⟨product⟩ beim Drucken der ⟨noun⟩ den Fehler ⟨code⟩."
                       " Betrifft ⟨place⟩ (Version ⟨version⟩). ⟨team⟩ ist informiert, siehe ⟨ticket⟩."),
    ("negative", "fr", "⟨greeting⟩, depuis ⟨day⟩ ⟨product⟩ refuse le ⟨noun⟩ (erreur ⟨code⟩, ⟨version⟩)."
                       " Site concerné : ⟨place⟩. Suivi par ⟨team⟩ sous ⟨ticket⟩."),
    ("negative", "es", "⟨greeting⟩: ⟨product⟩ no genera la ⟨noun⟩ desde el ⟨day⟩ (⟨code⟩). Afecta a"
                       " ⟨place⟩. Lo revisa ⟨team⟩, ref. ⟨ticket⟩, pedido ⟨order⟩."),
    ("negative", "it", "⟨greeting⟩, ⟨product⟩ ⟨version⟩ non stampa la ⟨noun⟩ (⟨code⟩, commit ⟨sha⟩). Solo"
                       " ⟨place⟩. Segue ⟨team⟩ con la pratica ⟨ticket⟩."),
    ("negative", "nl", "⟨greeting⟩, sinds ⟨day⟩ geeft ⟨product⟩ bij de ⟨noun⟩ foutcode ⟨code⟩ (⟨version⟩)."
                       " Alleen ⟨place⟩. ⟨team⟩ pakt het op, zie ⟨ticket⟩."),
    ("negative", "pt", "⟨greeting⟩, o ⟨product⟩ ⟨version⟩ falha ao emitir a ⟨noun⟩ (⟨code⟩). Só na ⟨place⟩."
                       " A ⟨team⟩ acompanha no ⟨ticket⟩; imagem ⟨digest⟩."),
    ("negative", "pl", "⟨greeting⟩, od ⟨day⟩ ⟨product⟩ nie generuje dokumentu ⟨noun⟩ (błąd ⟨code⟩, wersja"
                       " ⟨version⟩). Dotyczy: ⟨place⟩. Zgłoszenie ⟨ticket⟩ prowadzi ⟨team⟩."),
]

_NEGATIVE_SLOTS = {"product", "team", "job", "greeting", "place", "noun", "day", "code", "company", "order",
                   "ticket", "version", "sha", "digest"}
_NEGATIVE_LABEL = {"sha": "hash", "digest": "hash"}


def _record(locale: str, marked: str, origin: str, style: str, groups: dict[tuple[str, str], str]) -> dict:
    """Parse the markup of one ticket into a record; `groups` names values written twice."""
    text: list[str] = []
    planted: list[list] = []
    negatives: list[list] = []
    pos = last = 0
    for m in _MARK.finditer(marked):
        text.append(marked[last:m.start()])
        pos += m.start() - last
        last = m.end()
        kind, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if m.group(1):
            default = value.casefold() if kind == "PERSON" else f"{kind}:{value}"
            planted.append([pos, pos + len(value), kind, groups.get((kind, value), default)])
        else:
            negatives.append([pos, pos + len(value), kind])
        text.append(value)
        pos += len(value)
    text.append(marked[last:])
    return {"locale": locale, "text": "".join(text), "planted": planted, "negatives": negatives,
            "origin": origin, "country": style}


def _ticket(g: _Gen, style: str, lang: str, template: str) -> dict:
    r = g.r
    origin = "-" if style == "negative" else r.choice(sorted(NAMES))
    people = [_Person(r, origin) for _ in range(3)] if origin != "-" else []
    while people and (len({p.given for p in people}) < 3 or len({p.family for p in people}) < 3):
        people = [_Person(r, origin) for _ in range(3)]
    cust, other, agent = people or (None, None, None)
    groups: dict[tuple[str, str], str] = {}
    filled: dict[str, str] = {}

    def plant(kind: str, value: str, group: str | None = None) -> str:
        if group:
            groups[(kind, value)] = group
        return f"[[{kind}|{value}]]"

    def phones(slot: str) -> None:
        national, international = g.phone(lang)
        key = f"PHONE:{slot}:{re.sub(r'[^0-9]', '', national)}"
        filled[slot] = plant("PHONE", national, key)
        filled[slot + "2"] = plant("PHONE", international, key)

    def fill(slot: str) -> str:
        if slot in filled:
            return filled[slot]
        if slot in _NEGATIVE_SLOTS:
            value = f"{{{{{_NEGATIVE_LABEL.get(slot, slot)}|{g.negative(slot, lang)}}}}}"
        elif slot in ("phone", "phone2"):
            phones("phone")
            return filled[slot]
        elif slot == "aphone":
            phones("aphone")
            return filled[slot]
        elif slot == "tlast":
            value = f"{r.choice(TITLES[lang])} {plant('PERSON', cust.family)}"
        else:
            host = r.choice(MAIL_HOSTS[lang])
            value = {
                "name": lambda: plant("PERSON", cust.styled()),
                "lname": lambda: plant("PERSON", cust.full().lower()),
                "first": lambda: plant("PERSON", cust.given),
                "last": lambda: plant("PERSON", cust.family),
                "upper": lambda: plant("PERSON", f"{cust.family}, {cust.given}".upper()),
                "name2": lambda: plant("PERSON", other.styled()),
                "agent": lambda: plant("PERSON", agent.full()),
                "afirst": lambda: plant("PERSON", agent.given),
                "email": lambda: plant("EMAIL", cust.email(host)),
                "aemail": lambda: plant("EMAIL", agent.email(_ascii(r.choice(COMPANIES).split()[0]) + ".com")),
                "semail": lambda: plant("EMAIL", cust.email(host).replace(".", " dot ").replace("@", " at ")),
                "addr": lambda: plant("ADDRESS", g.address(lang)),
                "dob": lambda: plant("DOB", g.dob(lang)),
                "pw": lambda: plant("PASSWORD", g.password(lang)),
                "key": lambda: plant("API_KEY", g.api_key()),
                "gh": lambda: plant("GITHUB_TOKEN", g.github()),
                "iban": lambda: plant("IBAN", g.iban(lang)),
                "card": lambda: plant("CARD", g.card()),
                "natid": lambda: plant("NATIONAL_ID", g.national_id(lang)),
            }[slot]()
        filled[slot] = value
        return value

    marked = _SLOT.sub(lambda m: fill(m.group(1)), template)
    return _record(lang, marked, origin, style, groups)


def build(n: int = 700, seed: int = 53) -> list[dict]:
    """`n` tickets, the templates taken in turn, values and name origins drawn from `seed`."""
    g = _Gen(seed)
    return [_ticket(g, *TEMPLATES[i % len(TEMPLATES)]) for i in range(n)]


if __name__ == "__main__":
    for rec in build(len(TEMPLATES)):
        print(rec["country"], rec["locale"], rec["origin"], "|", rec["text"].replace("\n", " ⏎ "))
