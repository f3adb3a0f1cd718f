"""Redact personal data and secrets before anything is written to the store.

Every ingest passes its free text through a `Redactor` (`redactor`). A found value is
replaced by a pseudonym such as ``<EMAIL_3f9a1c>``: the kind and the first 6 hex digits
of an HMAC-SHA256 of the (normalised) value, keyed by the database's own key, so the same
value always becomes the same placeholder and a re-ingest maps identically. Placeholders
are never redacted again: ``redact(redact(x)) == redact(x)``.

How it works, and why it is fast: one regular expression (`rules`), written so that
Rust's `regex` (polars) and Python's `re` read it the same way, finds *candidates*.
Whether a candidate is really a secret (Luhn, mod-97, `ipaddress`, entropy, hard-negative
rules) is then decided in Python by the detector of the rule that found it, a function of
the candidate text alone: `secrets`, `numbers`, `network`, `airline` for names written
``SURNAME/GIVEN MS``, and `people` for person names and addresses in runs of capitalised
words (a second pass). `redact_text` applies them
match by match with `re`; `redact_series` wraps every match in NUL sentinels and splits
on them in one vectorised pass, judges only the *unique* candidates, and maps them back
with a hash replace, so both give the same result by construction. Where a detector
keeps part of a match (what follows an IBAN of its country's length, ``DB_PASSWORD=``
before a value) and that part could hold a finding of its own, the text is passed again,
so a second `redact_text` changes nothing. A value redacted once is redacted wherever
else the text writes it, and a name's words wherever the text writes them alone (`echo`). `words` holds the six locales' context words.
"""
