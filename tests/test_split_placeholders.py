"""Splits do not depend on the database's redaction key: placeholders are keyed hashes."""

from __future__ import annotations

from rlforge.tasks.splits import near_duplicate_groups, subject_key

BODY = ("Hello, this is {p} from accounts. Our invoice for March was charged twice to the "
        "card ending 4242 and the second charge has not been refunded yet. Regards, {p}")


def test_the_same_ticket_redacted_under_two_keys_groups_and_keys_alike():
    one, two = "<PERSON_3f2a1b>", "<PERSON_abcdef>"
    assert subject_key(f"Refund for {one} please") == subject_key(f"Refund for {two} please")
    keys = ["csv:1", "csv:2", "csv:3"]
    texts = [BODY.format(p=one), "an unrelated ticket about exporting reports to csv files",
             BODY.format(p="<PERSON_0a1b2c>")]
    other = [BODY.format(p=two), texts[1], BODY.format(p="<PERSON_ffeedd>")]
    assert near_duplicate_groups(keys, texts) == near_duplicate_groups(keys, other)
    assert near_duplicate_groups(keys, texts)[2] == "csv:1"


def test_the_triage_screen_reads_the_same_words_under_two_keys():
    """The near-copy shortcut screen drops a task by word overlap: a placeholder's hash
    (`f2a1b` of `<PERSON_3f2a1b>`) must not be a word, or a ticket is dropped in one
    database and kept in another."""
    from rlforge.verify.shortcuts_triage import words

    assert words(BODY.format(p="<PERSON_3f2a1b>")) == words(BODY.format(p="<PERSON_abcdef>"))
