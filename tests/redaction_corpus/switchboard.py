"""A tenth corpus, for person names in messages that reach a switchboard rather than a
ticket form, written for session 56 before its rules, scored once then and once at the end;
never tuned on.

Why: every corpus before this one has taught the rules something (backoffice was written
for session 55 and scored while its rules were made). This one was written from the other
corpora's docstrings only, in sources none of them uses: instant-messaging exports with
time stamps, display names and @-mentions, SMS and WhatsApp logs, support-forum posts that
quote earlier replies, field-service work orders, school and event registrations (rooming
lists and shuttle manifests in airline style, form exports as CSV rows) and letters from
solicitors and letting agents, in eight languages (en, de, fr, es, it, nl, pt, pl).

Names: parts for twenty-six origins written by hand for this file (Armenian, Somali,
Hausa, Malagasy, Samoan and Tongan, Māori, Sinhala, Bengali, Punjabi, Nepali, Mongolian,
Kazakh and Uzbek, Czech, Romanian, Serbian and Croatian, Albanian, Lithuanian and Latvian,
Welsh and Scottish, Haitian, Andean with two surnames, Malay with bin/binti, Norwegian,
southern Italian, Afrikaans with particles, Lebanese, and English names that are common
words such as Grace Fields or Will Hunter), none from a generator or a list the detector
reads. They are written in full, lower case, upper case, airline style
(``SURNAME/GIVEN MS``), ``Surname, Given``, surname first with the surname in capitals,
with an initial (``G. Surname`` and ``Given S.``), after a title, hyphenated, as a given
name alone (capitalised, and lower case in chat), in the possessive and as
``Name <e-mail>``. Hard negatives of the same shapes: slash pairs in capitals (``TCP/IP``,
``AND/OR``, ``N/A``, ``I/O``, ``LHR/JFK``), common words that are also given names at the
start of a line (``Will confirm``, ``Mark the job``, ``Grace period``), lower-case chat
words, products, teams, places and companies named after people.

Figures before session 56's rules, main at 30122db, scored once at the
default 500 records (417 with names, 966 planted names; load average 6.4): PERSON recall
0.622 (en 0.488, es 0.444, de 0.754, pt 0.762, nl 0.722, it 0.736, fr 0.713, pl 0.714;
chat 0.521, sms 0.481, registration 0.542, workorder 0.692, forum 0.749, letter 0.752);
hard negatives kept 0.9457 (company 19/30, place 96/111, role 0/5, product 165/165,
slash 141/141, team 35/35, word 84/84). Per form: airline 3/44, full 238/272,
given_alone 101/199, given_initial 0/32, given_lower 9/49, hyphenated 22/27, initial
34/34, lower 17/80, possessive 0/18, surname_comma 29/32, surname_first 30/36, title
59/71, upper 38/51, with_email 21/21.

After session 56's rules (scored at 7379e7b, af7fbf3 and 894e526, the rules between them
made from other corpora; the same figures each time): PERSON 0.754, hard negatives kept
0.9457 (every label as before). Per form: airline 43/44, given_alone 151/199, given_lower
26/49, lower 22/80, title 64/71, upper 40/51, full 246/272; unchanged: given_initial 0/32,
possessive 0/18, hyphenated 22/27, surname_first 30/36, surname_comma 29/32.

Markup as in `fresh.py`. ``locale`` is the language, ``origin`` the origin of the first
person's name (``-`` for a record without one), ``country`` the source (``chat``, ``sms``,
``forum``, ``workorder``, ``registration``, ``letter``); ``forms`` lists ``[start, end,
form]`` for every planted name, so that a scorer can report recall per writing form. Same
seed, same corpus: ``build(n, seed)``.
"""

from __future__ import annotations

import functools
import importlib.util
import random
import re
import unicodedata
from pathlib import Path

