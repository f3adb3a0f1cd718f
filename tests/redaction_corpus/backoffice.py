"""A ninth corpus, for person names in the records back offices keep, written before the
rule changes that came with it, scored once then and once at the end; never tuned on.

Why: every corpus before this one has been scored while rules were written, and the
sessions that followed tuned on them (some by proxy). This one was written from the other
corpora's docstrings only, in sources none of them uses: travel bookings with passenger
lists in airline style (``SURNAME/GIVEN MRS``), clinic appointment and referral notes,
HR leave and onboarding requests, call-centre transcripts with speaker turns, meeting
minutes with attendee lists and action items, courier delivery notes and insurance claim
forms, in eight languages (en, de, fr, es, it, nl, pt, pl).

Names: parts for twenty origins written by hand for this file (Akan, Zulu and Xhosa,
Ethiopian, Filipino, Thai, Indonesian, Tamil, Georgian, Hungarian, Finnish, Catalan and
Basque, Mexican with two surnames, Arabic with particles, Polish, Greek, Vietnamese,
Japanese, Dutch and Flemish particles, German double-barrelled, and English names that are
also common words such as Hope Mills), none from a generator or a list the detector reads.
They are written in full, lower case, upper case, airline style, ``Surname, Given``,
surname first, with an initial, after a title, as a given name alone (speaker turns,
greetings, sign-offs, action items), in the possessive and as ``Name <e-mail>``. Hard
negatives: places, fares and products, teams, companies (some named after people), job
titles and role words (``Duty Manager``, ``Caller``), and common words that are also given
names, capitalised at the start of a sentence (``Will do``, ``Grace period``).

Markup as in `fresh.py`. ``locale`` is the language, ``origin`` the origin of the first
person's name (``-`` for a record without one), ``country`` the source (``travel``,
``clinic``, ``hr``, ``call``, ``minutes``, ``courier``, ``claims``); ``forms`` lists
``[start, end, form]`` for every planted name, so that a scorer can report recall per
writing form. Same seed, same corpus: ``build(n, seed)``.
"""

from __future__ import annotations

import functools
import importlib.util
import random
import re
import unicodedata
from pathlib import Path

