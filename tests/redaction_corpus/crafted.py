"""A sixth corpus, for person names and the words beside them, written by hand for session 51
before any of its rule changes and scored once then (and once at the end).

Why: every earlier name corpus has taught the rules something, so none of them still says
how the rules do on names and sentences they were not made from. This file was written from
scratch: ticket sentences in eight languages in the voice of people writing to support, name
parts for twenty-two origins (no generator, no list the detector reads), written in nine
styles, and hard negatives that look like names and are not: capitalised products and
brands, places, streets, months and days, job titles, team names, and the words after
"Dear" / "Hi" / "Hallo" that are not names ("Hi team", "Dear customer").

Markup as in `fresh.py`: ``[[PERSON|value]]`` plants a name, ``{{label|value}}`` a hard
negative that must be kept whole. ``locale`` is the language of the sentence, ``origin`` the
style the name is written in, ``country`` where its parts come from (``-`` for a ticket
without a name). Same seed, same corpus: ``build(n, seed)``.
"""

from __future__ import annotations

import functools
import importlib.util
import random
from pathlib import Path

# Name parts per origin: (given names, family names). Written for this file.
PARTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "yoruba": (("Oluwaseun", "Adebayo", "Folake", "Temitope", "Olamide", "Bukola", "Kehinde"),
               ("Adeyemi", "Ogunleye", "Balogun", "Akinola", "Oyelaran", "Fashola", "Adewale")),
    "igbo": (("Chinedu", "Ngozi", "Obinna", "Chiamaka", "Ikenna", "Adaora", "Emeka"),
             ("Okonkwo", "Eze", "Nwosu", "Okafor", "Obi", "Anyanwu", "Onyekachi")),
    "kenyan": (("Wanjiru", "Kipchoge", "Achieng", "Mwangi", "Njeri", "Otieno", "Chebet"),
               ("Kamau", "Odhiambo", "Wafula", "Kiprono", "Mutua", "Njoroge", "Korir")),
    "amharic": (("Selamawit", "Tesfaye", "Meron", "Dawit", "Hiwot", "Yonas", "Bethlehem"),
                ("Gebremedhin", "Alemu", "Tadesse", "Haile", "Bekele", "Woldemariam", "Desta")),
    "arabic": (("Youssef", "Mariam", "Khalid", "Noura", "Tariq", "Samira", "Hamza"),
               ("Al-Mansouri", "Haddad", "Nasser", "El-Sayed", "Khoury", "Bin Rashid", "Saleh")),
    "persian": (("Arash", "Shirin", "Kourosh", "Niloufar", "Babak", "Parisa", "Dariush"),
                ("Rahimi", "Tehrani", "Moradi", "Ghorbani", "Sadeghi", "Jafari", "Karimzadeh")),
    "turkish": (("Emre", "Zeynep", "Burak", "Elif", "Oğuz", "Selin", "Kerem"),
                ("Yılmaz", "Öztürk", "Aydın", "Çelik", "Şahin", "Doğan", "Kılıç")),
    "tamil": (("Karthik", "Lakshmi", "Senthil", "Meenakshi", "Arun", "Kavitha", "Vignesh"),
              ("Subramanian", "Ramasamy", "Krishnan", "Natarajan", "Velusamy", "Pillai", "Iyer")),
    "punjabi": (("Harpreet", "Gurdeep", "Simran", "Jaswinder", "Manpreet", "Navjot", "Baljit"),
                ("Sandhu", "Gill", "Dhillon", "Grewal", "Sidhu", "Randhawa", "Bains")),
    "vietnamese": (("Thi Lan", "Van Minh", "Thu Trang", "Quoc Bao", "Ngoc Anh", "Duc Huy", "Hong Nhung"),
                   ("Nguyen", "Tran", "Pham", "Le", "Hoang", "Vo", "Dang")),
    "korean": (("Ji-hoon", "Seo-yeon", "Min-jun", "Ha-eun", "Do-hyun", "Soo-ah", "Jae-won"),
               ("Kim", "Park", "Choi", "Jung", "Kang", "Yoon", "Jang")),
    "japanese": (("Haruto", "Yui", "Sota", "Aoi", "Riku", "Hinata", "Kaito"),
                 ("Takahashi", "Watanabe", "Yamamoto", "Nakamura", "Kobayashi", "Inoue", "Matsumoto")),
    "filipino": (("Maricel", "Jericho", "Rowena", "Bong", "Divina", "Ramil", "Lorna"),
                 ("Dela Cruz", "Bautista", "Macaraeg", "Villanueva", "Pangilinan", "Tolentino", "Manalo")),
    "greek": (("Eleftheria", "Konstantinos", "Dimitra", "Stavros", "Ioanna", "Panagiotis", "Vasiliki"),
              ("Papadopoulou", "Georgiou", "Karamanlis", "Nikolaidis", "Theodorou", "Vlachos", "Antoniou")),
    "georgian": (("Nino", "Giorgi", "Tamar", "Levan", "Mariam", "Davit", "Ketevan"),
                 ("Beridze", "Kapanadze", "Gelashvili", "Lomidze", "Tsiklauri", "Japaridze", "Mchedlishvili")),
    "ukrainian": (("Oksana", "Taras", "Iryna", "Bohdan", "Olena", "Mykola", "Halyna"),
                  ("Shevchuk", "Kovalenko", "Bondarenko", "Tkachenko", "Melnyk", "Kravchuk", "Lysenko")),
    "irish": (("Siobhán", "Ciarán", "Aoife", "Pádraig", "Niamh", "Oisín", "Gráinne"),
              ("Ó Súilleabháin", "MacNamara", "O'Donoghue", "Mac Giolla", "Ní Bhriain", "Fitzgerald", "Ó Briain")),
    "maori": (("Aroha", "Tamati", "Mereana", "Wiremu", "Hinemoa", "Rawiri", "Ataahua"),
              ("Ngata", "Te Rangi", "Parata", "Tawhiri", "Hohepa", "Waititi", "Tapsell")),
    "brazilian": (("Maria Eduarda", "João Pedro", "Ana Júlia", "Luiz Henrique", "Maria Clara", "Pedro Henrique", "Ana Beatriz"),
                  ("dos Santos Ferreira", "da Costa Lima", "de Oliveira Souza", "Albuquerque Nogueira",
                   "do Nascimento Araújo", "Cavalcanti de Mello", "das Neves Barbosa")),
    "english_words": (("Grace", "Will", "Amber", "Joy", "Mark", "Faith", "Dawn"),
                      ("Young", "Baker", "Rivers", "Cook", "Little", "Brown", "Page")),
    "scandinavian": (("Sigrid", "Øystein", "Linnea", "Torbjørn", "Astrid", "Henrik", "Solveig"),
                     ("Haugland", "Bergqvist", "Lindholm", "Øvrebø", "Sandberg", "Fjeldstad", "Åkesson")),
    "hungarian": (("Zsófia", "Gergely", "Réka", "Levente", "Ildikó", "Bence", "Krisztina"),
                  ("Szabó", "Kovács", "Tóth", "Varga", "Horváth", "Németh", "Farkas")),
}