# origin: (given names, surnames); written for this file
ORIGINS: dict[str, tuple[list[str], list[str]]] = {
    "armenian": (["Anahit", "Tigran", "Siranush", "Vardan", "Lusine", "Hovhannes"],
                 ["Petrosyan", "Hakobyan", "Ter-Grigoryan", "Manukyan", "Avetisyan", "Sargsian"]),
    "somali": (["Hodan", "Abdirahman", "Faadumo", "Liban", "Ubah", "Mohamud"],
               ["Warsame", "Jama", "Abdillahi", "Ugaas", "Nuur", "Samatar"]),
    "hausa": (["Aminu", "Hadiza", "Garba", "Rabi", "Nasiru", "Bilkisu"],
              ["Dankwambo", "Yakasai", "Kurfi", "Danjuma", "Shekarau", "Gumel"]),
    "malagasy": (["Hery", "Voahangy", "Tahina", "Lalao", "Fanja", "Rivo"],
                 ["Rakotomalala", "Randriamanana", "Razafindrabe", "Andrianjafy", "Ratsimbazafy",
                  "Rabemananjara"]),
    "samoan": (["Sione", "Mele", "Tavita", "Losa", "Iosefa", "Salote"],
               ["Tuilagi", "Fonoti", "Leota", "Tupou", "Fifita", "Aumua"]),
    "maori": (["Wiremu", "Aroha", "Rawiri", "Mereana", "Tamati", "Huia"],
              ["Ngata", "Te Kani", "Parata", "Tawhiri", "Horomona", "Rangihuna"]),
    "sinhala": (["Chaminda", "Dilani", "Nuwan", "Sandya", "Kasun", "Tharindu"],
                ["Wickramasinghe", "Jayawardena", "Gunasekara", "Senanayake", "Dissanayake", "Ekanayake"]),
    "bengali": (["Tanvir", "Nusrat", "Arnab", "Shampa", "Rafiq", "Moushumi"],
                ["Chowdhury", "Bhattacharjee", "Talukder", "Mazumder", "Haque", "Sarkar"]),
    "punjabi": (["Gurpreet", "Harjinder", "Simranjit", "Manpreet", "Jaswinder", "Balwinder"],
                ["Sandhu", "Dhillon", "Grewal", "Sidhu", "Bains", "Gill"]),
    "nepali": (["Bikash", "Sabina", "Nirmala", "Suman", "Pasang", "Laxmi"],
               ["Shrestha", "Gurung", "Tamang", "Adhikari", "Bhattarai", "Thapa Magar"]),
    "mongolian": (["Bat-Erdene", "Oyuntsetseg", "Ganbaatar", "Enkhjargal", "Temuulen", "Narantuya"],
                  ["Tserendorj", "Dashdondog", "Baatarkhuu", "Purevsuren", "Altangerel", "Munkhbat"]),
    "kazakh": (["Aizhan", "Nurlan", "Dilnoza", "Yerlan", "Gulnara", "Rustam"],
               ["Nurpeisova", "Zhaksybekov", "Tokhtarov", "Abdullaeva", "Seitkali", "Bekmuratov"]),
    "czech": (["Radek", "Jitka", "Zdeněk", "Bohumila", "Vojtěch", "Libuše"],
              ["Dvořáček", "Procházková", "Kučera", "Šťastný", "Hrubá", "Vondráček"]),
    "romanian": (["Ionuț", "Mirela", "Florin", "Loredana", "Sorin", "Anca"],
                 ["Stănescu", "Țurcanu", "Bălan", "Constantinescu", "Munteanu", "Dumitrașcu"]),
    "serbian": (["Dragan", "Snežana", "Goran", "Jasmina", "Nikola", "Mirjana"],
                ["Jovanović", "Kovačević", "Babić", "Mehmedović", "Radosavljević", "Stojković"]),
    "albanian": (["Arben", "Drita", "Besnik", "Lindita", "Fatmir", "Vjosa"],
                 ["Hoxha", "Berisha", "Krasniqi", "Gashi", "Shehu", "Dervishi"]),
    "baltic": (["Gintaras", "Rasa", "Vytautas", "Ieva", "Māris", "Inga"],
               ["Kazlauskas", "Jankauskienė", "Bērziņš", "Ozola", "Paulauskas", "Kalniņa"]),
    "welsh": (["Rhodri", "Cerys", "Gethin", "Angharad", "Eilidh", "Ruaridh"],
              ["Pritchard", "Gruffydd", "Urquhart", "Menzies", "Cadwaladr", "Llewellyn"]),
    "haitian": (["Jean-Robert", "Mirlande", "Wilner", "Nadège", "Fritznel", "Guerline"],
                ["Pierre-Louis", "Dorvilus", "Saint-Fleur", "Exantus", "Bazile", "Joseph-Noël"]),
    "andean": (["Nilda", "Wálter", "Yaneth", "Eusebio", "Rosalía", "Fidel"],
               ["Quispe Mamani", "Huamán Condori", "Ccama Yupanqui", "Mamani Choque", "Apaza Ticona",
                "Condori Huarachi"]),
    "malay": (["Faizal", "Nurul Aini", "Hafiz", "Azlina", "Khairul", "Siti Hajar"],
              ["bin Rahmat", "binti Yusof", "bin Osman", "binti Ismail", "bin Kamaruddin", "binti Salleh"]),
    "norwegian": (["Ingvild", "Torbjørn", "Solveig", "Eirik", "Gunnhild", "Asbjørn"],
                  ["Haugland", "Bjørnstad", "Kvalheim", "Fjeldstad", "Sæther", "Øvrebø"]),
    "neapolitan": (["Gennaro", "Concetta", "Salvatore", "Assunta", "Ciro", "Immacolata"],
                   ["Esposito", "Capuozzo", "La Rocca", "D'Alessandro", "Lo Presti", "Scognamiglio"]),
    "afrikaans": (["Riaan", "Elmarie", "Jaco", "Marietjie", "Wikus", "Annelie"],
                  ["van der Merwe", "du Toit", "Pretorius", "Janse van Rensburg", "Steyn", "le Roux"]),
    "lebanese": (["Rana", "Georges", "Maha", "Elie", "Nadine", "Fadi"],
                 ["Haddad", "Khoury", "Nassar", "Abi Nader", "El-Hajj", "Saadeh"]),
    "wordnames": (["Grace", "Will", "Hope", "Rich", "Dawn", "Rose", "Frank", "Joy", "Mark", "Faith"],
                  ["Fields", "Hunter", "Mills", "Baker", "Bishop", "Carpenter", "Church", "Stone", "Moss"]),
}

