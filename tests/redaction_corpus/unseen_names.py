"""A fifth corpus, for person names only, written for session 50 before its name rules and
not tuned on: names from sources no other corpus uses, in ticket sentences no other corpus
uses.

Why: `name_styles.py` taught the rules of issue 38's second round what it could, so it no
longer says how the rules do on names they were not made from. This corpus was written and
scored once before any rule of session 50 changed, and is scored once again at the end; a
miss here is reported, not fixed by a rule made from it.

Sources of the names (none of them a list the detector reads, none used by another corpus):
Chinese names in pinyin and Brazilian multi-part names with `da/de/do/dos/das`, both built
from parts written by hand for this file; and `faker` locales that no other corpus draws
from (pt_PT, cs_CZ, hu_HU, ro_RO, sv_SE, fi_FI, en_IE, id_ID, es_AR, da_DK). The sentences
were written for this file. Hard negatives: sentences with products, places, companies and
capitalised common words, and capitalised word pairs beside the names, kept whole.

``locale`` is the writing style; ``origin`` the source of the name (``-`` for a negative
record). Same seed, same corpus: ``build(n, seed)`` (300 name tickets and 100 negatives at
the default ``n=400``).
"""

from __future__ import annotations

import functools
import importlib.util
import random
from pathlib import Path

# Chinese names in pinyin, parts written by hand (surname, then given name when native).
ZH_SURNAMES = ("Wang", "Li", "Zhang", "Liu", "Chen", "Yang", "Huang", "Zhao", "Zhou", "Xu", "Sun",
               "Zhu", "Guo", "Gao", "Lin", "Luo", "Zheng", "Liang", "Xie", "Tang", "Deng", "Feng",
               "Cao", "Peng", "Zeng", "Xiao", "Tian", "Dong", "Pan", "Yuan", "Cai", "Jiang", "Du",
               "Ye", "Cheng", "Su", "Ding", "Ren", "Shen", "Zhong", "Cui", "Tan", "Fan", "Jin",
               "Shi", "Liao", "Jia", "Xia", "Fu", "Fang", "Zou", "Meng", "Xiong", "Qin", "Qiu",
               "Hou", "Yin", "Xue", "Duan", "Lei", "Hao", "Gu", "Gong", "Shao", "Qian", "Dai",
               "Kong", "Xiang", "Mo", "Bai")
ZH_GIVEN = ("Jianguo", "Xiuying", "Haoran", "Yuxuan", "Zihan", "Zimo", "Yichen", "Ruoxi", "Shiyu",
            "Mingzhe", "Junjie", "Xinyi", "Yutong", "Kaiwen", "Siqi", "Wenjing", "Zhiqiang",
            "Lihua", "Guoqiang", "Hongmei", "Yanling", "Jiahui", "Tianyu", "Zeyu", "Haoyu",
            "Shuang", "Jing", "Tao", "Min", "Qiang", "Hui", "Xin", "Yue", "Chao", "Rui",
            "Xiaoling", "Chunyan", "Meiling", "Jinhua", "Weiming", "Dongmei", "Xuefeng",
            "Yongjun", "Qingyun", "Zhenhua", "Huimin", "Yiming", "Bowen", "Haotian", "Muchen",
            "Xinran", "Yanan", "Luyao", "Ziyi", "Yiran", "Shuhan", "Kexin", "Jiayi", "Wanqing",
            "Zixuan", "Ruihan", "Chenxi", "Jingyi", "Xiaoyu", "Mengyao", "Yifei", "Yuhang",
            "Sirui", "Anqi", "Qianyu")
# Brazilian names, parts written by hand: one or two given names, then two or three
# surnames with the particles between them.
BR_GIVEN = ("Ana", "Maria", "João", "Luiz", "Francisca", "Antônio", "Thaís", "Raimundo",
            "Gabriela", "Paulo", "Rafaela", "Thiago", "Larissa", "Rodrigo", "Juliana", "Marcos",
            "Letícia", "Vinícius", "Bruna", "Sebastião", "Conceição", "Leandro", "Aparecida",
            "Wellington", "Jéssica", "Edivaldo", "Rosângela", "Cleiton", "Luana", "Josué")
