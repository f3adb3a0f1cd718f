"""Context words of the supported languages: English, German, French, Dutch, Italian,
Spanish, Portuguese and Polish (and, for national ids and dates of birth, Swedish).

Plain vocabulary, written from each language's ordinary usage; the regular expressions in
`rules` and `people` are built from these lists (case-insensitively), and the judging
functions in `people` and `numbers` read them as sets.
"""

from __future__ import annotations

import re


def phrase_rx(word: str) -> str:
    """A case-insensitive phrase that Rust's `regex` and Python's `re` read alike (no
    ``(?i)``): spaces match runs of blanks, an apostrophe either quote."""
    out = []
    for c in word:
        if c == " ":
            out.append(r"[ \t]+")
        elif c in "'’":
            out.append("['’]")
        elif c.isalpha() and len(c.upper()) == 1 and c.upper() != c.lower():
            out.append(f"[{c.upper()}{c.lower()}]")
        else:
            out.append(re.escape(c))
    return "".join(out)


def phrases_rx(*words: str) -> str:
    """Any of the phrases, longest first (so "api key" wins over "api")."""
    return "(?:" + "|".join(phrase_rx(w) for w in sorted(set(words), key=lambda w: (-len(w), w))) + ")"

PASSWORD_WORDS = (
    "password", "passwords", "passwort", "passworte", "kennwort", "passwd", "pwd", "pw",
    "passphrase", "passcode", "mot de passe", "mdp", "wachtwoord", "parola d'ordine",
    "parola chiave", "pin", "clave", "contraseña", "contrasena", "senha", "palavra-passe",
    "palavra passe", "hasło", "haslo", "lösenord", "adgangskode", "salasana",
)
# Words for a PIN or a one-time code: their value may be digits alone ("PIN 4821"). A
# bare "code" is not one ("the code 404 error"): it needs a word that says what code.
PIN_WORDS = (
    "pin", "pin code", "pincode", "pin-code", "code pin", "codice pin", "código pin", "kod pin",
    "otp", "one-time code", "one time code", "one-time password", "verification code",
    "security code", "confirmation code", "login code", "2fa code", "sms code", "auth code",
    "authentication code", "bestätigungscode", "sicherheitscode", "einmalcode",
    "verifizierungscode", "code de vérification", "code de sécurité", "code de confirmation",
    "code à usage unique", "código de verificación", "código de seguridad",
    "código de confirmación", "código de verificação", "código de segurança",
    "codice di verifica", "codice otp", "codice di sicurezza", "verificatiecode",
    "beveiligingscode", "bevestigingscode", "kod weryfikacyjny", "kod sms", "kod jednorazowy",
    "kod potwierdzający", "kod bezpieczeństwa",
    # codes that open a door, an account or a device, and recovery codes
    "access code", "door code", "gate code", "entry code", "alarm code", "unlock code",
    "reset code", "recovery code", "backup code", "mfa code", "puk", "puk code", "tan",
    "zugangscode", "türcode", "tuercode", "entsperrcode", "freischaltcode", "anmeldecode",
    "code d'accès", "code d'entrée", "digicode", "code de connexion", "code secret",
    "inlogcode", "toegangscode", "deurcode", "ontgrendelcode", "codice di accesso",
    "codice segreto", "código de acceso", "código de acesso", "código secreto", "kod dostępu",
    "kod do drzwi", "kod logowania", "pin-nummer", "pinnummer", "pin-nr", "numer pin",
    "número pin", "numéro pin", "pin number",
)
# A bare word for a code: a PIN only with a link and digits alone ("the code is 558120",
# "Code: 847261"), and not after a word that names another kind of code (`OTHER_CODES`).
CODE_WORDS = ("code", "codes", "código", "codigo", "codice", "kod", "kode")
CODE_LINKS = ("is", "was", "is now", "ist", "lautet", "war", "est", "était", "es", "era", "é",
              "è", "jest", "to", "wynosi", "is nu", "luidt")
