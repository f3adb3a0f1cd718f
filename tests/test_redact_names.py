"""Person names without a closed list (issue 38): the large name lists and their cache,
names in any letter case, initials, surname first, sign-offs on one line, an e-mail after
a name; the hand-labelled real text; the model-based recognizer seam."""

from __future__ import annotations

import importlib.util
import json
import re
import time

import duckdb
import pytest

from paths import ROOT, SHARED_DATA
from rlforge.errors import UnknownName, UserError
from rlforge.ingest.redaction import name_lists, pinyin
from rlforge.ingest.redaction.recognizers import get_recognizer, register_recognizer
from rlforge.ingest.redaction.redactor import Redactor

KEY = b"n" * 32
CORPUS_DIR = ROOT / "tests" / "redaction_corpus"


def _kept(text: str) -> set[str]:
    """The words of `text` the redactor leaves."""
    return set(Redactor(KEY).redact_text(text).split())


# Each: a text, the name in it (every word of it must be gone).
NAMES = [
    ("hi maria, my order is late", "maria"),
    ("regards,\nanna kowalska", "anna kowalska"),
    ("Customer ROSSI Mario has not received the order.", "ROSSI Mario"),
    ("Please ask M. Rossi about it", "M. Rossi"),
    ("Approved: Y. Sato, team lead", "Y. Sato"),
    ("Ticket raised by Duan, Jing this morning.", "Duan, Jing"),
    ("Un saludo, Marta López", "Marta López"),
    ("Pozdrawiam, Mieczysława Drewnowska", "Mieczysława Drewnowska"),
    ("This is Xiaoming Wang from accounts.", "Xiaoming Wang"),
    ("I talked to Oluwaseun Adeyemi yesterday", "Oluwaseun Adeyemi"),
    ("I am Mehmet Yilmaz", "Mehmet Yilmaz"),
    ("Tao Liang <t.liang@gmail.com> asked for a refund.", "Tao Liang"),
    ("G'day [~leo.papadopoulos]!", "leo.papadopoulos"),
]
# Capitalised words, products, places and common words the lists alone must not make names.
KEPT = [
    "Thank you for the Data Center update from Apple Pay",
    "we use Google Cloud and Microsoft Teams",
    "The Grand Canyon is in Arizona",
    "It costs €1182,98 per seat in Lake Troy.",
    "scsi0 : LSI Logic MegaRAID driver",
    "thank you very much",
    "I'm caling to make a complaint",
    "Paris, France",
    "Kundennummer 48213377 steht auf der Rechnung.",
]


# Written for session 50, not drawn from a generator or a corpus: a Chinese surname in
# capitals before a one-syllable given name, `Surname, Given` with a common surname or
# particles, and lower-case names after a cue word; and what must stay beside them.
STYLE_NAMES = [
    ("Passenger QIAO Lan missed the flight.", "QIAO Lan"),
    ("Filed by Hoffmann, Annelie this morning.", "Hoffmann, Annelie"),
    ("Approved by Brandt, Liselotte", "Brandt, Liselotte"),
    ("Signed: van der Linden, Femke", "van der Linden, Femke"),
    ("the parcel was collected by yusuf demirci on friday", "yusuf demirci"),
    ("cc ingrid halvorsen - please check the stock", "ingrid halvorsen"),
    ("please forward to ahmet yilmazer in accounting", "ahmet yilmazer"),
]
KEPT_NEAR_STYLES = [
    "Our Hong Kong office moved to a new floor.",
    "The Hong Kong team and the Yin Yang spa.",
    "Meet at Long Beach, then Fang Sun Plaza.",
    "The China Change programme starts in May.",
    "we paid by credit card yesterday",
    "is it possible to inform of a problem with noline payment?",
    "I sent it to the support team with my order number",
    "please forward this to the billing dept",
    "send it by fedex ground please",
]


@pytest.mark.parametrize("text,name", NAMES + STYLE_NAMES)
def test_a_name_is_redacted_whatever_its_shape(text, name):
    out = Redactor(KEY).redact_text(text)
    left = [w for w in name.replace(",", " ").split() if w in out.split() or w in out]
    assert not left and "<PERSON_" in out, out


