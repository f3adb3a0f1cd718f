"""A seventh corpus, for person names of the groups the rules find hardest, written by hand for
session 52 before any of its rule changes, scored once then and once at the end.

Why: session 51 tuned on `crafted.py`, so it no longer says how the rules do on text they
were not made from. This corpus is written in a style no other corpus uses: chat messages
(time stamps, @-mentions, "ok thx", lower case throughout) and e-mail (forwarded headers
such as "Von: ... Gesendet: ...", sign-offs, "cc") in English, German, Dutch, Portuguese,
French and Spanish. The names are of the groups the rules missed most in `crafted.py`:
Korean names (hyphenated and not, either order), Irish names with O'/Mac/Mc/Ó/Ní/Nic,
Brazilian names of three to six parts with da/de/do/dos/das, names written all in lower
case, and, as a control, Dutch and German names (with van/van der/ter/de). Name parts were
written for this file (none from a generator or a list the detector reads). Hard negatives
are the words beside them that look like names and are not: capitalised German nouns and
sentence-initial Dutch nouns, products, places (some of them Korean or Irish), streets, job
titles, team names and greetings ("Hi team", "Moin zusammen").

Markup as in `fresh.py`. ``locale`` is the language; ``origin`` the group of the name
(``-`` for a ticket without one); ``country`` the form, ``chat`` or ``mail``. Same seed,
same corpus: ``build(n, seed)``.
"""

from __future__ import annotations

import functools
import importlib.util
import random
from pathlib import Path

# (given names, family names) per group; each group's names as its people write them.
KOREAN = (("Seung-woo", "Hye-jin", "Yeon-woo", "Eun-ji", "Dong-hyuk", "Min-seo", "Sung-min",
           "Ji-woo", "Hyun-soo", "Na-rae", "Jiwon", "Minho", "Seojun", "Yuna", "Taeyang"),
          ("Lee", "Cho", "Han", "Seo", "Shin", "Kwon", "Oh", "Baek", "Hwang", "Ahn", "Song",
           "Lim", "Yoo", "Nam", "Moon"))
IRISH = (("Seán", "Máire", "Eoin", "Caoimhe", "Donncha", "Saoirse", "Tadhg", "Róisín", "Cathal",
          "Orla", "Fionnuala", "Darragh", "Clodagh", "Ruairí", "Sinéad"),
         ("O'Sullivan", "McCarthy", "MacDermott", "O'Neill", "Mac Aodha", "Ó Néill", "McGrath",
          "O'Brien", "Mag Uidhir", "Nic Dhonnchadha", "Ní Mhaoláin", "O'Mahony", "MacSweeney",
          "Ó Ceallaigh", "McLoughlin"))
BRAZILIAN = (("Luiza Helena", "Carlos Alberto", "José Roberto", "Maria Fernanda", "Ana Carolina",
              "Rita de Cássia", "Marcelo", "Valéria", "Antônio Carlos", "Joana Darc", "Francisco",
              "Thaíssa", "Edson", "Maria das Graças", "Gilberto"),
             ("Pires de Almeida", "da Silva Ramos", "dos Reis Pacheco", "Fonseca de Araújo",
              "Tavares da Rocha", "Moreira dos Anjos", "Brandão de Lima", "das Dores Vieira",
              "do Carmo Bittencourt", "Vasconcelos Sampaio", "de Paula Quintanilha",
              "Correia do Amaral", "Figueira da Mota Neto", "Queiroz", "dos Santos Filho"))
DUTCH_GERMAN = (("Sjoerd", "Ineke", "Wiebke", "Torsten", "Berend", "Lotte", "Maarten", "Anneke",
                 "Jörg", "Friedhelm", "Marijke", "Henning", "Gerrit", "Silke", "Ruud"),
                ("van den Heuvel", "Bosman", "Hansen", "Kähler", "ter Horst", "van Dam",
                 "van der Linden", "Wessels", "Overbeck", "Schimmelpfennig", "de Graaf",
                 "Brinkmann", "van Beek", "Lüdtke", "Hoogendoorn"))
GROUPS = {"korean": KOREAN, "irish": IRISH, "brazilian": BRAZILIAN, "dutch_german": DUTCH_GERMAN}


def _written(group: str, r: random.Random, lower: bool) -> tuple[str, str]:
    """(full name as written, given name as written) for one person of `group`."""
    given, family = r.choice(GROUPS[group][0]), r.choice(GROUPS[group][1])
    if group == "korean":
        full = r.choice((f"{given} {family}", f"{family} {given}", f"{family.upper()} {given}"))
    else:
        full = f"{given} {family}"
    return (full.lower(), given.lower()) if lower else (full, given)