# origin: (given names, surnames, usual order: "gs" given first, "sg" surname first)
ORIGINS: dict[str, tuple[list[str], list[str], str]] = {
    "akan": (["Kwabena", "Akosua", "Yaw", "Efua", "Adwoa", "Kwaku", "Abena", "Yaa"],
             ["Ofori-Atta", "Frimpong", "Danquah", "Appiah-Kubi", "Nkansah", "Agyeman"], "gs"),
    "nguni": (["Thandiwe", "Sibusiso", "Nomvula", "Lwazi", "Zanele", "Mandla", "Ayanda"],
              ["Mthembu", "Ngcobo", "Khumalo", "Mahlangu", "Sithole", "Nxumalo", "Mabaso"], "gs"),
    "ethiopian": (["Tigist", "Dawit", "Selamawit", "Yonas", "Meseret", "Abebe", "Hiwot"],
                  ["Gebremedhin", "Tesfaye", "Wondimu", "Alemayehu", "Bekele", "Woldegiorgis"], "gs"),
    "filipino": (["Maricel", "Jhun", "Rowena", "Arnel", "Lovely", "Jericho", "Rhodora"],
                 ["Dimaculangan", "Macaraeg", "Pangilinan", "Villafuerte", "Sumagaysay", "dela Paz"], "gs"),
    "thai": (["Siriporn", "Anucha", "Kanokwan", "Thanawat", "Pimchanok", "Nattapong"],
             ["Rattanakosin", "Wongsawat", "Chaiyaporn", "Sukprasert", "Thongdee", "Phromma"], "gs"),
    "indonesian": (["Dewi", "Rizky", "Ayu", "Bambang", "Wulan", "Fajar", "Indah"],
                   ["Setiawan", "Kusumawardani", "Nugroho", "Siregar", "Pratama", "Simanjuntak"], "gs"),
    "tamil": (["Kavitha", "Senthil", "Ilakkiya", "Murugan", "Tharani", "Arulmozhi"],
              ["Ramalingam", "Sivakumar", "Thirunavukkarasu", "Kandasamy", "Velayutham", "Pillai"], "gs"),
    "georgian": (["Nino", "Giorgi", "Tamar", "Levan", "Ketevan", "Davit", "Mzia"],
                 ["Beridze", "Kapanadze", "Tsiklauri", "Gelashvili", "Lomidze", "Chkheidze"], "gs"),
    "hungarian": (["Zsófia", "Bence", "Réka", "Levente", "Csilla", "Gergő", "Enikő"],
                  ["Varga", "Horváth", "Balogh", "Fekete", "Szűcs", "Nagy-Kálózi", "Bodnár"], "sg"),
    "finnish": (["Aino", "Juhani", "Kaisu", "Eero", "Siiri", "Tapio", "Vilja"],
                ["Kärkkäinen", "Hämäläinen", "Lehtonen", "Rautiainen", "Kivistö", "Partanen"], "gs"),
    "catalan_basque": (["Jordi", "Montserrat", "Aitziber", "Iñaki", "Nerea", "Oriol", "Itziar"],
                       ["Etxeberria", "Vilaseca", "Agirre-Lasa", "Casademunt", "Olaizola", "Garriga i Pons"], "gs"),
    "mexican": (["Guadalupe", "Xóchitl", "Itzel", "Rodrigo", "Ximena", "Tadeo", "Yolotzin"],
                ["Moreno Ibarra", "Cuevas de la Garza", "Tapia-Villalobos", "Ochoa Zambrano",
                 "Salgado Ruvalcaba"], "gs"),
    "arabic": (["Hamza", "Lubna", "Tariq", "Noor", "Bilal", "Samira", "Yasmeen"],
               ["al-Haddad", "Bin Saleh", "El Amrani", "Abu-Khalil", "Qasim", "Haddadin"], "gs"),
    "polish": (["Małgorzata", "Bartłomiej", "Jadwiga", "Zbigniew", "Agnieszka", "Wojciech"],
               ["Wróblewska", "Szczepański", "Grzybowski", "Kaczmarek-Nowak", "Pietrzyk", "Zając"], "gs"),
    "greek": (["Eleni", "Spyridon", "Despina", "Theodoros", "Vasiliki", "Stavros"],
              ["Papadimitriou", "Karagiannis", "Oikonomou", "Tsoukalas", "Vlachou", "Georgiadis"], "gs"),
    "vietnamese": (["Thị Lan", "Văn Hùng", "Minh Châu", "Quốc Bảo", "Thu Trang", "Đức Anh"],
                   ["Nguyễn", "Trần", "Phạm", "Huỳnh", "Võ", "Đặng"], "sg"),
    "japanese": (["Kenta", "Misaki", "Daisuke", "Chihiro", "Ryota", "Naoko"],
                 ["Yamaguchi", "Ishikawa", "Fujimoto", "Kobayashi", "Hasegawa", "Morimoto"], "sg"),
    "dutch_flemish": (["Sanne", "Joost", "Femke", "Bram", "Lieke", "Wouter", "Marijke"],
                      ["van den Heuvel", "de Wit", "ter Horst", "Verhoeven", "op de Beeck", "van Ooijen"], "gs"),
    "german": (["Anneliese", "Maximilian", "Wiebke", "Hauke", "Frauke", "Detlef", "Gesine"],
               ["Schulte-Bockholt", "Brinkmann", "Oberhuber", "von Ahlefeldt", "Kleinschmidt", "Wehrmeyer"], "gs"),
    "word_names": (["Rose", "Hope", "Will", "Grace", "Joy", "Summer", "Dawn", "Faith", "Hunter", "Chase"],
                   ["Baker", "Mills", "Fields", "Stone", "Rivers", "Price", "Hunt", "Glass", "Church", "Bishop"],
                   "gs"),
}

TITLES = {"en": ["Mr", "Mrs", "Ms", "Dr"], "de": ["Herr", "Frau", "Dr."], "fr": ["M.", "Mme", "Dr"],
          "es": ["Sr.", "Sra.", "Dra."], "it": ["Sig.", "Sig.ra", "Dott."], "nl": ["dhr.", "mevr.", "Dr."],
          "pt": ["Sr.", "Sra.", "Dra."], "pl": ["Pan", "Pani", "dr"]}
PNR_TITLES = ["MR", "MRS", "MS", "MSTR", "MISS"]
HOSTS = ["mailbox.org", "proton.me", "gmx.net", "yahoo.fr", "libero.it", "ziggo.nl", "sapo.pt",
         "wp.pl", "hotmail.es", "fastmail.com"]