OTHER_CODES = {
    "error", "status", "exit", "return", "response", "http", "result", "reason", "fault",
    "failure", "postal", "zip", "post", "area", "country", "dial", "dialling", "dialing",
    "region", "language", "promo", "promotion", "promotional", "discount", "coupon", "voucher",
    "referral", "product", "article", "item", "sku", "tracking", "order", "reference", "ref",
    "tax", "source", "bar", "qr", "colour", "color", "event", "iso", "bank", "sort", "swift",
    "bic", "branch", "customer", "client", "cost", "project", "course", "class", "program",
    "billing", "invoice", "shipping", "booking", "reservation", "diagnostic", "trouble",
    "fehler", "artikel", "rabatt", "gutschein", "kunden",
}
# What stands between a password word and its value: "is", "ist", "lautet", "est", "è",
# "to", "in", "en", "auf", "naar", "op", ":" and "=" (read with up to four words between).
PASSWORD_LINKS = (
    "is now", "is", "was", "to", "ist jetzt", "ist", "lautet", "war", "auf", "est maintenant",
    "est", "était", "en", "pour", "is nu", "naar", "in", "op", "è ora", "è", "era", "a", "now",
    "jetzt", "nu", "ora", "es", "é", "jest", "wynosi", "är", "par", "para", "na", "por",
    "fue", "foi", "była", "był", "wurde", "werd", "è stata", "era stata", "sería", "será",
)
# Words for a user name and password written as a pair: "Zugangsdaten: anna.k / Sommer2021!".
CREDENTIAL_WORDS = (
    "credentials", "login", "log-in", "login details", "logon", "user/pass", "user / pass",
    "username/password", "username / password", "zugangsdaten", "anmeldedaten", "logindaten",
    "benutzer/passwort", "identifiants", "codes d'accès", "credenciales", "datos de acceso",
    "usuario/contraseña", "credenziali", "dati di accesso", "utente/password",
    "inloggegevens", "gebruikersnaam/wachtwoord", "dados de acesso", "credenciais",
    "utilizador/senha", "usuário/senha", "dane logowania", "login/hasło",
)
# Changing verbs that say the value after them is a new secret: "I changed it to X".
CHANGE_VERBS = (
    "changed", "set", "reset", "updated", "geändert", "gesetzt", "geaendert", "changé", "modifié",
    "défini", "veranderd", "gewijzigd", "ingesteld", "cambiato", "cambiata", "impostato",
    "impostata", "modificato", "modificata", "cambiado", "cambiada", "cambié", "puesto",
    "actualizado", "mudei", "mudado", "mudada", "alterei", "alterado", "alterada", "definido",
    "definida", "zmieniłem", "zmieniłam", "zmieniony", "zmienione", "ustawiłem", "ustawiłam",
    "veranderd", "aangepast", "remplacé", "changed it",
)
KEY_WORDS = (
    "api key", "api-key", "apikey", "api token", "access key", "access token", "auth token",
    "secret key", "secret", "key", "token", "schlüssel", "api-schlüssel", "zugangsschlüssel",
    "clé", "cle", "clé api", "jeton", "jeton d'accès", "sleutel", "api-sleutel", "toegangstoken",
    "chiave", "chiave api", "token di accesso", "bearer",
)
PHONE_WORDS = (
    "phone", "telephone", "tel", "mobile", "cell", "fax", "whatsapp", "call me", "call us",
    "call", "reach me", "text me", "landline", "ring me", "telefon", "telefonnummer", "handy",
    "mobil", "rufnummer", "erreichbar unter", "erreichbar bin ich unter", "erreichbar", "anrufen", "téléphone", "portable", "joindre",
    "appeler", "appelez", "telefoon", "mobiel", "bellen", "bereikbaar op", "telefono",
    "cellulare", "chiamare", "chiamatemi", "contattarmi", "móvil", "movil", "teléfono",
    "telefone", "telemóvel", "telemovel", "telefonu", "komórka", "komórki", "zadzwoń",
    "llamar", "llámame", "ligar", "tlf", "tfno", "tlf.", "tel.", "telefonisch",
)
CARD_WORDS = (
    "card", "credit card", "debit card", "visa", "mastercard", "amex", "maestro", "diners",
    "discover", "jcb", "karte", "kreditkarte", "carte", "carte bancaire", "kaart", "creditcard",
    "pinpas", "carta", "carta di credito", "bancomat",
)
ORDER_WORDS = (
    "order", "purchase", "orders", "purchases", "invoice", "ticket", "case", "reference", "ref", "tracking", "shipment", "bestellung",
    "rechnung", "vorgang", "sendung", "auftrag", "commande", "facture", "dossier", "colis",
    "bestelling", "factuur", "zending", "ordine", "fattura", "pratica", "spedizione",
    "pedido", "factura", "envío", "encomenda", "fatura", "zamówienie", "zamówienia", "faktura",
    "przesyłka",
    # customer and reference numbers: "Kundennummer 4417 …", "Número de cliente 3711…"
    "customer", "client", "kundennummer", "kunden-nr", "kundennr", "klantnummer", "cliente",
    "klienta", "klient", "referenz", "référence", "referencia", "referência", "riferimento",
    "referentie",
)
ID_WORDS = {  # context word -> the kind its value is
    "ssn": "SSN", "social security": "SSN", "social security number": "SSN",
    "national insurance": "NATIONAL_ID", "national insurance number": "NATIONAL_ID",
    "nino": "NATIONAL_ID", "ni number": "NATIONAL_ID", "steuer-id": "NATIONAL_ID",
    "steuerid": "NATIONAL_ID", "steuer-identifikationsnummer": "NATIONAL_ID",
    "steueridentifikationsnummer": "NATIONAL_ID", "sozialversicherungsnummer": "NATIONAL_ID",
    "personalausweisnummer": "NATIONAL_ID", "ausweisnummer": "NATIONAL_ID",
    "sécurité sociale": "NATIONAL_ID", "numéro de sécurité sociale": "NATIONAL_ID",
    "nir": "NATIONAL_ID", "insee": "NATIONAL_ID", "bsn": "NATIONAL_ID",
    "burgerservicenummer": "NATIONAL_ID", "sofinummer": "NATIONAL_ID",
    "codice fiscale": "NATIONAL_ID", "national id": "NATIONAL_ID", "id number": "NATIONAL_ID",
    "passport": "PASSPORT", "passport number": "PASSPORT", "reisepass": "PASSPORT",
    "reisepassnummer": "PASSPORT", "passnummer": "PASSPORT", "passeport": "PASSPORT",
    "paspoort": "PASSPORT", "paspoortnummer": "PASSPORT", "passaporto": "PASSPORT",
    "account number": "ACCOUNT", "account no": "ACCOUNT", "bank account": "ACCOUNT",
    "bank account number": "ACCOUNT", "checking account": "ACCOUNT", "acct": "ACCOUNT",
    "kontonummer": "ACCOUNT", "konto": "ACCOUNT", "numéro de compte": "ACCOUNT",
    "compte": "ACCOUNT", "rekeningnummer": "ACCOUNT", "rekening": "ACCOUNT",
    "numero di conto": "ACCOUNT", "conto": "ACCOUNT", "conto corrente": "ACCOUNT",
    "dni": "NATIONAL_ID", "nie": "NATIONAL_ID", "nif": "NATIONAL_ID",
    "documento de identidad": "NATIONAL_ID", "número de identidad": "NATIONAL_ID",
    "contribuinte": "NATIONAL_ID", "número de contribuinte": "NATIONAL_ID",
    "cartão de cidadão": "NATIONAL_ID", "pesel": "NATIONAL_ID", "numer pesel": "NATIONAL_ID",
    "numéro national": "NATIONAL_ID", "numéro de registre national": "NATIONAL_ID",
    "registre national": "NATIONAL_ID", "rijksregisternummer": "NATIONAL_ID",
    "personnummer": "NATIONAL_ID", "personal identity number": "NATIONAL_ID",
    "número de cuenta": "ACCOUNT", "número de conta": "ACCOUNT", "numer konta": "ACCOUNT",
    "sécu": "NATIONAL_ID", "numéro de sécu": "NATIONAL_ID", "carte vitale": "NATIONAL_ID",
    "n° ss": "NATIONAL_ID", "numéro ss": "NATIONAL_ID", "niss": "NATIONAL_ID",
    "número de identificación fiscal": "NATIONAL_ID", "identificación fiscal": "NATIONAL_ID",
    "número fiscal": "NATIONAL_ID", "nip": "NATIONAL_ID", "numer nip": "NATIONAL_ID",
    "tax id": "NATIONAL_ID", "tax number": "NATIONAL_ID", "steuernummer": "NATIONAL_ID",
    "identiteitsnummer": "NATIONAL_ID", "numero di identità": "NATIONAL_ID",
    "carta d'identità": "NATIONAL_ID", "numer dowodu": "NATIONAL_ID",
    "bsn-nummer": "NATIONAL_ID", "nif/nie": "NATIONAL_ID", "dni/nie": "NATIONAL_ID",
}
DOB_WORDS = (
    "born", "born on", "date of birth", "dob", "d.o.b.", "birthday", "birth date", "birthdate",
    "geboren", "geboren am", "geburtsdatum", "geburtstag", "né le", "née le", "né", "née",
    "date de naissance", "geboren op", "geboortedatum", "nato il", "nata il", "nato", "nata",
    "data di nascita", "nacido", "nacida", "nacido el", "nacida el", "nací el",
    "fecha de nacimiento", "fecha nac", "f. nac.", "nascido em", "nascida em", "nasci em",
    "nasci a", "data de nascimento", "urodzony", "urodzona", "urodziłem się", "urodziłam się",
    "data urodzenia", "ur.", "född", "födelsedatum", "sono nato il", "sono nata il",
    "je suis né le", "je suis née le", "ik ben geboren op",
    "birth", "date of birth:", "geb.", "geb. am", "geburtsdatum:", "né(e) le", "née(e)",
    "fecha de nac.", "f. de nacimiento", "nac.", "nacimiento", "nasceu em", "nasceu a",
    "nascido a", "nascida a", "nascimento", "data nasc.", "dt. nasc.", "ur. dnia", "urodzony dnia",
    "urodzona dnia", "data ur.", "nata a", "nato a", "data nascita", "geboorte", "geboren:",
    "geb.-datum", "geb.datum", "d.o.b", "dob.", "nasc.", "data de nasc.", "cumpleaños",
    "compleanno", "verjaardag", "urodziny",
)
# Words after a date that make it a date of birth: "Ich bin am 27.10.1949 geboren".
DOB_AFTER = ("geboren", "geb.", "born", "né", "née", "nato", "nata", "nacido", "nacida",
             "nascido", "nascida", "urodzony", "urodzona", "urodziłem się", "urodziłam się")
