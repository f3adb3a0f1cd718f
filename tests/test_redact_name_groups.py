"""The name groups the rules found hardest: Korean names in Latin
letters, Irish names with Ó/Ní/O', family names of several words written first, names in
lower case, and a name after a greeting that a three-word window used to cut. Each case
was written for this file (none from a corpus) and failed before these rules."""

from __future__ import annotations

import importlib.util

import pytest

from paths import ROOT
from rlforge.ingest.redaction.redactor import Redactor

KEY = b"g" * 32

NAMES = [
    # Korean: a hyphenated given name of two syllables, a listed one-syllable surname
    ("Our buyer Hyun-woo Baek says the pallet never arrived.", "Hyun-woo Baek"),
    ("Regards,\nSeung-hee Kwon\nPurchasing", "Seung-hee Kwon"),
    ("Passenger AHN Ye-jin missed the 9:40 ferry.", "AHN Ye-jin"),
    ("Reviewer: Moon, Sung-ho", "Moon, Sung-ho"),
    ("Thanks Dae-jung, that worked.", "Dae-jung"),
    # Irish: Ó, Ní, Nic and Mac Giolla as particles, O' in capitals
    ("Invoice queries go to Tomás Ó Ceallacháin in accounts.", "Tomás Ó Ceallacháin"),
    ("Kind regards,\nBRÍD O'FLAHERTY\nFacilities", "BRÍD O'FLAHERTY"),
    ("Escalated by Ní Dhubhghaill, Úna (Payroll)", "Ní Dhubhghaill, Úna"),
    # family names of several words written first: before a comma, or in capitals
    ("Applicant: Magalhães Bittencourt, Renata Sofia", "Magalhães Bittencourt, Renata Sofia"),
    ("Titular: DO AMARAL PEIXOTO Gustavo Henrique", "DO AMARAL PEIXOTO Gustavo Henrique"),
    # surname, comma, given name after "I am", "soy", "aqui é" or under a closing line
    ("Buenas tardes, soy Urrutia, Itziar, de compras.", "Urrutia, Itziar"),
    ("Cheers Obiageli, that did it.", "Obiageli"),
    ("Hoi allemaal, Marieke van Dijk belt morgen terug.", "Marieke van Dijk"),
    # lower case: after a preposition of another language, alone under a closing line
    ("enviei o formulário para luciana barreto ontem", "luciana barreto"),
    ("proszę przekazać do bogumiła wójcik w księgowości", "bogumiła wójcik"),
    ("Saludos,\nmaite ó dálaigh\nCompras", "maite ó dálaigh"),
    # a greeting and two lower-case words before a name in capitals
    ("Merci de prévenir GIRAUDEAU Solène, elle gère les avoirs.", "GIRAUDEAU Solène"),
    # Brazilian names of several parts: a particle before a surname that is a common
    # Portuguese word too, a first given name the lists count as one, a chat mention, a
    # chat log's time stamp, a mail header's sender, a thanks word
    ("Encaminhei para Rosângela Teixeira de Barros ontem.", "Rosângela Teixeira de Barros"),
    ("Ontem Luiz Fernando Ribeiro dos Passos ligou duas vezes.", "Luiz Fernando Ribeiro dos Passos"),
    ("@Heloísa Ribeiro de Andrade olha a nota?", "Heloísa Ribeiro de Andrade"),
    ("@João dos Santos pode ver?", "João dos Santos"),
    ("[08:15] Marcos Vinícius Pereira da Fonseca: o caixa travou de novo",
     "Marcos Vinícius Pereira da Fonseca"),
    ("Von: Rosângela Teixeira de Barros\nBetreff: Kasse", "Rosângela Teixeira de Barros"),
    ("valeu Cristiano, resolvido", "Cristiano"),
    # a surname or given name that is a street word or ends like a street's name
    ("Juan Estrada Ruiz llamó ayer.", "Juan Estrada Ruiz"),
    ("Ronda Jansen called about the refund.", "Ronda Jansen"),
    ("Thanks to Anna Verlaan for the help.", "Anna Verlaan"),
    ("Graag terugbellen naar Sanne Vliersteeg vandaag.", "Sanne Vliersteeg"),
    # lower case after a chat time stamp, a mail header, a mention
    ("[07:58] renata albuquerque: o caixa travou", "renata albuquerque"),
    ("Von: jana köhler\nBetreff: Kasse", "jana köhler"),
    ("@ingrid solberg kannst du schauen?", "ingrid solberg"),
]

KEPT = [
    "The Check-in desk at the Set-up area needs a Pop-up banner.",
    "Top-up failed on the Hip-hop night tickets.",
    "Maria Santos van Platform Team asked for Legal to review it.",
    "Best regards,\nthe support team\nAcme Retail",
    "Thanks,\nsent from my phone",
    "Hallo Vertriebs-Team, Outlook Mobile stürzt seit Montag ab.",
    "Hallo Kundin, die Lieferung kommt am Freitag.",
    "Dzień dobry Kliencie, paczka jest w drodze.",
    "Number of reduces for job job_1445144423722_0020 = 1",  # a word said twice (Hadoop)
]


@pytest.mark.parametrize("text,name", NAMES)
def test_a_name_of_a_hard_group_is_redacted(text, name):
    out = Redactor(KEY).redact_text(text)
    left = [w for w in name.replace(",", " ").split() if w in out]
    assert not left and "<PERSON_" in out, out


@pytest.mark.parametrize("text", KEPT[:2] + KEPT[3:])
def test_words_of_the_same_shape_are_kept(text):
    assert Redactor(KEY).redact_text(text) == text