TITLES = {"en": ["Mr", "Mrs", "Ms", "Dr", "Mx"], "de": ["Herr", "Frau", "Dr."], "fr": ["M.", "Mme", "Maître"],
          "es": ["Sr.", "Sra.", "D.ª"], "it": ["Sig.", "Sig.ra", "Dott."], "nl": ["dhr.", "mevr.", "mr."],
          "pt": ["Sr.", "Sra.", "Dra."], "pl": ["Pan", "Pani", "mec."]}
AIRLINE_TITLES = ["MR", "MRS", "MS", "MISS", "MSTR", "DR", ""]
DOMAINS = ["posteo.net", "outlook.com", "mailbox.org", "gmx.net", "proton.me", "yahoo.co.uk"]

# ⟨A:form⟩ is a name of person A (or B) written in that form; ⟨num⟩ a number.
TEMPLATES: list[tuple[str, str, str]] = [
    # chat: IM exports
    ("en", "chat", "[09:14] ⟨A:full⟩: anyone seen the {{product|Zebra ZD421}} driver?\n"
                   "[09:15] ⟨B:given_lower⟩: try the one on the share\n[09:16] ⟨A:given_lower⟩: thx"),
    ("en", "chat", "#night-desk export\n⟨A:lower⟩ 22:41  {{slash|I/O}} errors on the nas again\n"
                   "⟨B:lower⟩ 22:43  on it, paged {{team|Blue Team}}"),
    ("en", "chat", "@⟨A:given_lower⟩ can you cover saturday? ⟨B:given_alone⟩ is off and {{place|St. Helens}}"
                   " needs someone"),
    ("en", "chat", "⟨A:full⟩ (away) changed the topic to: {{product|Jira Service Desk}} cutover,"
                   " questions to ⟨B:given_initial⟩"),
    ("en", "chat", "<⟨A:given_lower⟩> is the {{slash|TCP/IP}} printer back?\n<⟨B:given_lower⟩> nope\n"
                   "<⟨A:given_lower⟩> ugh"),
    ("de", "chat", "[14:02] ⟨A:full⟩: Kann jemand das Ticket aus {{place|Bad Homburg}} übernehmen?\n"
                   "[14:03] ⟨B:full⟩: mach ich, ⟨A:given_alone⟩"),
    ("fr", "chat", "[08:50] ⟨A:given_alone⟩ : bonjour, le lecteur {{product|Zebra}} ne répond plus\n"
                   "[08:52] ⟨B:given_initial⟩ : je regarde"),
    ("es", "chat", "[11:20] ⟨A:lower⟩: alguien tiene la clave del wifi de {{place|Alcalá de Henares}}?\n"
                   "[11:21] ⟨B:lower⟩: pregúntale a ⟨A:given_lower⟩ de sistemas, no, espera"),
    ("pl", "chat", "[10:05] ⟨A:full⟩: Czy ktoś wie, czemu {{product|Comarch ERP}} nie działa?\n"
                   "[10:06] ⟨B:given_alone⟩: restart pomógł"),
    ("nl", "chat", "[16:40] ⟨A:lower⟩: wie heeft de sleutel van {{place|Den Bosch}}?\n[16:41] ⟨B:full⟩: ik"),
    ("it", "chat", "[12:30] ⟨A:full⟩: qualcuno ha visto ⟨B:given_alone⟩?\n"
                   "[12:31] ⟨B:full⟩: sono in {{place|San Giovanni}}, arrivo"),
    ("pt", "chat", "[17:02] ⟨A:upper⟩: o {{product|SAP}} caiu de novo\n[17:03] ⟨B:given_lower⟩: já vi"),
    # sms: SMS and WhatsApp logs
    ("en", "sms", "12/03/2025, 21:07 - ⟨A:full⟩: running 20 min late, traffic on the {{place|M62}}\n"
                  "12/03/2025, 21:09 - ⟨B:given_alone⟩: no worries"),
    ("en", "sms", "SMS from +44 7700 900431: hi its ⟨A:given_lower⟩, the boiler engineer hasnt shown up\n"
                  "{{word|Will}} call again at 3"),
    ("en", "sms", "[3/14/25, 8:02:11 AM] ⟨A:full⟩: photo of the meter attached\n"
                  "[3/14/25, 8:05:40 AM] ⟨B:full⟩: got it, thanks ⟨A:given_alone⟩!"),
    ("en", "sms", "From: ⟨A:upper⟩\nMsg: gate code changed, ask ⟨B:given_alone⟩ at reception"),
    ("nl", "sms", "14-03-2025 19:22 - ⟨A:full⟩: Is de monteur al geweest?\n"
                  "14-03-2025 19:30 - ⟨B:given_alone⟩: Nog niet, morgen tussen 8 en 12"),
    ("pt", "sms", "15/03/25 09:41 - ⟨A:full⟩: Bom dia, o técnico já saiu?\n"
                  "15/03/25 09:44 - ⟨B:full⟩: Sim, chega às 10h. Abraço, ⟨B:given_alone⟩"),
    ("it", "sms", "16/03/25, 18:12 - ⟨A:lower⟩: ciao, la caldaia fa ancora rumore\n"
                  "16/03/25, 18:15 - ⟨B:given_alone⟩: passo domani mattina"),
    ("de", "sms", "SMS von ⟨A:full⟩: Bin ab 17 Uhr zuhause. Gruß ⟨A:given_alone⟩"),
    ("fr", "sms", "SMS de ⟨A:lower⟩ : je serai là à 14h, code portail dans le mail. ⟨A:given_lower⟩"),
    ("es", "sms", "18/03/25 20:11 - ⟨A:full⟩: ¿Mañana viene el fontanero?\n"
                  "18/03/25 20:15 - ⟨B:given_alone⟩: Sí, a las 9. Un saludo"),
    ("pl", "sms", "SMS od ⟨A:upper⟩: Kurier był? Pozdrawiam, ⟨A:given_alone⟩"),
    # forum: posts quoting earlier replies
    ("en", "forum", "Re: Printer offline after update\n> Originally posted by ⟨A:full⟩\n"
                    "> Same here since {{product|Windows 11}} 24H2.\nThanks ⟨A:given_alone⟩, rolling back fixed it.\n"
                    "-- ⟨B:given_initial⟩"),
    ("en", "forum", "⟨A:possessive⟩ workaround in post #4 worked. Marking as solved "
                    "({{slash|AND/OR}} filters still broken)."),
    ("en", "forum", "Quote from: ⟨A:lower⟩ on March 3, 2025\n> has anyone tried {{product|UniFi}}?\n\n"
                    "yes, see ⟨B:possessive⟩ guide pinned above"),
    ("en", "forum", "@⟨A:full⟩ wrote:\n> {{word|Mark}} it as spam and move on\nAgreed. Mod note from ⟨B:initial⟩."),
    ("de", "forum", "Zitat von ⟨A:full⟩:\n> Der Fehler tritt nur bei {{product|DATEV}} auf.\n"
                    "Danke ⟨A:given_alone⟩, bei mir genauso. VG ⟨B:given_alone⟩"),
    ("es", "forum", "Respuesta a ⟨A:full⟩:\n> El módulo de {{product|Contaplus}} se cuelga.\n"
                    "A mí me pasa lo mismo. Saludos, ⟨B:given_alone⟩"),
    ("fr", "forum", "⟨A:full⟩ a écrit :\n> La {{product|Freebox}} redémarre en boucle.\n"
                    "Merci ⟨A:given_alone⟩, pareil chez moi. — ⟨B:initial⟩"),
    ("pt", "forum", "Em resposta a ⟨A:lower⟩:\n> o {{product|Portal das Finanças}} não abre\n"
                    "Obrigado ⟨A:given_alone⟩! Resolvido."),
    ("nl", "forum", "⟨A:full⟩ schreef:\n> Sinds de update werkt {{product|Exact Online}} niet meer.\n"
                    "Bedankt ⟨A:given_alone⟩, bij mij ook. Groet, ⟨B:given_alone⟩"),
    ("it", "forum", "⟨A:full⟩ ha scritto:\n> il {{product|Fascicolo Sanitario}} non carica\n"
                    "Grazie ⟨A:given_alone⟩, idem. Ciao da ⟨B:with_email⟩"),
    ("pl", "forum", "⟨A:full⟩ napisał(a):\n> {{product|ePUAP}} znowu nie działa\nDzięki ⟨A:given_alone⟩!"),
    # workorder: field-service work orders
    ("en", "workorder", "WORK ORDER WO-⟨num⟩\nSite contact: ⟨A:surname_comma⟩\nTechnician: ⟨B:upper⟩\n"
                        "Fault: {{slash|A/C}} unit tripping, gas {{slash|N/A}}\nCustomer signature: ⟨A:initial⟩"),
    ("en", "workorder", "Job ⟨num⟩ - {{place|Jackson Heights}}\nAssigned: ⟨A:surname_first⟩\n"
                        "Notes: tenant ⟨B:lower⟩ let us in; {{product|Carrier}} condenser replaced.\n"
                        "Parts {{slash|P/N}} 88-102 on order"),
    ("en", "workorder", "Callout: {{product|Ford Transit}} van 14\nEngineer ⟨A:full⟩ on site 09:40, left 11:05.\n"
                        "Action: ⟨B:given_alone⟩ to order the {{slash|I/O}} board."),
    ("en", "workorder", "SERVICE REPORT\nCUSTOMER: ⟨A:upper⟩\nTECH: ⟨B:airline⟩\nRESULT: {{slash|PASS/FAIL}} test passed"),
    ("en", "workorder", "Completed by ⟨A:hyphenated⟩. Keys returned to ⟨B:title⟩ at the lodge."),
    ("de", "workorder", "Auftrag ⟨num⟩\nAnsprechpartner vor Ort: ⟨A:title⟩\nTechniker: ⟨B:surname_comma⟩\n"
                        "Befund: {{product|Viessmann}} Therme, Fehler F4.\nUnterschrift Kunde: ⟨A:initial⟩"),
    ("fr", "workorder", "Bon d'intervention n° ⟨num⟩\nClient : ⟨A:upper⟩\nIntervenant : ⟨B:full⟩\n"
                        "Matériel : {{product|Daikin}}, interrupteur {{slash|ON/OFF}} défectueux"),
    ("es", "workorder", "Orden de trabajo ⟨num⟩\nContacto: ⟨A:surname_comma⟩\nTécnico asignado: ⟨B:full⟩\n"
                        "Observaciones: ⟨A:given_alone⟩ no estaba; se dejó aviso."),
    ("it", "workorder", "Rapporto d'intervento ⟨num⟩\nCliente: ⟨A:surname_first⟩\nTecnico: ⟨B:full⟩\n"
                        "Note: {{product|Vaillant}}, sostituita valvola."),
    ("pl", "workorder", "Zlecenie serwisowe ⟨num⟩\nKlient: ⟨A:full⟩\nSerwisant: ⟨B:upper⟩\n"
                        "Uwagi: wymiana modułu {{slash|I/O}}."),
    ("nl", "workorder", "Werkbon ⟨num⟩\nKlant: ⟨A:title⟩\nMonteur: ⟨B:hyphenated⟩\n"
                        "Opmerking: {{product|Nefit}} ketel gereset."),
    ("pt", "workorder", "Ordem de serviço ⟨num⟩\nCliente: ⟨A:surname_first⟩\nTécnico: ⟨B:given_initial⟩\n"
                        "Obs.: {{product|Vulcano}} esquentador substituído."),
    # registration: schools and events
    ("en", "registration", "Rooming list - {{place|Lincoln Center}} gala\n1. ⟨A:airline⟩\n2. ⟨B:airline⟩\n"
                           "Transfers {{slash|IN/OUT}} included"),
    ("en", "registration", "Registration #⟨num⟩\nStudent: ⟨A:surname_comma⟩\nYear group: 7\n"
                           "Parent/guardian: ⟨B:full⟩\nAllergies: {{slash|N/A}}"),
    ("en", "registration", "Badge name: ⟨A:upper⟩\nCompany: {{company|Morgan Stanley}}\n"
                           "Session: {{product|Kubernetes}} workshop"),
    ("en", "registration", "name,team,diet\n⟨A:lower⟩,{{team|Platform Team}},vegetarian\n"
                           "⟨B:lower⟩,{{team|Facilities}},none"),
    ("en", "registration", "Shuttle manifest {{slash|LHR/JFK}} group\n⟨A:airline⟩\n⟨B:airline⟩\n"
                           "Lead: ⟨A:given_initial⟩"),
    ("en", "registration", "Hi ⟨A:given_alone⟩, your place on the {{product|First Aid}} course is confirmed."
                           " ⟨B:possessive⟩ group meets at {{place|Victoria Station}}."),
    ("de", "registration", "Anmeldung Sommerfest\nName: ⟨A:surname_first⟩\nBegleitung: ⟨B:given_alone⟩\nKinder: 2"),
    ("fr", "registration", "Inscription - sortie scolaire\nÉlève : ⟨A:upper⟩\nResponsable légal : ⟨B:title⟩\n"
                           "Régime : {{slash|N/A}}"),
    ("es", "registration", "Inscripción al congreso\nAsistente: ⟨A:full⟩\nAcompañante: ⟨B:lower⟩\n"
                           "Vuelo: ⟨A:airline⟩ {{slash|MAD/CDG}}"),
    ("it", "registration", "Iscrizione corso\nPartecipante: ⟨A:surname_comma⟩\nReferente: ⟨B:initial⟩"),
    ("pt", "registration", "Ficha de inscrição\nAluno: ⟨A:full⟩\nEncarregado de educação: ⟨B:hyphenated⟩\n"
                           "Turma: 5.º B"),
    ("pl", "registration", "Lista uczestników wycieczki\n1. ⟨A:airline⟩\n2. ⟨B:airline⟩\nOpiekun: ⟨A:title⟩"),
    ("nl", "registration", "Aanmelding ⟨num⟩\nDeelnemer: ⟨A:with_email⟩\nTeam: {{team|Binnendienst}}"),
    # letter: solicitors and letting agents
    ("en", "letter", "Dear ⟨A:title⟩,\n\nRe: Flat 3, {{place|Port Elizabeth}} House - our client ⟨B:full⟩\n\n"
                     "We write about the deposit. {{word|Grace}} period ends on Friday.\n\nYours sincerely,\n"
                     "{{role|Property Manager}}"),
    ("en", "letter", "WITHOUT PREJUDICE\nRe: ⟨A:surname_comma⟩ v {{company|Johnson Controls}} Ltd\n"
                     "We act for ⟨A:given_initial⟩ and enclose the schedule.\nKind regards\n⟨B:full⟩\nSolicitor"),
    ("en", "letter", "Our ref: ⟨num⟩/⟨A:upper⟩\nDear ⟨B:given_alone⟩,\nthank you for the keys.\nBest wishes,\n"
                     "⟨A:hyphenated⟩"),
    ("en", "letter", "To: ⟨A:with_email⟩\nThe landlord, ⟨B:title⟩, agrees to the repairs.\n{{word|Hope}} this helps."),
    ("de", "letter", "Sehr geehrte(r) ⟨A:title⟩,\nin der Mietsache ⟨B:full⟩ ./. {{company|Vonovia}} teilen wir mit ...\n"
                     "Mit freundlichen Grüßen\n⟨A:initial⟩"),
    ("fr", "letter", "Maître,\nConcernant le bail de ⟨A:full⟩ à {{place|Saint-Denis}}, "
                     "nous vous transmettons l'état des lieux.\nCordialement,\n⟨B:surname_first⟩"),
    ("es", "letter", "Estimado/a ⟨A:title⟩:\nEn relación con el inmueble de ⟨B:full⟩ en {{place|San Sebastián}}, "
                     "le remitimos el contrato.\nAtentamente,\n⟨B:given_alone⟩"),
    ("it", "letter", "Egregio ⟨A:title⟩,\nin merito alla locazione di ⟨B:full⟩ a {{place|San Marino}}, "
                     "alleghiamo il verbale.\nDistinti saluti\n⟨A:hyphenated⟩"),
    ("nl", "letter", "Geachte ⟨A:title⟩,\nNamens onze cliënt ⟨B:full⟩ sturen wij u het huurcontract.\n"
                     "Met vriendelijke groet,\n⟨B:given_initial⟩"),
    ("pt", "letter", "Exmo.(a) ⟨A:title⟩,\nRelativamente ao arrendamento de ⟨B:possessive_pt⟩, "
                     "junto enviamos o contrato.\nCom os melhores cumprimentos,\n⟨A:full⟩"),
    ("pl", "letter", "Szanowny Panie / Szanowna Pani ⟨A:title⟩,\nw sprawie najmu lokalu przez ⟨B:full⟩ przesyłamy"
                     " aneks.\nZ poważaniem\n⟨A:surname_first⟩"),
]