# Hard negatives: words near the names that look like names and are not.
NEG = {
    "noun": ("Rechnungsprüfung", "Lieferschein", "Kundennummer", "Zahlungserinnerung",
             "Abrechnung", "Bestellung", "Kassensystem", "Geschäftsführung", "Wartungsvertrag",
             "Gutschrift", "Lagerbestand", "Druckerwarteschlange", "Factuur", "Pakbon",
             "Betaalverzoek", "Storing", "Vestiging", "Urlaubsvertretung", "Rücksendung"),
    "product": ("Lightspeed Retail", "Exact Online", "DATEV Unternehmen online", "Shopify POS",
                "Moneybird", "SumUp Air", "Zebra ZD421", "Personio", "Lexware Office",
                "Sophos Central", "Mailchimp", "KakaoTalk", "Naver Works", "Bling ERP",
                "Conta Azul", "Pipedrive", "Sage Business Cloud", "Twinfield"),
    "place": ("Groningen", "Kaiserslautern", "Curitiba", "Recife", "Galway", "Cork", "Busan",
              "Incheon", "Daegu", "Limerick", "Florianópolis", "Utrecht", "Ennis", "Campinas",
              "Apeldoorn", "Bielefeld", "Suwon"),
    "street": ("Herengracht", "Königsallee", "Rua Augusta", "Grafton Street", "Gangnam-daero",
               "Lange Voorhout", "Schillerstraße", "Rua Oscar Freire", "Patrick Street",
               "Coolsingel", "Avenida Boa Viagem", "Eyre Square"),
    "job": ("Sachbearbeiterin", "Einkaufsleiter", "Teamlead Support", "Analista Financeira",
            "Store Manager", "Bedrijfsleider", "Hoofd Financiën", "Chef de projet",
            "Coordenadora de Logística", "Jefe de Almacén", "Buchhalterin", "Area Manager"),
    "team": ("Team Kasse", "Backoffice", "Klantenservice", "Afdeling Inkoop", "Financeiro",
             "Helpdesk Nord", "Logistik", "Service Après-Vente"),
}
GREETING = {"en": ("Hi team", "Hey folks", "Morning all", "Hello everyone"),
            "de": ("Moin zusammen", "Hallo Team", "Hallo zusammen", "Liebe Kolleginnen"),
            "nl": ("Hallo allemaal", "Hoi team", "Goedemorgen collega's", "Beste klantenservice"),
            "pt": ("Bom dia pessoal", "Olá equipe", "Oi gente", "Prezados"),
            "fr": ("Bonjour à tous", "Salut l'équipe", "Bonjour le support"),
            "es": ("Hola equipo", "Buenas a todos", "Hola soporte")}