VERSION_WORDS = (
    "version", "versions", "ver", "v", "release", "build", "sdk", "firmware", "fw", "patch",
    "fixed in", "upgrade to", "upgraded to", "update to", "updated to", "versie", "versione",
    "aggiornamento a", "mise à jour", "release", "agent", "kb",
)
MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec "
    "januar februar märz maerz mai juni juli oktober dezember jänner "
    "janvier février fevrier mars avril juin juillet août aout septembre octobre novembre "
    "décembre decembre "
    "januari februari maart mei augustus "
    "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre dicembre"
).split()

# Names: titles (the word after is a name), greetings (a name may follow), words that are
# never part of a person's name although capitalised (sentence starts, German nouns).
TITLES = {
    "mr", "mrs", "ms", "miss", "mx", "dr", "prof", "sir", "dame", "herr", "frau", "hr", "fr",
    "m", "mme", "mlle", "monsieur", "madame", "mademoiselle", "me", "dhr", "mevr", "heer",
    "mevrouw", "juffrouw", "sig", "sig.ra", "sigra", "signor", "signora", "signore", "dott",
    "dott.ssa", "dottssa", "ing", "avv", "geachte heer", "meneer",
    "sra", "srta", "dona", "pani",  # Spanish, Portuguese, Polish
}
# Titles that are words or abbreviations of other things too ("Sr. Developer", "Dra." and
# "Pan" in a sentence): a name after them needs the lists' evidence (`people`).
EVIDENCED_TITLES = {"sr", "dra", "pan"}
GREETINGS = {
    "hi", "hello", "hey", "dear", "hiya", "morning", "afternoon", "evening", "thanks", "thank",
    "cheers",
    "hallo", "liebe", "lieber", "moin", "servus", "danke", "bonjour", "bonsoir", "salut", "cher",
    "chère", "chere", "merci", "beste", "hoi", "hey", "geachte", "goedemorgen", "goedemiddag",
    "goedenavond", "dank", "bedankt", "ciao", "gentile", "gentili", "caro", "cara", "buongiorno",
    "buonasera", "salve", "grazie", "egregio", "egregia",
    # Spanish, Portuguese, Polish ("Hola Marta,", "Bom dia Ana,", "Dzień dobry Pani Anno,")
    "hola", "días", "dias", "tardes", "noches", "estimado", "estimada", "querido", "querida",
    "gracias", "olá", "ola", "oi", "dia", "prezado", "prezada", "prezados", "prezadas",
    "estimados", "estimadas", "queridos", "queridas", "obrigado", "obrigada", "valeu",
    "thx", "dankjewel", "dankje",
    "cześć", "witam", "witaj", "dobry", "szanowny", "szanowna", "drogi", "droga", "dziękuję",
}
# Words that follow a greeting or a cue but name a group, not a person.
GROUP_WORDS = {
    "team", "all", "everyone", "there", "folks", "guys", "sir", "madam", "support", "colleagues",
    "zusammen", "leute", "kollegen", "kolleginnen", "damen", "herren", "équipe", "tous", "monsieur",
    "madame",
    "allemaal", "iedereen", "collega", "tutti", "signori", "colleghi", "customer", "service",
    "the", "a", "an", "our", "my", "your", "this", "that", "der", "die", "das", "le", "la", "les",
    "de", "het", "il", "lo", "gli", "mein", "meine", "mijn",
    # "customer", "team", "support" and "everyone" of the other languages ("Hallo Kundin,")
    "kunde", "kundin", "kunden", "client", "clients", "cliente", "clientes", "clienti", "klant",
    "klanten", "klient", "kliencie", "klienci", "equipo", "equipe", "zespole", "zespół", "państwo",
    "todos", "pessoal", "soporte", "suporte", "assistenza", "wsparcie", "helpdesk", "servicedesk",
}
NOT_NAMES = GROUP_WORDS | {"mon", "ma", "mio", "mia",
    # English function words and the nouns of forms and menus ("Bill Number", "Contact Us")
    "us", "to", "upon", "once", "with", "for", "from", "about", "by", "at", "on", "in", "of",
    "as", "so", "then", "here", "what", "which", "who", "how", "why", "where", "no", "yes",
    "not", "any", "some", "every", "each", "number", "lookup", "form", "page", "name",
    "feedback", "information", "info", "hours", "details", "address", "phone", "email", "mail",
    "payment", "center", "centre", "desk", "portal", "app", "settings", "section",
    "department", "reviews", "review", "policy", "terms", "help", "home", "contact", "login",
    "sign", "button", "menu", "tab", "link", "options", "option", "profile", "dashboard",
    "anonymized", "assistance", "refund", "delivery", "shipping", "billing", "subscription",
    # sentence starts and function words of the six languages
    "the", "this", "that", "these", "those", "our", "my", "your", "we", "i", "it", "its", "he",
    "she", "they", "please", "thanks", "thank", "regards", "best", "kind", "many", "cheers",
    "also", "and", "but", "or", "if", "when", "since", "after", "before", "today", "yesterday",
    "tomorrow", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "mein", "meine", "unser",
    "unsere", "ihr", "ihre", "sie", "wir", "ich", "es", "bitte", "danke", "viele", "grüße",
    "gruesse", "freundlichen", "mit", "und", "oder", "aber", "beste", "liebe", "hallo",
    "le", "la", "les", "un", "une", "mon", "ma", "mes", "notre", "nos", "votre", "vous", "nous",
    "je", "il", "elle", "merci", "cordialement", "bien", "bonne", "journée", "et", "ou", "mais",
    "de", "het", "een", "mijn", "onze", "uw", "wij", "ik", "hij", "zij", "graag", "groet",
    "groeten", "groetjes", "vriendelijke", "en", "maar", "lo", "gli", "uno", "mio", "mia",
    "nostro", "nostra", "noi", "io", "lui", "lei", "grazie", "cordiali", "saluti", "distinti",
    "presto", "per", "favore", "ma", "buona", "giornata", "ta", "dear", "hi", "hello",
    # months, days and capitalised words that start sentences or name things
    *MONTHS, "will", "can", "could", "should", "would", "did", "does", "is", "are", "was",
    "summer", "winter", "autumn", "spring", "santa", "santo", "san", "saint", "sainte", "st",
    "sankt", "sint", "new", "north", "south", "east", "west", "trace", "ray", "order", "status",
    "server", "cloud", "code", "power", "reader", "note", "sales", "admin", "account",
    "ticket", "invoice", "update", "error", "test",
}
# Nouns that introduce a person: "my colleague …", "Ansprechpartnerin bei uns ist …".
PERSON_CUES = (
    "colleague", "coworker", "co-worker", "my manager", "my boss", "contact person",
    "forwarding to", "forwarded to", "assigned to", "husband", "wife", "flatmate", "roommate",
    "account holder", "kollege", "kollegin", "ansprechpartner", "ansprechpartnerin",
    "collègue", "responsable du dossier", "interlocuteur", "interlocutrice", "mon mari",
    "ma femme", "collega", "contactpersoon", "leidinggevende", "referente", "marito", "moglie",
    "titolare", "compañero", "compañera", "colega", "mi marido", "mi mujer", "mi esposa",
    "mi esposo", "o meu marido", "a minha mulher", "a minha esposa", "kolega", "koleżanka",
    "mój mąż", "moja żona", "mein mann", "meine frau", "mijn man", "mijn vrouw",
    "mon collègue", "ma collègue", "la mia collega", "il mio collega",
)
# Words that make a capitalised run a business, not a person ("Lane Pharmacy").
BUSINESS_WORDS = {
    "pharmacy", "coffee", "cafe", "café", "bakery", "shop", "store", "stores", "market",
    "hardware", "restaurant", "bistro", "bar", "pub", "hotel", "inn", "salon", "studio",
    "studios", "clinic", "dental", "gym", "fitness", "books", "bookshop", "florist", "flowers",
    "garage", "motors", "auto", "foods", "kitchen", "deli", "brewery", "winery", "farm",
    "ltd", "limited", "llc", "inc", "corp", "co", "company", "gmbh", "ag", "kg", "sarl", "sas",
    "sa", "bv", "nv", "srl", "spa", "plc", "group", "holdings", "services", "solutions",
    "consulting", "systems", "labs", "partners", "associates", "agency", "logistics",
    "supplies", "trading", "industries", "international", "apotheke", "bäckerei", "laden",
    "boulangerie", "pharmacie", "librairie", "winkel", "bakkerij", "apotheek", "farmacia",
    "panificio", "negozio", "school", "university", "college", "academy", "hospital",
    "foundation", "bank", "insurance", "airlines", "team", "support",
}
SAINTS = {"san", "santo", "santa", "saint", "sainte", "st", "ste", "sankt", "sint", "são"}
# Closing lines of a message: the line after one is usually the sender's name.
CLOSINGS = (
    "thanks", "thank you", "many thanks", "regards", "kind regards", "best regards", "best",
    "best wishes", "cheers", "sincerely", "yours sincerely", "yours faithfully", "ta",
    "viele grüße", "beste grüße", "liebe grüße", "mit freundlichen grüßen", "freundliche grüße",
    "gruß", "grüße", "danke", "vielen dank", "cordialement", "bien à vous", "bien cordialement",
    "bonne journée", "merci", "salutations", "amitiés", "met vriendelijke groet", "groetjes",
    "groet", "groeten", "hartelijke groet", "bedankt", "cordiali saluti", "saluti", "grazie",
    "grazie mille", "a presto", "distinti saluti", "un saluto",
    "un saludo", "saludos", "atentamente", "gracias", "muchas gracias", "un abrazo",
    "cumprimentos", "melhores cumprimentos", "atenciosamente", "obrigado", "obrigada",
    "abraço", "abraços", "pozdrawiam", "z poważaniem", "serdecznie pozdrawiam", "dziękuję",
    "pozdrowienia", "bises", "bisous", "lg", "mfg", "mvg", "br", "thx",
)
# Closings that end a message whatever follows them on their line ("Cordiali saluti, Anna
# Rossi"); the others ("Thanks, Windows works now") need the line break or the name lists.
SIGN_OFFS = tuple(c for c in CLOSINGS if " " in c and c not in ("thank you", "many thanks")) + (
    "regards", "sincerely", "cordialement", "salutations", "amitiés", "groeten", "groetjes",
    "saluti", "saludos", "atentamente", "cumprimentos", "atenciosamente", "pozdrawiam",
    "pozdrowienia", "grüße", "gruß",
)
# Words after which a name may follow but need not ("This is Windows 11", "I am Anna"):
# a word after them is a name only when the name lists know it.
WEAK_PERSON_CUES = (
    "this is", "my name is", "i am", "i'm", "name is", "me llamo", "mi nombre es", "soy",
    "je m'appelle", "je suis", "c'est", "ich heiße", "mein name ist", "ich bin", "hier ist",
    "mi chiamo", "sono", "qui è", "mijn naam is", "ik ben", "hier is", "o meu nome é",
    "chamo-me", "sou", "aqui é", "nazywam się", "jestem", "mam na imię", "z tej strony",
    "sent by", "de la part de", "de parte de", "da parte di", "namens",
    # asking for a call back ("Merci de rappeler Sigrid", "Proszę oddzwonić do Mykola")
    "rappeler", "richiamare", "llamad a", "llamar a", "llame a", "ligação para",
    "oddzwonić do", "zadzwonić do",
)
# The sender and recipient fields of a forwarded or quoted e-mail's header, as mail programs
# of the supported languages write them ("From: Ana Souza", "Von: …", "Van: …", "De : …").
MAIL_HEADERS = ("from", "to", "cc", "bcc", "von", "an", "van", "aan", "de", "à", "a", "para",
                "da", "od", "do", "dw")