@pytest.mark.parametrize("text", KEPT + KEPT_NEAR_STYLES)
def test_non_names_are_kept(text):
    assert Redactor(KEY).redact_text(text) == text


# Written for issue 38's second round, not drawn from a generator: names whose words are
# rare or in no list, in letters beyond Latin-1, surname first, three words before an
# e-mail, under a closing line of a few words; and pairs of words that the long tail of
# the lists also holds, which must stay.
RARE_NAMES = [
    ("I spoke with Phạm Minh Tuấn yesterday about the refund.", "Phạm Minh Tuấn"),
    ("Approved by Trần Văn Hùng on Monday.", "Trần Văn Hùng"),
    ("Copy to Ngô Bảo Châu in finance, please.", "Ngô Bảo Châu"),
    ("Bestellung bitte an B. van der Heijden schicken.", "B. van der Heijden"),
    ("Customer OKONKWO Chinedu has not paid the invoice.", "OKONKWO Chinedu"),
    ("Customer SZYMAŃSKA Bożena asked to close the account.", "SZYMAŃSKA Bożena"),
    ("Thanks for your patience!\nSiobhán", "Siobhán"),
    ("Grazie mille per l'aiuto!\nGiuseppina", "Giuseppina"),
    ("Dziękuję za pomoc!\nJadwiga", "Jadwiga"),
    ("Dolores Ibárruri Gómez <dolores@example.org> asked about the order.", "Dolores Ibárruri Gómez"),
]
KEPT_NEAR_NAMES = [
    "Hope Valley and Green Park stores are closed.",
    "KERNEL FATAL machine check interrupt",
    "Cisco Webex and Azure DevOps fail to sync.",
    "Kernel Module loaded, Full Duplex link up.",
]


@pytest.mark.parametrize("word,count", [("xiuying", 2), ("jianguo", 2), ("wang", 1), ("zhuang", 1),
                                        ("xian", 1), ("maria", 0), ("strength", 0), ("kernel", 0)])
def test_pinyin_words_are_split_into_syllables(word, count):
    assert pinyin.syllables(word) == count


def _assert_person_covers(text: str, name: str) -> None:
    """Every word of `name` in `text` lies in a PERSON span."""
    red = Redactor(KEY)
    start = text.index(name)
    covered = [any(s <= start + m.start() and e >= start + m.end() for s, e, kind in red.find(text)
                   if kind == "PERSON") for m in re.finditer(r"\w+", name)]
    assert all(covered), (red.redact_text(text), covered)


@pytest.mark.parametrize("text,name", RARE_NAMES)
def test_a_name_beyond_the_curated_lists_is_redacted(text, name):
    _assert_person_covers(text, name)


@pytest.mark.parametrize("text", KEPT_NEAR_NAMES)
def test_words_the_long_name_lists_hold_are_kept(text):
    assert Redactor(KEY).find(text) == []


def test_case_of_a_name_does_not_change_its_pseudonym():
    r = Redactor(KEY)
    assert r.redact_text("Regards,\nAnna Kowalska") == r.redact_text("Regards,\nanna kowalska")


# --- the name lists --------------------------------------------------------------------------

def test_name_lists_are_large_and_leave_common_words_out():
    lists = name_lists.load()
    assert len(lists.given) > 100_000 and len(lists.surnames) > 100_000
    for given, surname in [("xiaoming", "wang"), ("oluwaseun", "adeyemi"), ("mehmet", "yilmaz"),
                           ("priya", "sharma"), ("thi", "nguyen")]:
        assert given in lists.given and surname in lists.surnames
    # listed somewhere as a name, yet a common word: no evidence alone
    for word in ("best", "data", "love"):
        assert word in lists.given and word in lists.common
    assert "zzqxv" not in lists.given and "zzqxv" not in lists.surnames