BR_SECOND = ("Carolina", "Pedro", "Eduarda", "Fernando", "Henrique", "Cristina", "Clara",
             "Gustavo", "Vitória", "Augusto", "Beatriz", "Vitor", "Helena", "Miguel", "Júlia")
BR_SURNAMES = ("Santos", "Oliveira", "Silva", "Costa", "Souza", "Lima", "Alves", "Andrade",
               "Chagas", "Ferreira", "Pereira", "Reis", "Nogueira", "Rocha", "Nascimento",
               "Cardoso", "Teixeira", "Carvalho", "Araújo", "Ribeiro", "Gomes", "Barbosa",
               "Moura", "Cavalcanti", "Albuquerque", "Medeiros", "Bezerra", "Freitas",
               "Conceição", "Assunção", "Monteiro", "Guimarães", "Siqueira", "Prado")
BR_PARTICLES = ("da", "de", "do", "dos", "das")
FAKER_ORIGINS = ("pt_PT", "cs_CZ", "hu_HU", "ro_RO", "sv_SE", "fi_FI", "en_IE", "id_ID", "es_AR",
                 "da_DK")
ORIGINS = ("zh_pinyin", "pt_BR_parts", *FAKER_ORIGINS)

# {n}: the name as the style writes it; {g}: the given name alone; {e}: an e-mail.
STYLES = {
    "in_sentence": ["Yesterday {n} from our Lyon office called about the invoice.",
                    "The contract was countersigned by {n} and sent back on Friday.",
                    "According to {n} the firmware update bricked two of the scanners.",
                    "We were told by {n} that the credit note is on its way."],
    "lower_context": ["spoke to {n} on the phone, she says it is fixed now",
                      "assigned to {n} since tuesday, no update",
                      "{n} here again, still no refund for the broken kettle",
                      "cc {n} - can you check the warehouse stock?"],
    "surname_first": ["Passenger {n} missed the connection in Madrid.",
                      "Account holder {n} disputes the March charge.",
                      "Applicant {n} uploaded the wrong passport scan."],
    "surname_comma": ["Requested by: {n} (Procurement)", "Holder: {n}\nCard ending 4410",
                      "Reviewer {n} rejected the return."],
    "common_words": ["Can {n} sign the delivery note today?",
                     "Ask {n} Monday morning, the office is closed now.",
                     "Did {n} already get the new badge?",
                     "Tell {n} the Premium Support plan was renewed."],
    "signature": ["Many thanks\n{n}\nHead of Logistics", "--\n{n}\nCustomer Care Team",
                  "Talk soon,\n{n}", "Obrigado,\n{n}"],
    "greeting": ["Dear {n},\nthe replacement router arrived without a power cable.",
                 "Good morning {g}, any news about the refund?",
                 "Olá {g}, o boleto venceu ontem.", "Ahoj {g}, faktura stále chybí."],
    "header": ["From: {n} <{e}>\nSubject: duplicate charge", "Attn: {n}, Accounts Payable",
               "Customer name: {n}\nPlan: Business", "[10:42] {n}: the payment page is blank"],
}
NEGATIVES = [
    "Our Salesforce Marketing Cloud sync to HubSpot stopped on Tuesday.",
    "The Lenovo ThinkPad docking station flickers with Windows Update KB5034441.",
    "Please move us from the Silver Plan to the Gold Plan before Black Friday.",
    "Adobe Acrobat Reader crashes when opening scans from the Canon Scanner.",
    "Delivery to Porto Alegre and Belo Horizonte is delayed by the strike.",
    "Stockholm Central and Göteborg Landvetter kiosks show the old prices.",
    "The Cape Town warehouse uses Oracle NetSuite, the Dublin one uses SAP Business One.",
    "Summer Sale codes do not apply to the Family Bundle.",
    "Our Hong Kong branch cannot reach the Singapore Data Center.",
    "The Mountain View team switched from Bitbucket Cloud to GitLab Premium.",
    "Fresh Market and Green Valley Foods both ordered the Large Crate.",
    "Microsoft Outlook keeps asking for the Exchange Online password.",
    "Santa Catarina and Rio Grande do Sul stores get the new terminals first.",
    "The Quick Start Guide for the Smart Thermostat is missing page 4.",
    "Kraków Airport and Warsaw Chopin both show gate changes late.",
    "Buenos Aires office staff cannot open Google Sheets on Chrome OS.",
    "The Royal Mail tracking page says Out For Delivery since Monday.",
    "Wells Fargo and Bank of America cards fail, Visa Debit works.",
    "Our Jenkins Pipeline fails at the Unit Test stage after Node Upgrade.",
    "The Blue Ridge cabin booking shows Check In Pending.",
    "Vodafone Portugal and Telekom Deutschland roaming is blocked.",
    "The Golden Retriever plush toy in the Kids Corner is out of stock.",
    "Hyatt Regency Chicago invoices arrive without the Tax Number.",
    "Please enable Single Sign On for the Customer Portal.",
    "Coca Cola and Pepsi Max crates were swapped in the Lisbon depot.",
    "The Jade Garden restaurant in Macau wants the Premium Menu Board.",
    "Apple Watch Ultra and Galaxy Watch pair, Fitbit Versa does not.",
    "Our New Delhi partner uses Zoho Books, the Jakarta one uses Xero.",
    "The Great Wall tour bus app shows Seat Unavailable.",
    "Rolling Stone magazine subscription renewed twice this year.",
    "The Harvest Moon festival tickets for Grand Rapids were not delivered.",
    "Little Italy and China Town shops share one Wi-Fi account.",
    "The Iron Mountain archive boxes were sent to Saint Louis instead.",
    "Sunrise Bakery needs the Express Checkout button back.",
    "Please reset the Admin Console for Atlassian Confluence.",
    "We see Access Denied on the Finance Dashboard since the Azure Migration.",
    "The North Face jacket order ships from Los Angeles.",
    "Helsinki Vantaa pickup point and Tampere Station are both full.",
    "Budapest Keleti kiosk prints receipts in Czech.",
    "The Red Cross donation page on our Charity Portal times out.",
    "Silicon Valley Bank statements are missing from the Export Centre.",
    "Mercado Livre and Magazine Luiza listings show the wrong price.",
    "The White House replica model kit lacks the Assembly Guide.",
    "Turkish Airlines and Lufthansa bookings appear twice in Travel Manager.",
    "Notion Calendar and Google Calendar events are out of sync.",
    "Please ship the Standing Desk to the Rotterdam Harbour office.",
    "The Morning Star newsletter goes to Spam in Gmail.",
    "Grand Canyon Railway vouchers cannot be redeemed online.",
    "Stripe Connect payouts to Banco do Brasil bounced.",
    "The Happy Hour promotion ended before Labour Day.",
]
# Capitalised pairs to place in a negative record's template (kept whole).
PRODUCTS = ("Surface Pro", "Kindle Paperwhite", "Dropbox Business", "Zendesk Suite", "Teams Rooms",
            "Nest Hub", "Ring Doorbell", "Jabra Evolve", "Logitech Brio", "Philips Hue",
            "Sonos Arc", "Bosch Serie", "Epson EcoTank", "Garmin Forerunner", "Dyson Airwrap",
            "Steam Deck", "Pixel Buds", "Echo Show", "Canva Pro", "Miro Board")