# Words after which two or more lower-case words may be a name the lists make a given name
# and a surname ("placed by ping liang", "ask michael babu", "cc anna kowalska").
LOWER_CUES = (
    "by", "to", "with", "ask", "cc", "tell", "from", "contact", "call", "for", "attn",
    "von", "mit", "par", "avec", "por", "con", "com", "door", "met", "przez", "od", "dla",
    # "to", "for" and "of" of the other languages ("para selin çelik", "do ngozi nwosu")
    "para", "an", "für", "de", "pour", "di", "aan", "voor", "do", "na",
)
PARTICLES = {
    "van", "von", "de", "der", "den", "del", "della", "delle", "dei", "degli", "di", "da", "dal",
    "du", "des", "la", "le", "ten", "ter", "te", "zu", "zum", "zur", "vom", "het", "op", "dos",
    "das", "do", "d'", "l'", "'t", "'s", "’s", "’t", "y", "mac", "mc", "bin", "ibn", "el", "al",
    # Irish: "Ó Briain", "Ní Bhriain", "Nic Dhonnchadha", "Mac Giolla", "Mag Uidhir"
    "ó", "ní", "nic", "uí", "ua", "mhic", "mag",
}

# Addresses: street types, as separate words (English and Romance) or as word endings
# (German and Dutch compounds: "Lindenstraße", "Kerkstraat").
STREET_WORDS_AFTER = {  # the name stands before: "12 Oak Street"
    "street", "st", "road", "rd", "avenue", "ave", "av", "lane", "ln", "drive", "dr", "court",
    "ct", "boulevard", "blvd", "way", "place", "pl", "terrace", "ter", "crescent", "cres",
    "close", "square", "sq", "gardens", "gdns", "grove", "park", "parkway", "pkwy", "circle",
    "cir", "trail", "trl", "row", "mews", "hill", "walk", "green", "rise", "vale", "view",
    "villas", "wharf", "highway", "hwy", "freeway", "expressway", "loop", "path", "pike",
    "plaza", "point", "ridge", "run", "crossing", "alley", "bypass", "causeway", "center",
    "centre", "common", "commons", "corner", "cove", "creek", "crest", "dale", "estate",
    "estates", "falls", "field", "fields", "ford", "forest", "fork", "fort", "glen", "harbor",
    "harbour", "haven", "heights", "hollow", "island", "junction", "key", "knoll", "lake",
    "lakes", "landing", "manor", "meadow", "meadows", "mill", "mills", "mount", "mountain",
    "orchard", "oval", "pass", "passage", "pine", "pines", "port", "prairie", "ranch",
    "rapids", "river", "shore", "shores", "spring", "springs", "station", "stream", "summit",
    "trace", "track", "turnpike", "union", "valley", "village", "ville", "vista", "well",
    "wells", "wood", "woods", "parade", "promenade", "embankment", "quay", "yard", "drove",
    "chase", "croft", "fold", "gate", "hey", "brow", "end", "leys", "pastures", "paddock",
    "bank", "bridge", "broadway", "by-pass", "circus", "cross", "dene", "downs", "garth",
    "grange", "hall", "head", "heath", "holt", "house", "court", "lodge", "market", "mead",
    "moor", "nook", "side", "spur", "top", "wynd", "gardens", "acres", "allee", "straße",
    "strasse", "weg", "platz", "gasse", "ring", "damm",
    # the rest of the USPS street suffixes (Publication 28, appendix C1)
    "annex", "arcade", "bayou", "beach", "bend", "bluff", "bluffs", "bottom", "branch",
    "brook", "brooks", "burg", "burgs", "camp", "canyon", "cape", "centers", "circles", "cliff",
    "cliffs", "club", "corners", "course", "courts", "coves", "crossroad", "crossroads",
    "curve", "divide", "drives", "extension", "extensions", "fall", "ferry", "flat", "flats",
    "fords", "forge", "forges", "forks", "gateway", "glens", "greens", "groves", "harbors",
    "hills", "inlet", "islands", "isle", "junctions", "keys", "knolls", "land", "light",
    "lights", "loaf", "lock", "locks", "mall", "manors", "mission", "motorway", "mountains",
    "neck", "overpass", "parks", "parkways", "plain", "plains", "points", "ports", "radial",
    "ramp", "rapid", "rest", "ridges", "roads", "route", "shoal", "shoals", "skyway", "spur",
    "spurs", "squares", "stravenue", "streets", "throughway", "trafficway", "trailer", "tunnel",
    "underpass", "unions", "valleys", "via", "viaduct", "views", "villages", "walks", "ways",
    "rue",
}
# Towns: words inside a town's name ("Neustadt am Rübenberge", "Stratford-upon-Avon").
TOWN_JOINERS = {"am", "an", "im", "bei", "ob", "in", "sur", "sous", "lès", "les", "en", "aan",
                "upon", "on", "la", "le", "de", "di", "del", "della", "d'", "van", "den", "der",
                "op", "the", "and"}