PLACES = ["Gran Canaria", "Santa Cruz", "Port Louis", "St. Moritz", "Cape Town", "Victoria Station",
          "Lake Bled", "Porto Alegre", "San Sebastián", "Costa Brava", "Den Haag Centraal",
          "Kraków Główny", "Charles de Gaulle", "Bad Homburg", "Monte Carlo", "Rio Grande",
          "Isla Mujeres", "Saint-Malo", "Ponta Delgada", "Zell am See"]
PRODUCTS = ["Flex Plus", "Economy Light", "Premium Economy", "Smart Saver", "Priority Boarding",
            "Family Pass", "Care Plus", "Gold Cover", "Comfort Class", "Silver Shield",
            "Home Start", "Rapid Return", "Blue Horizon Suite", "Rose Garden Suite"]
TEAMS = ["Night Shift", "Payroll Team", "Team Falcon", "Ward 7B", "Customer Care", "Claims Desk",
         "Tier 1", "Ground Handling", "Talent Acquisition", "Outpatients East"]
COMPANIES = ["Kestrel & Vane Ltd", "Halvorsen Shipping AS", "Marks & Spencer", "Dr. Oetker",
             "Jack Wolfskin", "Ben & Jerry's", "Brightline Couriers", "Noordzee Verzekeringen",
             "Seguros Atalaya", "Assicurazioni Dolomiti"]
ROLES = {"en": ["Duty Manager", "Head Nurse", "Ward Sister", "Line Manager", "Shift Supervisor",
                "Ground Staff", "Purser", "Claims Handler"],
         "de": ["Stationsleitung", "Schichtleiter", "Personalabteilung", "Sachbearbeiterin"],
         "fr": ["Responsable RH", "Chef de cabine", "Infirmière coordinatrice"],
         "es": ["Jefa de Planta", "Responsable de Turno", "Tramitador"],
         "it": ["Caposala", "Responsabile Turno", "Perito Assicurativo"],
         "nl": ["Teamleider", "Afdelingshoofd", "Schadebehandelaar"],
         "pt": ["Enfermeira Chefe", "Chefe de Turno", "Gestor de Sinistros"],
         "pl": ["Kierownik Zmiany", "Pielęgniarka Oddziałowa", "Likwidator Szkód"]}