NEGATIVE_TEMPLATES: list[tuple[str, str, str]] = [
    ("en", "workorder", "Status: {{slash|N/A}}\nPorts: {{slash|I/O}} board replaced, {{slash|TCP/IP}} stack reset\n"
                        "{{word|Will}} confirm tomorrow."),
    ("en", "workorder", "{{word|Mark}} the job as complete once the {{product|Tesla Powerwall}} is online."),
    ("en", "workorder", "{{word|Chase}} the supplier about the {{slash|A/C}} parts.\n{{word|Bill}} the client for two hours."),
    ("en", "letter", "{{word|Grace}} period for the deposit ends Friday.\n{{word|Hope}} that helps."),
    ("en", "registration", "FIELDS: name {{slash|AND/OR}} email\nFILTER: {{slash|YES/NO}}\nSHUTTLE: {{slash|LHR/JFK}}"),
    ("en", "chat", "[07:58] {{team|Night Desk}}: handover done, {{place|San Jose}} switch is {{slash|ON/OFF}} again"),
    ("en", "chat", "ok {{word|will}} do\nsure, {{word|mark}} it done\n{{word|frank}}ly no idea"),
    ("en", "sms", "{{word|Dawn}} shift starts at 6. {{word|Sunny}} all week so the panels should be fine."),
    ("en", "forum", "> {{word|June}} update broke it\n{{word|May}} we close this? {{product|Marks & Spencer}} app works"),
    ("en", "registration", "Venue: {{place|Lincoln Center}}\nSponsor: {{company|Morgan Stanley}}\nRX {{slash|RX/TX}} check"),
    ("de", "workorder", "Einsatz in {{place|Frankfurt}}: {{product|Miele}} Trockner, Status {{slash|N/A}}."),
    ("de", "chat", "[09:01] {{team|Hausverwaltung}}: {{company|Siemens}} kommt morgen"),
    ("fr", "letter", "Objet : {{place|Saint-Étienne}}, dossier {{slash|S/N}} 4471"),
    ("es", "sms", "{{word|Rosa}} de los vientos en el logo, {{product|Movistar}} no funciona"),
    ("it", "forum", "{{word|Grazia}} ricevuta, {{product|Poste Italiane}} ok"),
    ("nl", "workorder", "Storing {{slash|I/O}} module, {{place|Den Haag}}, {{team|Buitendienst}}"),
    ("pt", "registration", "Turma {{slash|A/B}}, {{place|Vila Nova de Gaia}}, {{company|Continente}}"),
    ("pl", "workorder", "Status {{slash|N/D}}, {{product|Allegro}}, {{place|Nowy Sącz}}"),
]