STREET_WORDS_BEFORE = {  # the name follows: "rue de la Paix 3", "Via Roma 12"
    "rue", "avenue", "av", "boulevard", "bd", "bld", "chemin", "allée", "allee", "impasse",
    "place", "quai", "route", "cours", "passage", "square", "voie", "sentier", "ruelle",
    "faubourg", "rond-point", "via", "viale", "piazza", "piazzale", "corso", "largo", "vicolo",
    "strada", "contrada", "borgo", "lungomare", "lungotevere", "località", "localita", "rotonda",
    "stretto", "canale", "salita", "traversa", "calle", "rotonda", "lungolago", "vico",
    # Portuguese and Spanish ("Rua Augusta 1500", "Avenida Paulista", "Paseo del Prado 8")
    "rua", "avenida", "travessa", "praça", "alameda", "estrada", "rodovia", "plaza", "paseo",
    "camino", "carretera", "ronda", "glorieta", "pasaje", "travesía",
    # abbreviated ("Avda. de la Constitución 8", "C/ Serrano 27", "Pza. Mayor 3") and Polish
    # ("ul. Długa 5", "al. Jerozolimskie 100", "pl. Zbawiciela 3", "os. Tysiąclecia 12")
    "avda", "avd", "c/", "pza", "pl.", "ctra", "trav", "largo", "ul", "ulica", "aleja", "al.",
    "plac", "os.", "osiedle", "v.le", "p.za", "p.zza",
}
# Street words after a street's name that are hardly ever a person's surname ("Jackson
# Street", "Charles Square"; not "Lane", "Hill", "Green", "Wood"): a name before one is a street.
STREET_WORDS_NAMING = {"street", "road", "avenue", "boulevard", "blvd", "square", "terrace",
                       "crescent", "highway", "parkway", "straße", "strasse"}