# Each template: (language, source, marked text). Slots: ⟨P⟩ the first person's name in a
# chosen form, ⟨Q⟩ a second person's, ⟨G⟩/⟨H⟩ their given names alone, ⟨T⟩/⟨U⟩ a title and
# surname, ⟨A⟩ the first person in airline style, ⟨L⟩/⟨M⟩ lower-case full names, ⟨E⟩ the first
# person's e-mail, ⟨X⟩ "Name <e-mail>", ⟨place⟩ ⟨product⟩ ⟨team⟩ ⟨company⟩ ⟨role⟩ negatives.
TEMPLATES: list[tuple[str, str, str]] = [
    # --- travel bookings ---------------------------------------------------------------------
    ("en", "travel", "PNR 4KX7QD\n1. ⟨A⟩ 2. ⟨B⟩\nSeg 1 LHR-⟨place⟩ 14MAR ⟨product⟩\n"
                     "Note: pax 1 requests wheelchair at gate; booked by ⟨X⟩."),
    ("en", "travel", "Re: booking change\n⟨G⟩ rang to move the return to Friday. ⟨product⟩ allows one free"
                     " change. {{word|Will}} do it once ⟨team⟩ confirms the fare. Lead pax: ⟨P⟩."),
    ("en", "travel", "Passenger list for the ⟨company⟩ offsite (⟨place⟩):\n- ⟨P⟩\n- ⟨Q⟩\n- ⟨L⟩\n"
                     "Rooms under ⟨P2⟩'s name; invoices to ⟨E⟩."),
    ("de", "travel", "Buchung 88213: Reisende ⟨A⟩ und ⟨B⟩, Flug nach ⟨place⟩. ⟨T⟩ bittet um"
                     " Sitzplätze nebeneinander. Tarif ⟨product⟩."),
    ("fr", "travel", "Dossier voyage : ⟨P⟩ + 1 (⟨Q⟩). Arrivée à ⟨place⟩ le 12. ⟨T⟩ souhaite"
                     " une chambre calme. Contact : ⟨X⟩"),
    ("es", "travel", "Reserva 55-ALC: titular ⟨P⟩, acompañante ⟨Q⟩. Traslado desde ⟨place⟩."
                     " Confirmado con ⟨T⟩ por teléfono."),
    ("it", "travel", "Prenotazione gruppo ⟨company⟩: ⟨P⟩, ⟨Q⟩. Partenza da ⟨place⟩. La ⟨role⟩"
                     " conferma il check-in per ⟨G⟩ alle 15."),
    ("nl", "travel", "Boeking 7731 — reizigers: ⟨A⟩, ⟨B⟩. ⟨T⟩ wil annuleringsverzekering ⟨product⟩."
                     " Bestemming ⟨place⟩."),
    ("pt", "travel", "Reserva em nome de ⟨P⟩ (⟨E⟩). Voo para ⟨place⟩; ⟨Q⟩ viaja no mesmo voo."
                     " ⟨T⟩ pediu refeição vegetariana."),
    ("pl", "travel", "Rezerwacja 4410: pasażerowie ⟨A⟩ i ⟨B⟩, lot do ⟨place⟩. ⟨T⟩ prosi o"
                     " miejsce przy oknie."),
    # --- clinic appointments and referrals ---------------------------------------------------
    ("en", "clinic", "Appt 09:40 — ⟨P⟩, DOB ⟨DOB⟩, referred by ⟨T⟩ (GP). Reason: follow-up."
                     " ⟨role⟩ to call pt on ⟨PH⟩ if the slot moves."),
    ("en", "clinic", "Referral letter\nDear ⟨U⟩,\nThank you for seeing ⟨P⟩ in ⟨team⟩. "
                     "{{word|Grace}} period for the paperwork ends Monday.\nKind regards,\n⟨Q⟩\n⟨role⟩"),
    ("en", "clinic", "Pt ⟨N⟩ no-show again. Spoke to her daughter ⟨Q⟩ who will rebook."
                     " {{word|Mark}} as DNA."),
    ("de", "clinic", "Termin Mo 10:15: ⟨N⟩, geb. ⟨DOB⟩. Überwiesen von ⟨T⟩. Rückruf unter ⟨PH⟩."
                     " ⟨role⟩ informiert."),
    ("fr", "clinic", "RDV annulé : ⟨P⟩, née le ⟨DOB⟩. Adressée par ⟨T⟩. Rappeler au ⟨PH⟩."),
    ("es", "clinic", "Cita 12:30 — paciente ⟨P⟩, fecha de nacimiento ⟨DOB⟩. Derivada por ⟨T⟩."
                     " La ⟨role⟩ avisa a ⟨G⟩ por SMS."),
    ("it", "clinic", "Visita di controllo per ⟨N⟩ (nato il ⟨DOB⟩), inviato dal ⟨T⟩. Tel. ⟨PH⟩."),
    ("nl", "clinic", "Afspraak ⟨P⟩, geboren ⟨DOB⟩, verwezen door ⟨T⟩. Bel ⟨PH⟩ bij wijziging."),
    ("pt", "clinic", "Consulta: ⟨P⟩, nascida em ⟨DOB⟩. Encaminhada pela ⟨T⟩. Contacto ⟨PH⟩."),
    ("pl", "clinic", "Wizyta: ⟨P⟩, ur. ⟨DOB⟩, skierowanie od ⟨T⟩. Tel. ⟨PH⟩."),
    # --- HR leave and onboarding -------------------------------------------------------------
    ("en", "hr", "Leave request #3381\nEmployee: ⟨S⟩\nManager: ⟨Q⟩\nDates: 3–14 June\n"
                 "Cover: ⟨team⟩. Approved by ⟨role⟩."),
    ("en", "hr", "Onboarding: ⟨P⟩ starts Monday in ⟨team⟩. Buddy is ⟨H⟩. Laptop to ⟨X⟩."
                 " {{word|Hope}} the badge is ready by then."),
    ("en", "hr", "⟨G⟩'s contract renewal is with ⟨role⟩; payslip query from ⟨L⟩ also pending."),
    ("de", "hr", "Urlaubsantrag: Mitarbeiterin ⟨P⟩, Vertretung ⟨Q⟩, genehmigt von der ⟨role⟩."),
    ("fr", "hr", "Arrivée de ⟨P⟩ le 1er septembre (⟨team⟩). Tuteur : ⟨H⟩. Contact : ⟨E⟩"),
    ("fr", "hr", "Bonjour ⟨G⟩,\nVotre demande de congé est validée par ⟨Q⟩.\nCordialement,\n⟨H⟩"),
    ("es", "hr", "Hola ⟨G⟩: tu alta en ⟨team⟩ está lista. Un saludo, ⟨H⟩"),
    ("es", "hr", "Baja por paternidad de ⟨P⟩; le sustituye ⟨Q⟩. Consultas a ⟨E⟩."),
    ("it", "hr", "Richiesta ferie di ⟨S⟩, approvata da ⟨Q⟩ (⟨role⟩)."),
    ("nl", "hr", "Nieuwe collega ⟨P⟩ begint bij ⟨team⟩; ⟨H⟩ is haar buddy. Mail: ⟨E⟩"),
    ("pt", "hr", "Pedido de férias: ⟨P⟩. Substituto: ⟨Q⟩. Aprovado pela ⟨role⟩."),
    ("pl", "hr", "Wniosek urlopowy: ⟨P⟩, zastępstwo ⟨Q⟩. Zatwierdza ⟨role⟩."),
    # --- call-centre transcripts ----------------------------------------------------------
    ("en", "call", "[00:00:04] Agent (⟨H⟩): Thanks for calling ⟨company⟩, who am I speaking with?\n"
                   "[00:00:07] Caller: It's ⟨P⟩, I'm ringing about my claim.\n"
                   "[00:00:15] ⟨H⟩: Thanks ⟨G⟩, can I take a phone number? \n[00:00:19] Caller: ⟨PH⟩."),
    ("en", "call", "AGENT: Can you spell the surname?\nCALLER: ⟨P⟩. ⟨V⟩.\nAGENT: And the policy"
                   " holder is your husband, ⟨Q⟩?\nCALLER: Yes.\n{{word|Will}} call back after ⟨team⟩ reviews."),
    ("de", "call", "Gesprächsnotiz: Anruferin ⟨P⟩ (⟨PH⟩) fragt nach ⟨product⟩. Hat mit ⟨H⟩ aus dem"
                   " ⟨team⟩ gesprochen."),
    ("fr", "call", "Agent : Bonjour, ⟨company⟩, ⟨H⟩ à l'appareil.\nClient : Oui bonjour, ⟨P⟩."
                   " J'appelle pour ma mère, ⟨T⟩.\nAgent : Très bien ⟨G⟩."),
    ("es", "call", "Transcripción: la clienta ⟨P⟩ llama desde ⟨PH⟩. Habló antes con ⟨H⟩."
                   " Pide hablar con la ⟨role⟩."),
    ("it", "call", "Operatore: Buongiorno, parla ⟨H⟩.\nCliente: Sono ⟨P⟩, chiamo per la polizza ⟨product⟩."),
    ("nl", "call", "Beller: ⟨P⟩ (⟨PH⟩). Wil ⟨T⟩ spreken. Doorverbonden met ⟨team⟩."),
    ("pt", "call", "Chamada de ⟨P⟩, tel. ⟨PH⟩. Falou com ⟨H⟩ do ⟨team⟩ sobre o seguro ⟨product⟩."),
    ("pl", "call", "Dzwoniła ⟨P⟩ (⟨PH⟩) w sprawie polisy ⟨product⟩. Rozmawiała z ⟨H⟩."),
    # --- meeting minutes ------------------------------------------------------------------
    ("en", "minutes", "Minutes — weekly ops\nPresent: ⟨P⟩, ⟨Q⟩, ⟨L⟩; apologies: ⟨T⟩\n"
                      "Actions:\n- ⟨G⟩ to chase ⟨company⟩ re invoices\n- ⟨H⟩ to update the ⟨team⟩ rota"),
    ("en", "minutes", "Attendees: ⟨S⟩ (chair), ⟨Q⟩ (notes)\nAOB: {{word|Bill}} the overtime to ⟨team⟩."
                      " Next meeting at ⟨place⟩."),
    ("de", "minutes", "Protokoll\nAnwesend: ⟨P⟩, ⟨Q⟩\nEntschuldigt: ⟨T⟩\nTo-do: ⟨G⟩ klärt mit der ⟨role⟩."),
    ("fr", "minutes", "Compte rendu\nPrésents : ⟨P⟩, ⟨Q⟩\nAction : ⟨G⟩ relance ⟨company⟩."),
    ("es", "minutes", "Acta de reunión\nAsistentes: ⟨P⟩, ⟨Q⟩, ⟨L⟩\nTareas: ⟨G⟩ revisa la póliza ⟨product⟩."),
    ("it", "minutes", "Verbale\nPresenti: ⟨P⟩, ⟨Q⟩\nAzioni: ⟨H⟩ contatta ⟨company⟩."),
    ("nl", "minutes", "Notulen\nAanwezig: ⟨P⟩, ⟨Q⟩; afwezig: ⟨T⟩\nActie: ⟨G⟩ belt ⟨company⟩."),
    ("pt", "minutes", "Ata\nPresentes: ⟨P⟩, ⟨Q⟩\nAção: ⟨H⟩ fala com a ⟨role⟩."),
    ("pl", "minutes", "Notatka ze spotkania\nObecni: ⟨P⟩, ⟨Q⟩\nZadanie: ⟨G⟩ kontaktuje się z ⟨company⟩."),
    # --- courier delivery notes -----------------------------------------------------------
    ("en", "courier", "POD: left with neighbour at no. 12 (⟨T⟩). Signed: ⟨U2⟩. Driver: ⟨H⟩."
                      " Depot ⟨place⟩."),
    ("en", "courier", "Parcel for ⟨P2⟩'s office is held at the ⟨place⟩ depot; ⟨H⟩ will redeliver"
                      " Tuesday. {{word|Will}} text ⟨PH⟩ first."),
    ("en", "courier", "Delivery failed — recipient ⟨V⟩ not in. Card left. Recipient phone ⟨PH⟩;"
                      " sender ⟨company⟩."),
    ("de", "courier", "Zustellung an Nachbarin ⟨T⟩, unterschrieben von ⟨P⟩. Fahrer: ⟨H⟩."),
    ("fr", "courier", "Colis remis à ⟨P⟩ (gardienne). Livreur : ⟨H⟩. Tél. destinataire ⟨PH⟩."),
    ("es", "courier", "Entregado a ⟨P⟩ en portería. Repartidor: ⟨H⟩. Origen ⟨place⟩."),
    ("it", "courier", "Consegnato a ⟨T⟩ (vicina). Firma: ⟨V⟩. Corriere ⟨company⟩."),
    ("nl", "courier", "Afgeleverd bij de buren (⟨T⟩). Ontvanger ⟨P⟩, tel. ⟨PH⟩."),
    ("pt", "courier", "Entregue a ⟨P⟩ na receção. Estafeta: ⟨H⟩."),
    ("pl", "courier", "Przesyłka odebrana przez ⟨P⟩. Kurier: ⟨H⟩, tel. ⟨PH⟩."),
    # --- insurance claim forms -------------------------------------------------------------
    ("en", "claims", "CLAIM FORM\nPolicyholder: ⟨S⟩\nDate of birth: ⟨DOB⟩\nThird party: ⟨Q⟩\n"
                     "Cover: ⟨product⟩\nHandler: ⟨role⟩ (⟨team⟩)"),
    ("en", "claims", "Claim 20-7781 from ⟨X⟩: water damage at ⟨place⟩ flat. ⟨T⟩ sent photos;"
                     " witness ⟨M⟩."),
    ("en", "claims", "Hi ⟨H⟩,\nWe have ⟨P2⟩'s claim under ⟨product⟩ and need the invoice.\nThanks,\n"
                     "⟨role⟩, ⟨company⟩"),
    ("de", "claims", "Schadenmeldung\nVersicherungsnehmer: ⟨S⟩\nGeburtsdatum: ⟨DOB⟩\nGegner: ⟨Q⟩\n"
                     "Tarif: ⟨product⟩"),
    ("fr", "claims", "Déclaration de sinistre\nAssuré : ⟨S⟩\nTiers : ⟨Q⟩\nContact : ⟨E⟩"),
    ("es", "claims", "Parte de siniestro\nAsegurado: ⟨S⟩\nTercero: ⟨Q⟩\nCompañía: ⟨company⟩"),
    ("it", "claims", "Denuncia sinistro\nAssicurato: ⟨S⟩\nControparte: ⟨Q⟩\nPolizza: ⟨product⟩"),
    ("nl", "claims", "Schadeformulier\nVerzekerde: ⟨S⟩\nTegenpartij: ⟨Q⟩\nMaatschappij: ⟨company⟩"),
    ("pt", "claims", "Participação de sinistro\nSegurado: ⟨S⟩\nTerceiro: ⟨Q⟩\nE-mail: ⟨E⟩"),
    ("pl", "claims", "Zgłoszenie szkody\nUbezpieczony: ⟨S⟩\nSprawca: ⟨Q⟩\nTel. ⟨PH⟩"),
]

