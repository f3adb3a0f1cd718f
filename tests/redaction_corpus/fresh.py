"""A fourth corpus, written by hand for session 48 and never tuned on: support tickets as
people write them, in eight languages, with the values marked where they stand.

Why: every other corpus was scored while rules were being written, so each has taught
the rules something. These tickets were written after the rules of this session and
scored once; a miss here is reported, not fixed by a rule made from it. Names, addresses,
numbers and passwords were made up for this file (no generator, no list the detector
reads); phone numbers use each country's national shape.

Markup: ``[[KIND|value]]`` plants a value, ``{{label|value}}`` a hard negative that must
be kept whole. Record shape as in `heldout.py`; ``locale`` is the language.
"""

from __future__ import annotations

import re

_MARK = re.compile(r"\[\[([A-Z_]+)\|(.+?)\]\]|\{\{([a-z_]+)\|(.+?)\}\}", re.S)

TICKETS = [
    ("en", "hey support, [[PERSON|jonas whitfield]] here. still can't get into the portal,"
           " tried resetting twice. {{product|Acme Cloud Drive}} just spins."),
    ("en", "Please update the delivery address to [[ADDRESS|14 Larkspur Lane, Bristol BS7 8QD]]"
           " before order {{order|#558213}} ships."),
    ("en", "The login for the kiosk is admin / pass [[PASSWORD|K!osk-2291]] - please rotate it."),
    ("en", "Ring me on [[PHONE|07700 918 442]] after 5pm, or mail [[EMAIL|t.okafor@fastmail.co.uk]]."),
    ("en", "Per our call, DOB on the account should read [[DOB|3 March 1987]], not the 8th."),
    ("en", "Escalating on behalf of Ms [[PERSON|Adaeze Nwankwo]] (customer since 2019)."),
    ("en", "FYI {{product|Power Automate}} flow failed again at step 4 (error {{code|0x80070005}})."),
    ("en", "--\nR. [[PERSON|Castellanos]]\nAccounts Payable"),
    ("de", "Guten Tag, mein Name ist [[PERSON|Friederike Oberhuber]] und ich komme nicht mehr"
           " in mein Konto."),
    ("de", "Neue Lieferadresse: [[ADDRESS|Grillparzerweg 7, 81675 München]]. Danke!"),
    ("de", "Rückruf bitte unter [[PHONE|0176 4417 2093]], ich bin ab 14 Uhr erreichbar."),
    ("de", "Das neue Kennwort lautet [[PASSWORD|Sommer!Regen88]], bitte nach dem ersten Login ändern."),
    ("de", "Die Rechnung {{order|RE-2024-11873}} über {{price|249,90 €}} ist doppelt gebucht."),
    ("fr", "Bonjour, c'est [[PERSON|Maëlle Gauthier-Roux]], je n'arrive pas à me connecter depuis"
           " la mise à jour {{version|5.3.2}}."),
    ("fr", "Merci de me rappeler au [[PHONE|06 71 28 93 40]] dans la journée."),
    ("fr", "Ma date de naissance est le [[DOB|14/02/1979]] et non le 15."),
    ("fr", "Cordialement,\n[[PERSON|Thibault Lemaire]]\nService achats"),
    ("es", "Hola, soy [[PERSON|Itziar Goikoetxea]], el pago con {{product|Apple Pay}} me da error."),
    ("es", "Podéis escribirme a [[EMAIL|itziar.g@correo.es]] o llamarme al [[PHONE|644 382 917]]."),
    ("es", "Mi contraseña nueva es [[PASSWORD|Tortilla#2023]], la cambié ayer."),
    ("es", "Saludos cordiales,\n[[PERSON|Ramiro Etxeberria Salas]]"),
    ("it", "Buongiorno, sono [[PERSON|Ludovica Scarpellini]] e vorrei annullare l'ordine"
           " {{order|IT-7741902}}."),
    ("it", "Il mio numero è [[PHONE|347 812 6650]], chiamatemi pure."),
    ("it", "Sono nato il [[DOB|09/11/1968]] a Bari."),
    ("it", "La nuova password è [[PASSWORD|Gatto_Nero77]] ma non funziona."),
    ("nl", "Hoi, met [[PERSON|Sanne van Wijngaarden]]. Mijn bestelling is nog niet binnen."),
    ("nl", "U kunt mij bereiken op [[PHONE|06 2849 1173]] of via [[EMAIL|sanne.vw@kpnmail.nl]]."),
    ("nl", "Met vriendelijke groet,\n[[PERSON|Joost Hoekstra]]"),
    ("pt", "Olá, aqui é a [[PERSON|Iara Figueiredo]], a fatura {{order|PT-55190}} veio errada."),
    ("pt", "A minha senha nova é [[PASSWORD|Lisboa@4455]], podem verificar?"),
    ("pt", "Nasci em [[DOB|22/07/1991]], o cadastro está com outra data."),
    ("pl", "Dzień dobry, nazywam się [[PERSON|Bożena Wróblewska]] i nie mogę się zalogować."),
    ("pl", "Proszę o kontakt pod numerem [[PHONE|601 447 239]]."),
    ("pl", "Nowe hasło to [[PASSWORD|Krakow!2024]], proszę je zresetować."),
    ("en", "We moved from {{product|Google Workspace}} to {{product|Microsoft Teams}} last week and"
           " the {{product|Outlook}} add-in {{version|2.14.7}} crashes."),
    ("en", "Invoice {{order|INV-00418832}} dated {{date|12/03/2024}} shows {{price|$1,249.00}}."),
    ("de", "Seit dem Update auf {{product|Windows 11}} {{version|23H2}} startet {{product|SAP GUI}}"
           " nicht mehr."),
    ("fr", "Le magasin de {{place|Saint-Étienne}} est fermé jusqu'au {{date|3 janvier}}."),
    ("es", "El envío a {{place|Santa Cruz de Tenerife}} tarda más de lo normal."),
    ("it", "Il modulo {{product|Fattura Elettronica}} non si apre con {{product|Chrome}}"
           " {{version|126}}."),
]


def _record(locale: str, marked: str) -> dict:
    text, planted, negatives, pos = [], [], [], 0
    last = 0
    for m in _MARK.finditer(marked):
        before = marked[last:m.start()]
        text.append(before)
        pos += len(before)
        kind, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        (planted.append([pos, pos + len(value), kind, ""]) if m.group(1)
         else negatives.append([pos, pos + len(value), kind]))
        text.append(value)
        pos += len(value)
        last = m.end()
    text.append(marked[last:])
    return {"locale": locale, "text": "".join(text), "planted": planted, "negatives": negatives}


def build(n: int = 0, seed: int = 0) -> list[dict]:
    """The records (`n`, `seed`: unused, as every ticket is taken)."""
    return [_record(locale, marked) for locale, marked in TICKETS]