STREET_ENDINGS = (
    "straße", "strasse", "str.", "str", "weg", "gasse", "allee", "platz", "ring", "damm", "ufer",
    "chaussee", "steig", "pfad", "markt", "graben", "berg", "hof", "park", "stieg", "zeile",
    "wall", "tor", "kamp", "feld", "straat", "laan", "plein", "gracht", "kade", "singel", "dijk",
    "pad", "steeg", "dreef", "wal", "markt", "baan", "veld", "hage", "hout", "kamp", "erf",
    "burg", "brink", "dam", "haven", "haag", "boulevard",
)
UNIT_WORDS = {
    "apt", "apartment", "suite", "ste", "unit", "flat", "floor", "fl", "room", "rm", "studio",
    "building", "bldg", "box", "po", "p.o.", "wohnung", "etage", "stock", "appartement",
    "bâtiment", "batiment", "étage", "etage", "appartamento", "interno", "int", "scala", "piano",
    "bus", "huisnummer", "whg", "m", "lok", "piso", "esc", "pta", "app",
}
# The sign before a house number ("Rua do Ouro, n.º 45") and the side of a floor after its
# number ("3º izq.", "2º dcha", "1º esq"): words inside a Spanish or Portuguese address.
HOUSE_NUMBER_SIGNS = {"nº", "n.º", "n°", "nr", "núm", "num"}
FLOOR_SIDES = {"izq", "izda", "dcha", "dcho", "esq", "dto", "drt", "dta", "ctro", "frente"}