# Records with no person at all: what a name rule must leave alone.
NEGATIVE_TEMPLATES: list[tuple[str, str, str]] = [
    ("en", "travel", "{{word|Will}} the ⟨product⟩ fare still apply if we fly from ⟨place⟩ instead?"),
    ("en", "travel", "{{word|Summer}} timetable starts 30 March; ⟨team⟩ updates ⟨place⟩ departures."),
    ("en", "clinic", "{{word|Grace}} period for referrals is 14 days. ⟨role⟩ reviews ⟨team⟩ lists weekly."),
    ("en", "hr", "{{word|Joy}} at work survey closes Friday. ⟨team⟩ and ⟨role⟩ please reply."),
    ("en", "claims", "{{word|Hope}} Street branch of ⟨company⟩ closed; claims go to ⟨team⟩ in ⟨place⟩."),
    ("en", "courier", "{{word|Chase}} the ⟨company⟩ parcel with ⟨team⟩; depot ⟨place⟩ has it."),
    ("en", "minutes", "{{word|Mark}} the ⟨product⟩ rollout as done. {{word|Bill}} ⟨company⟩ for March."),
    ("de", "hr", "Die ⟨role⟩ bittet ⟨team⟩ um Rückmeldung zu ⟨product⟩ bis ⟨place⟩-Termin."),
    ("fr", "travel", "Le tarif ⟨product⟩ n'est plus vendu au départ de ⟨place⟩ ; voir ⟨company⟩."),
    ("es", "claims", "La ⟨role⟩ de ⟨company⟩ revisa los partes de ⟨place⟩ esta semana."),
    ("it", "clinic", "Il ⟨role⟩ di ⟨team⟩ sposta le visite a ⟨place⟩."),
    ("nl", "courier", "De ⟨role⟩ van ⟨company⟩ meldt vertraging in ⟨place⟩."),
    ("pt", "minutes", "A ⟨role⟩ apresentou o ⟨product⟩ à equipa de ⟨place⟩."),
    ("pl", "call", "⟨role⟩ z ⟨company⟩ oddzwoni w sprawie ⟨product⟩ w ⟨place⟩."),
]

