"""Redaction of prose secrets and numbers across languages: passwords, PINs and one-time
codes after a word, dates of birth by context, checksummed national ids, obfuscated
e-mails, e-mails after an account word and national phone shapes; and the hard negatives
each rule must leave alone."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import polars as pl
import pytest

from rlforge.ingest.redaction import numbers
from rlforge.ingest.redaction.redactor import Redactor

KEY = bytes(range(32))


def shape(text: str) -> str:
    return re.sub(r"<([A-Z][A-Z0-9_]*)_[0-9a-f]{6}>", r"<\1>", text)


@pytest.fixture(scope="module")
def red() -> Redactor:
    return Redactor(KEY)


POSITIVES = [
    # passwords, PINs and one-time codes (es, de, fr, pt, pl, en)
    ("Clave: Hunter2004*", "Clave: <PASSWORD>"),
    ("He cambiado la contraseña a Bella2020# esta mañana.", "He cambiado la contraseña a <PASSWORD> esta mañana."),
    ("mein Passwort ist Sommer2021!", "mein Passwort ist <PASSWORD>"),
    ("J'ai remplacé mon mot de passe par Lune1984!", "J'ai remplacé mon mot de passe par <PASSWORD>"),
    ("Mudei a senha para Praia1999! ontem.", "Mudei a senha para <PASSWORD> ontem."),
    ("Hasło: Wiosna2020$", "Hasło: <PASSWORD>"),
    ("PIN 4821", "PIN <PASSWORD>"),
    ("The PIN for the card is 4821.", "The PIN for the card is <PASSWORD>."),
    ("No me llega el código de verificación 482913.", "No me llega el código de verificación <PASSWORD>."),
    ("Kod weryfikacyjny 120934 nie działa.", "Kod weryfikacyjny <PASSWORD> nie działa."),
    # dates of birth, the cue before or after the date
    ("Nacida el 27/09/1972 en Sevilla.", "Nacida el <DOB> en Sevilla."),
    ("Ich bin am 27.10.1949 geboren.", "Ich bin am <DOB> geboren."),
    ("Data urodzenia: 14.05.1973", "Data urodzenia: <DOB>"),
    ("Nasci em 08-11-1994.", "Nasci em <DOB>."),
    ("Fecha de nacimiento: 30-03-1959", "Fecha de nacimiento: <DOB>"),
    # national ids, by checksum (with and without a cue)
    ("Mi DNI es 12345678Z.", "Mi DNI es <NATIONAL_ID>."),
    ("NIE X1234567L, por favor.", "NIE <NATIONAL_ID>, por favor."),
    ("titular 12345678Z", "titular <NATIONAL_ID>"),
    ("Mój PESEL to 44051401359.", "Mój PESEL to <NATIONAL_ID>."),
    ("O meu NIF é 123456789.", "O meu NIF é <NATIONAL_ID>."),
    ("Mon numéro national est le 85.07.30-033.28.", "Mon numéro national est le <NATIONAL_ID>."),
    ("client 85.07.30-033.28", "client <NATIONAL_ID>"),
    ("personnummer 811218-9876", "personnummer <NATIONAL_ID>"),
    ("id 811218-9876 ok", "id <NATIONAL_ID> ok"),
    # e-mails: obfuscated, and after an account word
    ("Write to maria dot rossi at gmail dot com.", "Write to <EMAIL>."),
    ("Write to me at maria dot rossi at gmail dot com.", "Write to me at <EMAIL>."),
    ("maria [at] gmail [dot] com", "<EMAIL>"),
    ("Mail: maria(at)gmail.com", "Mail: <EMAIL>"),
    ("Konto: m.schmitz@gmail.com", "Konto: <EMAIL>"),
    ("Cuenta: ana_lopez@yahoo.es", "Cuenta: <EMAIL>"),
    # a plain address after prose " at " stays an address (the spelled rule must not eat it)
    ("mail me at jane.doe@example.com", "mail me at <EMAIL>"),
    ("write to us at support.team@corp.example.co.uk today", "write to us at <EMAIL> today"),
    # national phone shapes
    ("Tagsüber unter 030 / 6246 8152 erreichbar.", "Tagsüber unter <PHONE> erreichbar."),
    ("Fax 089/2345678", "Fax <PHONE>"),
    ("Mi móvil es el 612 34 56 78.", "Mi móvil es el <PHONE>."),
    ("Escríbeme o llama al +34 612 345 678.", "Escríbeme o llama al <PHONE>."),
    ("Mi móvil es el 622552656.", "Mi móvil es el <PHONE>."),
    ("Mój numer telefonu to 512 345 678.", "Mój numer telefonu to <PHONE>."),
]


@pytest.mark.parametrize("text,expected", POSITIVES)
def test_prose_secrets_dates_ids_emails_and_phones(red, text, expected):
    assert shape(red.redact_text(text)) == expected
    assert red.redact_series(pl.Series([text])).to_list() == [red.redact_text(text)]


NEGATIVES = [
    "I forgot my password and the password reset link has expired.",
    "Olvidé mi contraseña y el enlace para restablecerla caducó.",
    "Der Link zum Zurücksetzen des Passworts funktioniert nicht.",
    "The page shows the code 404 error after login.",
    "Es kommt Fehlercode 503.",
    "Order 1234567890 was placed on 12/03/2024.",
    "El pedido 84512397 del 03/11/2024 costó €45,90.",
    "Zamówienie 48213977 z dnia 12.03.2025 kosztowało zł 120,00.",
    "on 12/03/2024 I ordered two chairs",
    "Ich habe am 12.03.2024 bestellt.",
    "Numer klienta 44051401358.",  # a PESEL's shape with a wrong check digit
    "Referencia 12345678A",  # a DNI's shape with a wrong letter
    "Tracking 85.07.30-033.29 on the label",  # a Belgian number's shape, wrong check
    "build 811218-9875",  # a personnummer's shape failing Luhn
    "It costs €1 234,56 and $2,300.",
    "I'll be at home at 5pm.",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_hard_negatives_of_the_new_rules_survive(red, text):
    assert red.redact_text(text) == text


@pytest.mark.parametrize("ok,good,bad", [
    (numbers.dni_ok, ["12345678Z", "X1234567L", "Z8253659E"], ["12345678A", "X1234567Z", "1234567Z"]),
    (numbers.pesel_ok, ["44051401359"], ["44051401358", "44133101354"]),
    (numbers.nif_pt_ok, ["123456789"], ["123456780", "423456789"]),
    (numbers.be_number_ok, ["85073003328"], ["85073003329"]),
    (numbers.personnummer_ok, ["8112189876", "198112189876"], ["8112189875", "8113189876"]),
])
def test_national_id_checksums(ok, good, bad):
    assert all(ok(x) for x in good) and not any(ok(x) for x in bad)


def _prose_forms():
    spec = importlib.util.spec_from_file_location("prose_forms", Path(__file__).parent / "redaction_corpus" / "prose_forms.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FORMS = _prose_forms()


@pytest.mark.parametrize("text,expected", FORMS.POSITIVES)
def test_prose_forms_of_the_eight_languages(red, text, expected):
    assert shape(red.redact_text(text)) == expected
    assert red.redact_series(pl.Series([text])).to_list() == [red.redact_text(text)]


@pytest.mark.parametrize("text", FORMS.NEGATIVES)
def test_hard_negatives_beside_the_prose_forms_survive(red, text):
    assert red.redact_text(text) == text
    assert red.redact_series(pl.Series([text])).to_list() == [text]


@pytest.mark.parametrize("text,iso", [
    ("3 de marzo de 1985", "1985-03-03"), ("21 de abril de 1988", "1988-04-21"),
    ("3 março 1985", "1985-03-03"), ("12 stycznia 1979", "1979-01-12"),
    ("3rd March 1985", "1985-03-03"), ("1er mars 1985", "1985-03-01"),
    ("12-Feb-1979", "1979-02-12"), ("3. März 1985", "1985-03-03"),
])
def test_birth_date_reads_months_in_words(text, iso):
    assert numbers.birth_date(text) == iso


def test_spaced_nir_needs_its_key():
    assert numbers.national_id("2 87 06 89 966 862 57") == ("NATIONAL_ID", "287068996686257")
    assert numbers.national_id("2 87 06 89 966 862 58") is None