# {P}: a name; {G}: a given name alone; {greet} and the keys of NEG: hard negatives.
CHAT = {
    "en": ("[09:14] {P}: {product} till in {place} froze again, restarting",
           "@{P} can you check the {noun} thing? customer keeps calling",
           "ok thx {G}, will try after lunch",
           "{greet} - {P} is off today, ping me for {product} stuff",
           "talked w/ {P} from {team}, the {place} store on {street} has no stock",
           "[14:02] me: who owns {product}?\n[14:03] {P}: that's us, {team}",
           "fyi {P} says the {job} signs off on refunds now"),
    "de": ("[08:51] {P}: {product} hängt schon wieder, {noun} geht nicht raus",
           "@{P} kannst du dir die {noun} anschauen? Filiale {place} wartet",
           "{greet}, {P} ist heute im Homeoffice, bei {product} bitte an {team}",
           "danke {G}, läuft wieder"),
    "nl": ("[10:20] {P}: {noun} komt niet door in {product}",
           "@{P} kun jij even naar de {place} vestiging kijken? {noun} ligt eruit",
           "{greet}, {P} is vandaag vrij, vragen over {product} naar {team}",
           "top {G}, werkt weer"),
    "pt": ("[11:05] {P}: o {product} caiu de novo na loja de {place}",
           "@{P} consegue ver a nota da {street}? o {job} está cobrando",
           "{greet}, {P} está de férias, falem com o {team} sobre o {product}",
           "valeu {G}, resolvido"),
    "fr": ("[16:40] {P} : {product} ne synchronise plus depuis ce matin",
           "@{P} tu peux regarder le ticket de {place} ? le {job} attend"),
    "es": ("[12:33] {P}: {product} no deja cerrar caja en {place}",
           "@{P} ¿puedes mirar lo del almacén de {place}? el {job} está esperando"),
}
MAIL = {
    "en": ("From: {P}\nSent: Tuesday 4 June\nSubject: {product} licence\n\n{greet}, can we renew before Friday?",
           "{greet},\n\nI'm covering for {P} this week. The {place} office on {street} still has no {product}.\n\nBest",
           "Kind regards,\n{P}\n{job} | {team}",
           "Please loop in {P} (cc'd) - she handles {product} for the {place} branch.",
           "On Monday {P} wrote:\n> the {noun} from {place} is still missing"),
    "de": ("Von: {P}\nGesendet: Montag, 3. März\nBetreff: {noun}\n\n{greet}, die {noun} ist noch offen.",
           "{greet},\n\nFrau {P} aus der {team} bittet um Rückmeldung zur {noun}.\n\nViele Grüße",
           "Mit freundlichen Grüßen\n{P}\n{job}\n{place}, {street}",
           "Bitte die {noun} an {P} weiterleiten, Kopie an die {job}."),
    "nl": ("Van: {P}\nVerzonden: dinsdag 4 juni\nOnderwerp: {noun}\n\n{greet}, de {noun} klopt niet.",
           "Met vriendelijke groet,\n{P}\n{job}, {team}\n{street}, {place}",
           "{noun} van de vestiging {place} graag naar {P} sturen.",
           "Groetjes,\n{G}"),
    "pt": ("De: {P}\nEnviada em: segunda-feira, 3 de março\nAssunto: {product}\n\n{greet}, o {product} não abre.",
           "Att.,\n{P}\n{job} - {team}\n{place}",
           "Encaminho o pedido da {P}, da loja da {street}: o {product} cobra em dobro.",
           "Abraços,\n{G}"),
    "fr": ("De : {P}\nEnvoyé : lundi 3 mars\nObjet : {product}\n\n{greet}, la facture de {place} est bloquée.",
           "Bien cordialement,\n{P}\n{job}, {team}"),
    "es": ("De: {P}\nEnviado: lunes, 3 de marzo\nAsunto: {product}\n\n{greet}, el pedido de {place} no llega.",
           "Un abrazo,\n{P}\n{job} - {place}"),
}
NEGATIVE = (
    ("en", "{greet}, {product} in {place} is down again, the {job} asked for an update."),
    ("de", "{greet}, die {noun} für {place} fehlt, {product} zeigt nichts an."),
    ("de", "{noun} und {noun2} liegen bei {team}, bitte bis Freitag prüfen."),
    ("nl", "{greet}, {noun} van {place} staat nog open in {product}."),
    ("pt", "{greet}, a loja da {street} em {place} está sem {product}."),
    ("en", "[09:02] {team}: {product} maintenance tonight, {street} site first"),
    ("fr", "{greet}, {product} ne marche plus à {place} depuis lundi."),
    ("es", "{greet}, el {job} de {place} no ve {product}."),
)


def _negatives(lang: str, r: random.Random) -> dict[str, str]:
    slots = {label: "{{%s|%s}}" % (label, r.choice(values)) for label, values in NEG.items()}
    slots["noun2"] = "{{noun|%s}}" % r.choice(NEG["noun"])
    slots["greet"] = "{{greeting|%s}}" % r.choice(GREETING[lang])
    return slots


@functools.lru_cache(maxsize=1)
def _crafted():
    """`crafted.py`, whose markup filling and record reading this corpus shares."""
    spec = importlib.util.spec_from_file_location("crafted", Path(__file__).with_name("crafted.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(locale: str, marked: str, origin: str, form: str) -> dict:
    return _crafted()._record(locale, marked, origin, form)


def _fill(template: str, slots: dict[str, str]) -> str:
    return _crafted()._mark(template, slots)


def build(n: int = 800, seed: int = 52) -> list[dict]:
    """`n` records: three name tickets for each ticket without a name; of the name tickets a
    fifth are written in lower case."""
    r = random.Random(seed)
    groups = sorted(GROUPS)
    langs = sorted(CHAT)
    records = []
    for i in range(n):
        if i % 4 == 3:
            lang, template = NEGATIVE[(i // 4) % len(NEGATIVE)]
            marked = _fill(template, _negatives(lang, r))
            records.append(_record(lang, marked, "-", "-"))
            continue
        k = i - i // 4  # the how-manyth name ticket
        lower = k % 5 == 0
        group = groups[k % len(groups)]
        form = "chat" if (k // 4) % 2 == 0 else "mail"
        lang = langs[(k // 3) % len(langs)]
        full, given = _written(group, r, lower)
        template = r.choice((CHAT if form == "chat" else MAIL)[lang])
        slots = _negatives(lang, r)
        slots["P"] = f"[[PERSON|{full}]]"
        slots["G"] = f"[[PERSON|{given}]]"
        records.append(_record(lang, _fill(template, slots), "lower" if lower else group, form))
    return records