_SLOT = re.compile(r"⟨(\w+)⟩")
FORMS = ("full", "full", "full", "lower", "upper", "surname_comma", "initial", "native_order")


def _ascii(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text.replace("ł", "l").replace("Ł", "L").replace("đ", "d")
                                   .replace("Đ", "D"))
    return "".join(c for c in folded if c.isascii() and (c.isalnum() or c in ".-"))


class _Person:
    def __init__(self, r: random.Random, origin: str):
        givens, surnames, order = ORIGINS[origin]
        self.r, self.given, self.surname, self.order = r, r.choice(givens), r.choice(surnames), order

    def written(self, form: str) -> str:
        g, s = self.given, self.surname
        if form == "lower":
            return f"{g} {s}".lower()
        if form == "upper":
            return f"{g} {s}".upper()
        if form == "surname_comma":
            return f"{s}, {g}"
        if form == "initial":
            return f"{g[0]}. {s}"
        if form == "native_order":
            return f"{s} {g}" if self.order == "sg" else f"{s.upper()} {g}"
        return f"{s} {g}" if self.order == "sg" and self.r.random() < 0.5 else f"{g} {s}"

    def airline(self) -> str:
        return f"{_ascii(self.surname)}/{_ascii(self.given)}".upper()

    def email(self) -> str:
        local = _ascii(f"{self.given}.{self.surname}".replace(" ", "")).lower()
        return f"{local}@{self.r.choice(HOSTS)}"