PLACES = ("Saint Petersburg", "Las Palmas", "Novo Hamburgo", "Costa Rica", "Santa Monica",
          "Palo Alto", "Nova Lima", "Rio Claro", "Monte Carlo", "Long Beach", "San Marino",
          "Vila Velha", "Grand Prairie", "Porto Seguro", "Cluj Napoca", "Baden Baden",
          "Punta Cana", "Fort Worth", "Campo Grande", "Las Vegas")
NEG_TEMPLATES = ("The {p} we sent to {c} came back damaged.",
                 "Is {p} supported in {c}?",
                 "{p} orders from {c} are stuck in review.",
                 "Stock of {p} in the {c} store is wrong.")
DOMAINS = ("gmail.com", "hotmail.com", "uol.com.br", "seznam.cz", "outlook.com")


def _zh(r: random.Random) -> tuple[str, str]:
    return r.choice(ZH_GIVEN), r.choice(ZH_SURNAMES)


def _br(r: random.Random) -> tuple[str, str]:
    given = r.choice(BR_GIVEN)
    if r.random() < 0.5:
        given += " " + r.choice(BR_SECOND)
    first, second = r.sample(BR_SURNAMES, 2)
    shape = r.randrange(4)
    last = [f"{first} {second}", f"{r.choice(BR_PARTICLES)} {first}",
            f"{first} {r.choice(BR_PARTICLES)} {second}",
            f"{r.choice(BR_PARTICLES)} {first} {second}"][shape]
    return given, last