# Styles a name is written in: (given, family) -> what the ticket shows.
TITLES = {"en": ("Mr", "Ms", "Dr", "Mrs"), "de": ("Herr", "Frau", "Dr."), "fr": ("M.", "Mme", "Madame"),
          "es": ("Sr.", "Sra.", "Don"), "pt": ("Sr.", "Sra.", "Dona"), "it": ("Sig.", "Sig.ra", "Dott."),
          "nl": ("dhr.", "mevr.", "meneer"), "pl": ("Pan", "Pani", "dr")}


def _styled(style: str, given: str, family: str, lang: str, r: random.Random) -> tuple[str, str]:
    """(text before the name that is not part of it, the name as written)."""
    if style == "full":
        return "", f"{given} {family}"
    if style == "initial":
        return "", f"{given[0]}. {family}"
    if style == "reversed":
        return "", f"{family}, {given}"
    if style == "lower":
        return "", f"{given} {family}".lower()
    if style == "caps":
        return "", f"{given} {family}".upper()
    if style == "titled":
        return f"{r.choice(TITLES[lang])} ", family
    if style == "given_only":
        return "", given
    if style == "family_first":
        return "", f"{family.upper()} {given}"
    return "", f"{given} {family}"  # "email_like" is handled by the template


STYLES = ("full", "initial", "reversed", "lower", "caps", "titled", "given_only", "family_first")