def _phone(r: random.Random, lang: str) -> str:
    def d(n: int) -> str:
        return "".join(str(r.randrange(10)) for _ in range(n))

    shapes = {"en": [f"07{d(3)} {d(6)}", f"+44 20 {d(4)} {d(4)}"], "de": [f"0151 {d(8)}", f"+49 30 {d(8)}"],
              "fr": [f"06 {d(2)} {d(2)} {d(2)} {d(2)}", f"+33 7 {d(2)} {d(2)} {d(2)} {d(2)}"],
              "es": [f"6{d(2)} {d(3)} {d(3)}", f"+34 9{d(2)} {d(3)} {d(3)}"],
              "it": [f"3{d(2)} {d(3)} {d(4)}", f"+39 02 {d(4)} {d(4)}"],
              "nl": [f"06-{d(8)}", f"+31 20 {d(3)} {d(4)}"], "pt": [f"9{d(2)} {d(3)} {d(3)}", f"+351 21 {d(3)} {d(4)}"],
              "pl": [f"5{d(2)} {d(3)} {d(3)}", f"+48 22 {d(3)} {d(2)} {d(2)}"]}
    return r.choice(shapes[lang])


def _dob(r: random.Random, lang: str) -> str:
    day, month, year = r.randint(1, 28), r.randint(1, 12), r.randint(1940, 2004)
    return (f"{day:02d}/{month:02d}/{year}" if lang in ("en", "fr", "es", "it", "pt")
            else f"{day:02d}.{month:02d}.{year}" if lang in ("de", "pl") else f"{day:02d}-{month:02d}-{year}")