def test_a_name_stops_before_van_and_a_team():
    out = Redactor(KEY).redact_text(KEPT[2])
    assert "Maria" not in out and "Santos" not in out, out
    assert "Platform Team" in out and "Legal" in out, out
    out = Redactor(KEY).redact_text("Hola, soy Irene Baptista de Legal y el portal no carga.")
    assert "Irene" not in out and "Baptista" not in out and " de Legal y " in out, out
    out = Redactor(KEY).redact_text("Hoi klant, Marieke van Platform Team belt terug.")
    assert "Marieke" not in out and "van Platform Team" in out, out
    out = Redactor(KEY).redact_text("Escreve a Maria Clara da Costa Lima amanhã.")
    assert not {"Maria", "Clara", "Costa", "Lima"} & set(out.split()), out
    # "Data" is a prominent surname, but a word that is no surname goes on after it
    out = Redactor(KEY).redact_text("Hola, soy Ingrid Sandoval de Data Engineering y la VPN no va.")
    assert "Ingrid" not in out and " de Data Engineering y " in out, out


# Streets named without a house number, a brand and its town on a signature line, and
# greetings of a group: no person (each was one before).
STREETS_AND_BRANDS = [
    ("the branch on Jackson Street is closed since Monday", "Jackson Street"),
    ("a loja da Rua Maria Antônia fechou cedo", "Rua Maria Antônia"),
    ("we moved to Charles Square last year", "Charles Square"),
    ("Saludos,\nLucía Ortega\nAvenida Carlos Haya, Málaga", "Avenida Carlos Haya, Málaga"),
    ("Kind regards,\nAcme Berlin", "Acme Berlin"),
    ("Thanks,\nNordwind Hamburg\nSupport", "Nordwind Hamburg"),
    ("Saludos,\nMarta García\nTelco Sevilla", "Telco Sevilla"),
    ("Cordialement,\nAna Souza\nDirecteur Commercial, Mercedes Lisboa", "Mercedes Lisboa"),
    ("Liebe Kolleginnen, die Anlage fehlt.", "Liebe Kolleginnen"),
    ("Prezados, Heloísa Ribeiro está de férias.", "Prezados"),
]


@pytest.mark.parametrize("text,kept", STREETS_AND_BRANDS)
def test_streets_brands_and_groups_are_no_person(text, kept):
    out = Redactor(KEY).redact_text(text)
    assert kept in out, out


def test_a_person_named_like_a_place_is_still_one():
    out = Redactor(KEY).redact_text("Kind regards,\nAnna Berlin")
    assert "Anna" not in out and "Berlin" not in out, out
    # under a signature's name, a person a lead names is one still
    out = Redactor(KEY).redact_text("Kind regards,\nTom Becker\nCC: Mary Jones")
    assert "Tom" not in out and "Mary" not in out and "Jones" not in out, out


@pytest.mark.parametrize("word,shape", [("seo-yeon", True), ("ji-hoon", True), ("hye-jin", True),
                                        ("soo-ah", True), ("check-in", True), ("plug-in", False),
                                        ("e-mail", False), ("anna-maria", False)])
def test_korean_given_names_are_two_syllables(word, shape):
    from rlforge.ingest.redaction import korean

    assert korean.given_shape(word) is shape


def test_common_word_pairs_are_no_korean_given_names():
    from rlforge.ingest.redaction import korean

    common = {"check", "in", "pop", "up"}
    assert not korean.given("check-in", common) and not korean.given("pop-up", common)
    assert korean.given("ji-hoon", common)


def _crafted():
    spec = importlib.util.spec_from_file_location("crafted", ROOT / "tests" / "redaction_corpus" / "crafted.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_chatmail_corpus_floor():
    """`chatmail.py`, held out until session 53 tuned on it: a floor at its figure then
    (PERSON 0.880, hard negatives kept 0.9936; 0.545 and 0.9710 before), and Brazilian
    names, whose recall a rule for "de Legal" had cut from 0.583 to 0.358, at 0.95."""
    from test_redact_corpus import score_heldout

    spec = importlib.util.spec_from_file_location("chatmail", ROOT / "tests" / "redaction_corpus" / "chatmail.py")
    assert spec is not None and spec.loader is not None
    chatmail = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(chatmail)
    records = chatmail.build(800)
    red = Redactor(b"corpus-key")
    r = score_heldout(red, records)
    recall = r["caught"]["PERSON"] / r["planted"]["PERSON"]
    kept = sum(r["kept"].values()) / sum(r["negatives"].values())
    brazilian = score_heldout(red, [rec for rec in records if rec["origin"] == "brazilian"])
    brazilian_recall = brazilian["caught"]["PERSON"] / brazilian["planted"]["PERSON"]
    print(f"\nchatmail: PERSON {recall:.3f} (Brazilian {brazilian_recall:.3f}), negatives kept {kept:.4f}")
    assert recall >= 0.86 and kept >= 0.99 and brazilian_recall >= 0.95


def test_crafted_corpus_floor():
    """`crafted.py`, tuned on by session 52: a floor at its figure then (PERSON 0.809,
    hard negatives kept 0.982; 0.713 and 0.974 before), so a change can only raise it."""
    from test_redact_corpus import score_heldout

    r = score_heldout(Redactor(b"corpus-key"), _crafted().build(1200))
    recall = r["caught"]["PERSON"] / r["planted"]["PERSON"]
    kept = sum(r["kept"].values()) / sum(r["negatives"].values())
    print(f"\ncrafted: PERSON {recall:.3f}, negatives kept {kept:.4f}")
    assert recall >= 0.80 and kept >= 0.98