# Hard negatives: capitalised words that are not people.
NEG = {
    "product": ("Teams", "Excel", "Zoom Rooms", "Salesforce", "Jira Service Desk", "QuickBooks Online",
                "Visual Studio Code", "Photoshop", "Google Sheets", "Slack Connect", "Outlook Mobile",
                "Dynamics 365", "Power BI", "Adobe Acrobat", "Firefox", "Windows Hello", "Apple Watch",
                "Galaxy Tab", "Kindle Paperwhite", "Surface Pro", "ThinkPad Dock", "Sage Payroll"),
    "brand": ("Mercedes-Benz", "Ikea", "Zalando", "Deutsche Bahn", "Carrefour", "Vodafone", "Heineken",
              "Decathlon", "Ryanair", "Mango", "Jumbo", "Marks & Spencer", "Lidl", "Orange",
              "Telefónica", "Allegro", "Magazine Luiza", "Rakuten", "Santander", "Philips"),
    "place": ("Rotterdam", "Lyon", "Valparaíso", "Gdańsk", "Porto Alegre", "Bologna", "Leeds",
              "Stuttgart", "Nairobi", "Lagos", "Queensland", "Bordeaux", "Victoria", "Sevilla",
              "Poznań", "Eindhoven", "Belo Horizonte", "Adelaide", "Marseille", "Hamburg"),
    "street": ("Baker Street", "Kurfürstendamm", "Rue de Rivoli", "Gran Vía", "Avenida Paulista",
               "Via Roma", "Kalverstraat", "Nowy Świat", "Oxford Road", "Maple Avenue"),
    "month": ("January", "März", "juillet", "Septiembre", "Novembro", "dicembre", "oktober", "Maj",
              "August", "Juni"),
    "day": ("Monday", "Dienstag", "mercredi", "Jueves", "sexta-feira", "Sabato", "zondag", "piątek"),
    "job": ("Head of Procurement", "Office Manager", "Teamleiterin Buchhaltung", "Directeur Commercial",
            "Jefa de Compras", "Gerente de TI", "Responsabile Acquisti", "Financieel Directeur",
            "Kierownik Działu IT", "Senior Account Executive", "Chief Financial Officer"),
    "team": ("Platform Team", "Customer Success", "Service Desk", "Billing Operations", "Legal",
             "Facilities", "Payroll", "Data Engineering"),
}
GREETING_NEG = {"en": ("team", "all", "everyone", "customer", "Support", "Sir or Madam", "colleagues"),
                "de": ("Team", "zusammen", "Kundin, lieber Kunde", "Support-Team", "Damen und Herren"),
                "fr": ("équipe", "tous", "Madame, Monsieur", "service client"),
                "es": ("equipo", "todos", "cliente", "soporte"),
                "pt": ("equipe", "pessoal", "cliente", "suporte"),
                "it": ("team", "tutti", "cliente", "assistenza"),
                "nl": ("team", "allemaal", "klant", "helpdesk"),
                "pl": ("Zespole", "Państwo", "Kliencie", "Wsparcie")}

# Templates. {P} a name in the ticket's style; {G} its given name alone; {product}, {brand},
# {place}, {street}, {month}, {day}, {job}, {team}: hard negatives; {g} a greeting word
# that is not a name; {T} a title before the name (empty unless the style is "titled").
TEMPLATES: dict[str, tuple[str, ...]] = {
    "en": (
        "Hi {g},\n\n{T}{P} here from {team}. Since {month} our {product} sync drops every {day}.",
        "Dear {g}, I am writing for {T}{P}, our {job}, who cannot log into {product}.",
        "Can someone call {T}{P} back? She is at the {place} office on {street} until {day}.",
        "Thanks,\n{T}{P}\n{job}\n{brand}",
        "Ticket raised by {T}{P} ({team}): the {brand} invoice for {month} is missing.",
        "{T}{P} reported that {product} crashes when opening files from {place}.",
        "Hello {g}, please add {T}{P} to the {team} group, she starts on {day}.",
        "Cheers {G}, that fixed it. The {product} licence from {brand} is active again.",
        "Forwarding from {T}{P}: \"our {place} warehouse can't print labels since {month}\"",
        "Assigning to {T}{P} in {team}; {product} on the {street} site is down.",
    ),
    "de": (
        "Hallo {g},\n{T}{P} aus der Abteilung {team} hat seit {month} keinen Zugriff auf {product}.",
        "Sehr geehrte {g}, im Auftrag von {T}{P} ({job}) bitte ich um Rückruf.",
        "Mit freundlichen Grüßen\n{T}{P}\n{brand}, {place}",
        "Die Lieferung an {T}{P} in die Filiale {street}, {place}, kam am {day} nicht an.",
        "Danke {G}, jetzt läuft {product} wieder.",
    ),
    "fr": (
        "Bonjour {g},\n{T}{P} du service {team} n'arrive plus à ouvrir {product} depuis {month}.",
        "Cordialement,\n{T}{P}\n{job}, {brand} {place}",
        "Merci de rappeler {T}{P}, elle est au magasin de la {street} jusqu'à {day}.",
        "Je transfère la demande de {T}{P} : la facture {brand} de {month} est en double.",
        "Merci {G}, tout fonctionne à nouveau sur {product}.",
    ),
    "es": (
        "Hola {g}, soy {T}{P} de {team} y {product} no carga desde {month}.",
        "Un saludo,\n{T}{P}\n{job} - {brand} {place}",
        "Por favor, llamad a {T}{P} a la tienda de {street} antes del {day}.",
        "Gracias {G}, ya funciona {product}.",
    ),
    "pt": (
        "Olá {g}, aqui é {T}{P}, da área de {team}. O {product} parou em {month}.",
        "Atenciosamente,\n{T}{P}\n{job}\n{brand} - {place}",
        "Favor retornar a ligação para {T}{P} na loja da {street} até {day}.",
        "Obrigada {G}, o {product} voltou a funcionar.",
    ),
    "it": (
        "Buongiorno {g}, sono {T}{P} del reparto {team}: {product} non si apre da {month}.",
        "Cordiali saluti,\n{T}{P}\n{job}, {brand} {place}",
        "Potete richiamare {T}{P} al negozio di {street} entro {day}?",
        "Grazie {G}, ora {product} funziona.",
    ),
    "nl": (
        "Hoi {g}, {T}{P} van {team} kan sinds {month} niet meer inloggen op {product}.",
        "Met vriendelijke groet,\n{T}{P}\n{job}, {brand} {place}",
        "Kunnen jullie {T}{P} terugbellen? Ze zit tot {day} in de winkel aan de {street}.",
    ),
    "pl": (
        "Dzień dobry {g}, {T}{P} z działu {team} nie może otworzyć {product} od {month}.",
        "Pozdrawiam,\n{T}{P}\n{job}, {brand} {place}",
        "Proszę oddzwonić do {T}{P}, będzie w sklepie przy ulicy {street} do {day}.",
    ),
}