@pytest.mark.slow
def test_name_lists_are_derived_once_then_read_from_the_cache(tmp_path):
    name_lists.load.cache_clear()
    probe = ["xiaoming", "wang", "best", "printer", "zzqxv", "oluwaseun", "kowalska"]
    try:
        start = time.perf_counter()
        built = name_lists.load(tmp_path)
        build_s = time.perf_counter() - start
        (cached,) = tmp_path.glob("names-*.table")
        assert cached.stat().st_size < 40_000_000  # 1.4M words, mapped, not read whole
        name_lists.load.cache_clear()
        start = time.perf_counter()
        again = name_lists.load(tmp_path)
        read_s = time.perf_counter() - start
        assert read_s < 1 and read_s < build_s / 20, (build_s, read_s)
        assert [len(x) for x in again] == [len(x) for x in built]
        assert [[w in x for w in probe] for x in again] == [[w in x for w in probe] for x in built]
        # a file cut short is derived again, not read as lists with holes
        whole = cached.stat().st_size
        cached.write_bytes(cached.read_bytes()[:-8])
        name_lists.load.cache_clear()
        assert [len(x) for x in name_lists.load(tmp_path)] == [len(x) for x in built]
        assert cached.stat().st_size == whole
    finally:
        name_lists.load.cache_clear()


def test_without_names_dataset_the_given_names_of_gender_guesser_remain(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "names_dataset" else real(name, *a))
    name_lists.load.cache_clear()
    try:
        lists = name_lists.load()
        assert "anna" in lists.given and not lists.surnames
    finally:
        name_lists.load.cache_clear()


# --- corpora ---------------------------------------------------------------------------------