def _write(style: str, origin: str, given: str, last: str, r: random.Random) -> str:
    full = f"{given} {last}"
    if style == "lower_context":
        return full.lower()
    if style == "surname_first":
        # Chinese names in their own order, Title case; others with the surname in capitals
        return f"{last} {given}" if origin == "zh_pinyin" else f"{last.upper()} {given}"
    if style == "surname_comma":
        return f"{last}, {given}"
    if style == "header" and r.random() < 0.3:
        return f"{given[0]}. {last}"
    return full


@functools.lru_cache(maxsize=1)
def _name_styles():
    spec = importlib.util.spec_from_file_location("name_styles", Path(__file__).with_name("name_styles.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fill(template: str, slots: dict[str, str]) -> tuple[str, list[list]]:
    """`name_styles.fill`: the corpora share the way they fill a template, not their names."""
    return _name_styles().fill(template, slots)


def _negative(r: random.Random, i: int) -> dict:
    if i % 2 == 0:
        text = NEGATIVES[(i // 2) % len(NEGATIVES)]
        return {"locale": "negative", "origin": "-", "text": text, "planted": [],
                "negatives": [[0, len(text), "sentence"]]}
    p, c = r.choice(PRODUCTS), r.choice(PLACES)
    template = r.choice(NEG_TEMPLATES)
    text = template.format(p=p, c=c)
    negs = [[text.index(p), text.index(p) + len(p), "product"],
            [text.index(c), text.index(c) + len(c), "place"]]
    return {"locale": "negative", "origin": "-", "text": text, "planted": [], "negatives": negs}


def build(n: int = 400, seed: int = 50) -> list[dict]:
    """`n` records: three name tickets for each negative one."""
    from faker import Faker

    r = random.Random(seed)
    fakers = {}
    for i, origin in enumerate(FAKER_ORIGINS):
        fakers[origin] = Faker(origin)
        fakers[origin].seed_instance(seed * 100 + i)
    styles = list(STYLES)
    records = []
    made = 0
    for i in range(n):
        if i % 4 == 3:
            records.append(_negative(r, i // 4))
            continue
        style = styles[made % len(styles)]
        origin = ORIGINS[(made // len(styles)) % len(ORIGINS)]
        made += 1
        if origin == "zh_pinyin":
            given, last = _zh(r)
        elif origin == "pt_BR_parts":
            given, last = _br(r)
        else:
            given, last = fakers[origin].first_name(), fakers[origin].last_name()
        written = _write(style, origin, given, last, r)
        local = "".join(c for c in f"{given.split()[0]}.{last.split()[-1]}".lower() if c.isalnum() or c == ".")
        text, planted = _fill(r.choice(STYLES[style]),
                              {"n": written, "g": given.split()[0], "e": f"{local}@{r.choice(DOMAINS)}"})
        records.append({"locale": style, "origin": origin, "text": text, "planted": planted,
                        "negatives": []})
    return records