@functools.lru_cache(maxsize=1)
def _fresh():
    spec = importlib.util.spec_from_file_location("fresh", Path(__file__).with_name("fresh.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fill(r: random.Random, lang: str, template: str, origins: list[str]) -> tuple[str, list[str]]:
    """The marked text of `template` and the form of each name planted, in order."""
    people = [_Person(r, origins[0]), _Person(r, r.choice(sorted(ORIGINS)))]
    forms: list[str] = []

    def name(value: str, form: str) -> str:
        forms.append(form)
        return f"[[PERSON|{value}]]"

    def titled(p: _Person) -> str:
        title = r.choice(TITLES[lang])
        return f"{title} " + name(p.surname, "title")

    def slot(m: re.Match) -> str:
        key = m.group(1)
        p, q = people
        if key in ("P", "Q", "P2", "S"):
            who = q if key == "Q" else p
            form = r.choice(FORMS) if key != "P2" else "possessive"
            if key == "S":  # a form field: the layouts form fields use
                form = r.choice(("upper", "surname_comma", "full", "native_order"))
            return name(who.written(form if form != "possessive" else "full"), form)
        if key in ("G", "H"):
            return name((p if key == "G" else q).given, "given_alone")
        if key in ("T", "U", "U2"):
            return titled(q if key == "U" else p) if key != "T" else titled(q if r.random() < 0.5 else p)
        if key in ("A", "B"):
            who = p if key == "A" else q
            return name(who.airline(), "airline") + " " + r.choice(PNR_TITLES)
        if key in ("L", "M"):
            return name((p if key == "L" else q).written("lower"), "lower")
        if key == "N":
            return name(p.written("upper") if r.random() < 0.5 else p.written("surname_comma"), "clinical")
        if key == "V":
            return name(p.written("upper"), "upper")
        if key == "E":
            return f"[[EMAIL|{p.email()}]]"
        if key == "X":
            return name(p.written("full"), "with_email") + f" <[[EMAIL|{p.email()}]]>"
        if key == "PH":
            return f"[[PHONE|{_phone(r, lang)}]]"
        if key == "DOB":
            return f"[[DOB|{_dob(r, lang)}]]"
        pools = {"place": PLACES, "product": PRODUCTS, "team": TEAMS, "company": COMPANIES,
                 "role": ROLES[lang]}
        return "{{%s|%s}}" % (key, r.choice(pools[key]))

    return _SLOT.sub(slot, template), forms


def _record(lang: str, marked: str, origin: str, source: str, forms: list[str]) -> dict:
    rec = {**_fresh()._record(lang, marked), "origin": origin, "country": source}
    names = [(s, e) for s, e, kind, _ in rec["planted"] if kind == "PERSON"]
    rec["forms"] = [[s, e, form] for (s, e), form in zip(names, forms)]
    return rec


def build(n: int = 600, seed: int = 55) -> list[dict]:
    """`n` records: five with names for each one without."""
    r = random.Random(seed)
    origins = sorted(ORIGINS)
    records = []
    for i in range(n):
        if i % 6 == 5:
            lang, source, template = r.choice(NEGATIVE_TEMPLATES)
            marked, forms = _fill(r, lang, template, origins[:1])
            records.append(_record(lang, marked, "-", source, forms))
            continue
        lang, source, template = r.choice(TEMPLATES)
        origin = origins[i % len(origins)]
        marked, forms = _fill(r, lang, template, [origin])
        records.append(_record(lang, marked, origin, source, forms))
    return records