# Tickets with no name at all, only the words that look like one.
NEGATIVE_TEMPLATES = (
    ("en", "Hi {g}, the {product} export to {brand} fails every {day} since {month}."),
    ("en", "Dear {g}, our {job} in {place} asks why {product} was billed twice."),
    ("en", "The {team} at the {street} office in {place} reports {product} outages."),
    ("de", "Hallo {g}, {product} stürzt seit {month} in der Filiale {place} ab."),
    ("fr", "Bonjour {g}, le {product} de {brand} ne marche plus à {place}."),
    ("es", "Hola {g}, desde {month} {product} no abre en la tienda de {street}."),
    ("pt", "Olá {g}, a {brand} de {place} não recebe os pedidos desde {day}."),
    ("it", "Buongiorno {g}, il {job} di {place} non vede {product}."),
    ("nl", "Hoi {g}, {product} werkt niet meer bij {team} in {place}."),
    ("pl", "Dzień dobry {g}, {product} nie działa w {place} od {month}."),
)


def _mark(template: str, slots: dict[str, str]) -> str:
    out = template
    for key, value in slots.items():
        out = out.replace("{" + key + "}", value)
    return out


def _negatives(lang: str, r: random.Random) -> dict[str, str]:
    slots = {label: "{{%s|%s}}" % (label, r.choice(values)) for label, values in NEG.items()}
    slots["g"] = "{{greeting|%s}}" % r.choice(GREETING_NEG[lang])
    return slots


@functools.lru_cache(maxsize=1)
def _fresh():
    spec = importlib.util.spec_from_file_location("fresh", Path(__file__).with_name("fresh.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(locale: str, marked: str, origin: str, country: str) -> dict:
    """A record of the marked text, read as `fresh.py` reads its tickets."""
    return {**_fresh()._record(locale, marked), "origin": origin, "country": country}


def build(n: int = 1200, seed: int = 51) -> list[dict]:
    """`n` records: four name tickets for each ticket without a name."""
    r = random.Random(seed)
    countries = sorted(PARTS)
    langs = sorted(TEMPLATES)
    records = []
    for i in range(n):
        if i % 5 == 4:
            lang, template = NEGATIVE_TEMPLATES[(i // 5) % len(NEGATIVE_TEMPLATES)]
            records.append(_record(lang, _mark(template, _negatives(lang, r)), "-", "-"))
            continue
        country = countries[i % len(countries)]
        style = STYLES[(i // len(countries)) % len(STYLES)]
        lang = langs[(i // 7) % len(langs)]
        slot = "{G}" if style == "given_only" else "{P}"
        template = r.choice([t for t in TEMPLATES[lang] if slot in t] or TEMPLATES[lang])
        given_all, family_all = PARTS[country]
        given, family = r.choice(given_all), r.choice(family_all)
        title, written = _styled(style, given, family, lang, r)
        slots = _negatives(lang, r)
        slots["T"] = title
        slots["P"] = f"[[PERSON|{written}]]"
        slots["G"] = f"[[PERSON|{written}]]"
        records.append(_record(lang, _mark(template, slots), style, country))
    return records