_SLOT = re.compile(r"⟨([AB]):([a-z_]+)⟩|⟨num⟩")


def _ascii(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text.replace("ø", "o").replace("Ø", "O").replace("æ", "ae")
                                   .replace("Æ", "AE"))
    return "".join(c for c in folded if c.isascii())


class _Person:
    def __init__(self, r: random.Random, origin: str):
        givens, surnames = ORIGINS[origin]
        self.r = r
        self.given = r.choice(givens)
        self.surname = r.choice(surnames)
        self.second = r.choice([s for s in surnames if s != self.surname])

    def written(self, form: str, lang: str) -> tuple[str, str, str]:
        """(text before the name, the name, text after it) for one writing form."""
        g, s, r = self.given, self.surname, self.r
        if form == "full":
            return "", f"{g} {s}", ""
        if form == "lower":
            name = f"{g} {s}".lower()
            return "", _ascii(name) if r.random() < 0.5 else name, ""
        if form == "upper":
            return "", f"{g} {s}".upper(), ""
        if form == "airline":
            title = r.choice(AIRLINE_TITLES)
            name = f"{_ascii(s).upper()}/{_ascii(g).upper()}".replace(" ", "").replace("-", "").replace("'", "")
            return "", name, f" {title}" if title else ""
        if form == "given_alone":
            return "", g, ""
        if form == "given_lower":
            return "", _ascii(g.lower()), ""
        if form == "initial":
            return "", f"{g[0]}. {s}", ""
        if form == "given_initial":
            return "", f"{g} {s[0].upper()}.", ""
        if form == "surname_first":
            return "", f"{s.upper()} {g}", ""
        if form == "surname_comma":
            return "", f"{s}, {g}", ""
        if form == "title":
            return f"{r.choice(TITLES[lang])} ", s, ""
        if form == "hyphenated":
            return "", f"{g} {s.split()[-1]}-{self.second.split()[-1]}", ""
        if form == "possessive":
            return "", f"{g} {s}", "'s"
        if form == "possessive_pt":  # Portuguese has no possessive suffix: a name after "de"
            return "", f"{g} {s}", ""
        if form == "with_email":
            local = _ascii(f"{g}.{s.split()[-1]}".lower()).replace("'", "")
            return "", f"{g} {s}", f" <{local}@{r.choice(DOMAINS)}>"
        raise ValueError(form)