def _corpus(name: str):
    spec = importlib.util.spec_from_file_location(name, CORPUS_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _score(records):
    from test_redact_corpus import score_heldout

    r = score_heldout(Redactor(KEY), records)
    recall = {k: r["caught"][k] / r["planted"][k] for k in r["planted"]}
    kept = sum(r["kept"].values()) / sum(r["negatives"].values())
    return recall, kept, r


@pytest.mark.skipif(not (SHARED_DATA / "tickets" / "bitext").exists(), reason="shared data absent")
def test_hand_labelled_real_text():
    records = _corpus("real").build()
    recall, kept, r = _score(records)
    print(f"\nreal text: {r['planted']['PERSON']} names, recall {recall}; negatives kept {kept:.4f}")
    assert r["planted"]["PERSON"] > 150 and sum(r["negatives"].values()) > 3000
    assert recall["PERSON"] >= 0.95 and kept >= 0.99, r["missed"]["PERSON"]


def test_real_labels_point_at_text_that_holds_them():
    labels = json.loads((CORPUS_DIR / "real_labels.json").read_text(encoding="utf-8"))
    rows = [row for rows in labels["bitext"]["PERSON"].values() for row in rows]
    assert len(rows) == len(set(rows)) == 161


@pytest.mark.slow
def test_second_generator_names_and_negatives():
    recall, kept, r = _score(_corpus("second").build(2000))
    print(f"\nsecond corpus: recall {recall}; negatives kept {kept:.4f}")
    assert recall["PERSON"] >= 0.95 and kept >= 0.99
    assert all(v >= 0.95 for v in recall.values()), recall


@pytest.mark.slow
def test_name_styles_floor():
    """Names in ten writing styles from fifteen countries: a floor at today's figure
    (0.86 on 2,000 records after session 50; the target is 0.95, see the README), so that
    a change can only raise it."""
    recall, kept, r = _score(_corpus("name_styles").build(3300))
    print(f"\nname styles: recall {recall}; negatives kept {kept:.4f}")
    assert recall["PERSON"] >= 0.84 and kept >= 0.99


# --- the model-based recognizer seam -----------------------------------------------------------

@register_recognizer("listed-test")
class ListedNames:
    """A stand-in for a model: "finds" the words of its model argument (comma-separated),
    registered as a plug-in's recognizer is."""

    def __init__(self, model: str):
        self.words = [w for w in model.split(",") if w]

    def find(self, texts):
        out = []
        for t in texts:
            spans = []
            for w in self.words:
                at = t.find(w)
                while at >= 0:
                    spans.append((at, at + len(w)))
                    at = t.find(w, at + 1)
            out.append(spans)
        return out


def test_recognizer_names_are_redacted_in_text_series_and_findings():
    import polars as pl

    red = Redactor(KEY, recognizer=get_recognizer("listed-test:Quimby,zed"))
    text = "the parcel for zed went to Quimby, mail bob@example.com"
    out = red.redact_text(text)
    assert "Quimby" not in out and " zed " not in out and "<EMAIL_" in out
    assert red.redact_series(pl.Series([text, None])).to_list() == [out, None]
    assert {k for *_, k, _ in red.findings(text)} == {"PERSON", "EMAIL"}
    assert Redactor(KEY).redact_text(text).count("Quimby") == 1  # the rules alone miss one
    assert red.redact_text(out) == out  # never inside a placeholder


def test_recognizer_setting_through_ingest(cli, tmp_path):
    (tmp_path / "t.csv").write_text("id,subject,description\n1,Late,\"ask quimby about it\"\n",
                                    encoding="utf-8")
    db_path = tmp_path / "s.duckdb"
    (tmp_path / "rlforge.toml").write_text('[redaction]\nrecognizer = "listed-test:quimby"\n',
                                           encoding="utf-8")
    assert cli("--db", db_path, "ingest", "tickets", tmp_path / "t.csv").exit_code == 0
    con = duckdb.connect(str(db_path), read_only=True)
    stored = " ".join(str(v) for row in con.execute("SELECT * FROM tickets").fetchall() for v in row)
    con.close()
    assert "quimby" not in stored and "<PERSON_" in stored


def test_unknown_or_missing_recognizer_says_what_to_do():
    with pytest.raises(UnknownName, match="listed-test"):
        get_recognizer("no-such-model:x")
    if importlib.util.find_spec("spacy") is None:
        with pytest.raises(UserError, match="pip install spacy"):
            get_recognizer("spacy:en_core_web_sm")
    else:
        with pytest.raises(UserError, match="never downloads"):
            get_recognizer("spacy:surely_not_an_installed_model")


# --- session 51: look-alikes the lists hold, and names of many parts ---------------------------
# Written for session 51, not drawn from a corpus: a product named by a plural of a common
# word after a word the long lists hold as a given name; places of two or more name words
# (a country or region, or a word or two of one); and Portuguese names of three or more parts,
# each of them a frequent word of its language as well, which must be redacted.
KEPT_LOOKALIKES = [
    "Orders of Pixel Buds are late.",
    "Please restock Magic Beans and Pixel Buds.",
    "Shipping to Monte Carlo takes a week.",
    "Orders from Sierra Leone are stuck in customs.",
]
KEPT_PLACES = [
    "The store in Rio Grande do Sul is closed.",
    "The Santa Cruz de Tenerife office reopens on Monday.",
]


@pytest.mark.parametrize("text", KEPT_LOOKALIKES + KEPT_PLACES)
def test_plurals_and_places_of_name_words_are_kept(text):
    assert Redactor(KEY).find(text) == []


def test_a_plural_is_no_surname_unless_a_prominent_one():
    """A capitalised plural of a common word stays; a prominent surname that is one is
    still a surname ("Amber Rivers", "Mark Brooks")."""
    red = Redactor(KEY)
    assert red.find("The Pixel Buds case is cracked.") == []
    for text, name in (("Please call Amber Rivers today.", "Amber Rivers"),
                       ("Ticket from Mark Brooks about billing.", "Mark Brooks")):
        assert [(text[s:e], kind) for s, e, kind in red.find(text)] == [(name, "PERSON")]


# --- session 55: a title or initials after a weak lead; one surname after a title stops at
# a team; a surname and a given name that are frequent words too, where they open a clause.
# Written for session 55, not drawn from a corpus; each failed before its rule.
LED_NAMES = [
    ("Buenos días, soy T. Okafor y llamo por la factura.", "T. Okafor", ""),
    ("Merci de rappeler M. Brisebois avant midi.", "M. Brisebois", ""),
    ("Je suis M. Lefebvre de Marketing Digital, bonjour.", "M. Lefebvre", "Marketing Digital"),
    ("Hola, soy Sra. Ibarra de Data Science y el panel no carga.", "Ibarra", "Data Science"),
    ("Dag, met dhr. Bakker van Facilities hier.", "Bakker", "Facilities"),
    ("Participants: Silva, Mariana and two guests.", "Silva, Mariana", ""),
    ("Owner: Torres, Lucía", "Torres, Lucía", ""),
]
# A brand and its town, a job and a company, under a signature: no "Surname, Given".
KEPT_UNDER_SIGNATURES = [
    "Mit freundlichen Grüßen\nHerr Aminu\nMarks, Leeds",
    "Best regards\nMs Oduya\nChief Operating Officer, Porter Logistics",
]


@pytest.mark.parametrize("text,name,kept", LED_NAMES)
def test_a_name_after_a_lead_title_or_initials_and_what_stays_beside_it(text, name, kept):
    red = Redactor(KEY)
    spans = [(text[s:e], kind) for s, e, kind in red.find(text)]
    assert spans == [(name, "PERSON")], spans
    assert kept in red.redact_text(text)


@pytest.mark.parametrize("text", KEPT_UNDER_SIGNATURES)
def test_signature_companies_make_no_surname_comma_given(text):
    red = Redactor(KEY)
    out = red.redact_text(text)
    assert out.splitlines()[-1] == text.splitlines()[-1], out


# --- session 55: a long lower-case name that a line holds alone: a chat line's speaker, a
# mail header's sender, a signature under a closing line. Its words may be frequent words
# too ("dores", "joana"); a given name first and a surname last make it a name.
WHOLE_LINE_NAMES = [
    ("[08:05] rosário fernanda das neves quintela: o relatório não abre", "rosário fernanda das neves quintela"),
    ("Van: luiz otávio de souza barreto\nVerzonden: woensdag 2 juli", "luiz otávio de souza barreto"),
    ("Atenciosamente,\nmaria josé dos prazeres lopes\nGerente de Loja", "maria josé dos prazeres lopes"),
]
KEPT_WHOLE_LINES = [
    "[08:05] night shift: restarted the export",
    "From: the billing system\nSent: Monday",
    "Thanks,\nwill do",
]


@pytest.mark.parametrize("text,name", WHOLE_LINE_NAMES)
def test_a_long_lower_case_name_alone_on_its_line(text, name):
    red = Redactor(KEY)
    assert [(text[s:e], kind) for s, e, kind in red.find(text)] == [(name, "PERSON")]


@pytest.mark.parametrize("text", KEPT_WHOLE_LINES)
def test_lower_case_lines_of_other_words_are_kept(text):
    assert Redactor(KEY).find(text) == []


# --- session 55: a name after words that ask for a call back; a lower-case name after a cue
# whose surname is a frequent word too; a Title-case name does not run on into lower-case
# words the lists hold ("Oduya na loja da …").
CALLED_NAMES = [
    ("Pourriez-vous rappeler Ingrid avant 17 h ?", "Ingrid"),
    ("Por favor, llamad a Benedikt mañana por la mañana.", "Benedikt"),
    ("Proszę zadzwonić do Radosław jutro.", "Radosław"),
    ("the form was sent to rosângela torres last week", "rosângela torres"),
    ("cc vilmos kiss - please confirm the refund", "vilmos kiss"),
]


@pytest.mark.parametrize("text,name", CALLED_NAMES)
def test_a_name_after_a_call_back_or_a_lower_case_cue(text, name):
    red = Redactor(KEY)
    assert [(text[s:e], kind) for s, e, kind in red.find(text)] == [(name, "PERSON")]


def test_a_title_case_name_stops_before_lower_case_words():
    text = "Favor retornar a ligação para Papadakis na loja da Rua Augusta."
    found = [(text[s:e], kind) for s, e, kind in Redactor(KEY).find(text)]
    assert ("Papadakis", "PERSON") in found and not any("loja" in v for v, _ in found), found


def test_a_rare_surname_in_capitals_before_a_given_name_no_list_holds():
    """Surname first, in capitals, then a given name in no list ("HAUGLAND Torbjørnine"); an
    upper-case common word before a capitalised one stays ("GOLD Member")."""
    red = Redactor(KEY)
    text = "Booking holder HAUGLAND Torbjørnine asked for a refund."
    assert [(text[s:e], kind) for s, e, kind in red.find(text)] == [("HAUGLAND Torbjørnine", "PERSON")]
    assert red.find("The GOLD Member plan renews today.") == []