def _fill(r: random.Random, lang: str, template: str, origin: str) -> tuple[str, list[str]]:
    people = {"A": _Person(r, origin), "B": _Person(r, r.choice(sorted(ORIGINS)))}
    forms: list[str] = []

    def slot(m: re.Match) -> str:
        if m.group(0) == "⟨num⟩":
            return str(r.randint(1000, 99999))
        before, name, after = people[m.group(1)].written(m.group(2), lang)
        forms.append({"possessive_pt": "full"}.get(m.group(2), m.group(2)))
        return f"{before}[[PERSON|{name}]]{after}"

    return _SLOT.sub(slot, template), forms


@functools.cache
def _fresh():
    spec = importlib.util.spec_from_file_location("fresh", Path(__file__).with_name("fresh.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(lang: str, marked: str, origin: str, source: str, forms: list[str]) -> dict:
    rec = {**_fresh()._record(lang, marked), "origin": origin, "country": source}
    rec["forms"] = [[s, e, form] for (s, e, *_), form in zip(rec["planted"], forms)]
    return rec


def build(n: int = 500, seed: int = 56) -> list[dict]:
    """`n` records: five with names for each one without."""
    r = random.Random(seed)
    origins = sorted(ORIGINS)
    records = []
    for i in range(n):
        if i % 6 == 5:
            lang, source, template = r.choice(NEGATIVE_TEMPLATES)
            records.append(_record(lang, template, "-", source, []))
            continue
        lang, source, template = r.choice(TEMPLATES)
        origin = origins[i % len(origins)]
        marked, forms = _fill(r, lang, template, origin)
        records.append(_record(lang, marked, origin, source, forms))
    return records
