"""A customer reply: the facts it must convey, what it must not say, and gates against stuffing."""

from __future__ import annotations

import math
import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.replies
    from .rewards import component, reward
else:  # tests/rlforge_replies.py: its siblings by their copied names
    from rlforge_rewards import component, reward

# A reply is text, so what can be forged is the text itself: pasting the facts many times,
# padding them with filler, copying the customer's own message back, or slipping a hidden
# character into forbidden content. Text is compared as words of its NFKC, case-folded
# form with format characters (Unicode Cf, e.g. U+200B) removed, so neither spacing,
# punctuation nor invisible characters change a match.

FACT_SHARE = 0.5      # at most this share of a reply's words may be fact text
COPY_SHARE = 0.35     # at most this share of its word 4-grams may come from what it was shown
COPY_N = 4
NOTE_N = 5            # a forbidden item this long or longer leaks by any shared 5-gram


def _fold(text):
    text = unicodedata.normalize("NFKC", text or "")
    return "".join(c for c in text if unicodedata.category(c) != "Cf").casefold()


def words(text):
    """The words of a text, as replies and facts are compared."""
    return re.findall(r"\w+", _fold(text))


def _spans(hay, needle):
    """Start positions where the word list `needle` occurs in the word list `hay`."""
    n = len(needle)
    if not n:
        return []
    first = needle[0]
    return [i for i, w in enumerate(hay) if w == first and hay[i:i + n] == needle]


def _mentions_words(hay, item):
    """Whether the words of `item` occur in `hay` (a word list), in order and adjacent,
    or glued into one word ('FR-1083' also matches 'FR1083')."""
    needle = words(item)
    if not needle:
        return False
    if len(needle) >= NOTE_N:  # a long note: any run of NOTE_N of its words
        grams = {tuple(needle[i:i + NOTE_N]) for i in range(len(needle) - NOTE_N + 1)}
        return any(tuple(hay[i:i + NOTE_N]) in grams for i in range(len(hay) - NOTE_N + 1))
    return bool(_spans(hay, needle)) or (len(needle) > 1 and "".join(needle) in hay)


def contains(text, fact):
    """Whether `fact` appears in `text`, compared as words (how facts and forbidden items
    are matched; generators filter with it too)."""
    return _mentions_words(words(text), fact) if fact else False


def _ngrams(tokens, n):
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def bigrams(text):
    """Adjacent word pairs of a text, as 'w1 w2' strings."""
    tokens = words(text)
    return [f"{a} {b}" for a, b in zip(tokens, tokens[1:])]


def trigrams(text):
    """Runs of three words of a text, as 'w1 w2 w3' strings."""
    tokens = words(text)
    return [" ".join(tokens[i:i + 3]) for i in range(len(tokens) - 2)]


def common_share(text, common, n=2):
    """The share of a text's word pairs that are in `common`; with `n` = 3, of its distinct
    word triples (a phrase said again is said once)."""
    grams = set(trigrams(text)) if n == 3 else bigrams(text)
    common = set(common)
    return sum(1 for p in grams if p in common) / len(grams) if grams else 0.0


def copied_share(text, sources):
    """The share of the word 4-grams of `text` that occur in any of `sources`."""
    grams = _ngrams(words(text), COPY_N)
    shown = set()
    for source in sources:
        shown |= _ngrams(words(source), COPY_N)
    return len(grams & shown) / len(grams) if grams else 0.0


# Which ticket a reply answers. A reply's content words (not stop words, not the required
# facts' words), weighted by tf-idf over the company's replies, are compared by cosine with
# the real reply's and with each knowledge-base reply written for another issue (one whose
# words the real reply shares little of). A reply to another ticket, whatever its wording,
# stays closest to that ticket's; a fixed template shares almost nothing with any.
TOPIC_STOP = frozenset("""
a an the and or but if then else of to in on at by for with from as is are was were be been
being this that these those it its you your we our us they them their he she his her me my
not no yes do does did done have has had having can could will would shall should may might
must so too very just also please thank thanks hello dear regards best kind sincerely team
support there here what which who whom when where why how all any each some more most other
such only own same than into over under again further once about above below out off during
before after let get got going know like make made need want help""".split())
TOPIC_MARGIN = 0.3   # a reply may be at most this much closer to another issue's reply
TOPIC_FLOOR = 0.03   # and must share at least this much with the real reply


def topic_terms(text, drop=()):
    """The content words of a text: alphabetic, three letters or more, not stop words."""
    return [w for w in words(text)
            if len(w) > 2 and w.isalpha() and w not in TOPIC_STOP and w not in drop]


def topic_vector(text, idf, default_idf, drop=()):
    """A text's unit tf-idf vector ({term: weight}, log-scaled term counts)."""
    counts = {}
    for t in topic_terms(text, drop):
        counts[t] = counts.get(t, 0) + 1
    vec = {t: (1 + math.log(c)) * idf.get(t, default_idf) for t, c in counts.items()}
    norm = math.sqrt(sum(x * x for x in vec.values())) or 1.0
    return {t: x / norm for t, x in vec.items()}


def cosine(a, b):
    if len(a) > len(b):
        a, b = b, a
    return sum(x * b.get(t, 0.0) for t, x in a.items())


def topic_scores(topic, text, facts):
    """(cosine with the real reply, highest cosine with another issue's reply) of a reply."""
    drop = {w for f in facts for w in words(f)}
    mine = topic_vector(text, topic["idf"], topic["default_idf"], drop)
    return (cosine(mine, topic["reply"]),
            max((cosine(mine, other) for other in topic["others"]), default=0.0))


# Which issue a reply answers, as the company's own data tells it. At build time a linear
# classifier is trained on the company's replies labelled by their issue (intent or
# category; `rlforge.tasks.generators.reply_issues`); its weights ride in the task's hidden
# reference. A reply must be read as this ticket's issue, ahead of every other issue by
# `margin`. Its features are the reply's content words and word pairs outside the required
# facts' spans, so appending this ticket's facts to another issue's reply adds nothing.
ISSUE_MARGIN = 0.1


def fact_positions(tokens, facts):
    """The positions of `tokens` (a word list) that are part of a required fact."""
    covered = set()
    for f in facts:
        needle = words(f)
        for i in _spans(tokens, needle):
            covered.update(range(i, i + len(needle)))
    return covered


def issue_features(text, facts=()):
    """A reply's features for the issue model: its content words (as `topic_terms`) and
    adjacent word pairs, leaving out the spans of `facts` (pairs never cross one)."""
    tokens = words(text)
    covered = fact_positions(tokens, facts)
    out, prev = set(), None
    for i, w in enumerate(tokens):
        if i in covered or not w.isalpha():
            prev = None
            continue
        if len(w) > 2 and w not in TOPIC_STOP:
            out.add(w)
        if prev is not None:
            out.add(f"{prev} {w}")
        prev = w
    return out


# What the reply does for the customer, not what it names: a keyword list (a sentence of
# `LIST_ITEMS` or more items of at most three words, joined by commas, "and" or "or") and
# a refusal ("we are unable to help with ...") name an issue without answering it, so the
# issue model reads the reply without them (a red team's refusals and templates listing
# the issue's strongest words passed 31 of 77 Bitext tasks when it read the whole reply).
LIST_ITEMS = 4
REFUSAL = re.compile(r"\b(?:unable|cannot|can ?not|can[’']?t|not able|regret|unfortunately)\b")


def answering_text(text):
    """The sentences of a reply that are neither a keyword list nor a refusal."""
    kept = []
    for sentence in re.split(r"(?<=[.!?;:])\s+|\n+", text or ""):
        folded = _fold(sentence)
        items = re.split(r",|\band\b|\bor\b", folded)
        if sum(1 for item in items if 0 < len(words(item)) <= 3) >= LIST_ITEMS:
            continue
        if REFUSAL.search(folded):
            continue
        kept.append(sentence)
    return "\n".join(kept)


def issue_scores(model, text, facts=()):
    """(this issue's score, the best other issue's score) of a reply under the issue model
    (`{"classes", "label", "bias", "weights": {feature: "class:weight class:weight"}}`);
    each present feature weighs 1/sqrt(number of features), as the model was trained.
    Only the reply's `answering_text` is read."""
    feats = issue_features(answering_text(text), facts)
    scale = 1 / math.sqrt(len(feats)) if feats else 0.0
    logits = [float(b) for b in model["bias"]]
    table = model["weights"]
    for f in feats:
        for item in table.get(f, "").split():
            c, w = item.split(":")
            logits[int(c)] += float(w) * scale
    mine = model["classes"].index(model["label"])
    return logits[mine], max((x for i, x in enumerate(logits) if i != mine), default=0.0)


# A reply made of the knowledge base's fragments: runs cut out of its sentences, each
# ended where the cut fell ("... navigate to the."), strung one after another. Each run is
# the company's own phrasing, so the word-pair and phrasing gates pass it; the runs are
# short, so the 4-grams that cross from one to the next are new and the copy gate's share
# stays low; and taken from replies the issue model reads as this issue (the same steps
# serve several issues), it passed `answers_issue` (a red team: 9 of 73 Bitext tasks; the
# first half of each KB sentence, strung: 26 of 73).
# A written reply says whole sentences, its own or the company's stock ones, and seldom
# cuts one out of a longer sentence it was shown. A sentence of `FRAGMENT_MIN` words or
# more is cut with k words of its own when all but k of its words run, in order and
# adjacent, inside a knowledge-base sentence at least `FRAGMENT_CUT` words longer than the
# run. At most `FRAGMENT_LIMITS[k]` of a reply's sentences may be cut with k words or
# fewer of their own: a third whole cuts, half with one word added, two thirds with two,
# 85% with three, 90% with four (Bitext's 855 held-out real replies, each against 24
# replies of a knowledge base: none over; the red team's stitches: 41% to 69% whole cuts;
# a stitch of cuts with three words added to each passed 21 of 75 tasks with two levels).
FRAGMENT_MIN = 4
FRAGMENT_CUT = 2
FRAGMENT_LIMITS = (1 / 3, 1 / 2, 2 / 3, 0.85, 0.9)
# a sentence ends at . ! ? : ; before white space, and at a line break; in a reply, a mark
# glued to the next word ends one too (a policy can leave the space out, a KB's web address
# or "e.g." is not a sentence end)
_SENTENCE = re.compile(r"(?<=[.!?:;])\s+|\n+")
_REPLY_SENTENCE = re.compile(r"(?<=[.!?:;])(?:\s+|(?=[^\W\d_]))|\n+")


def sentence_words(text, *, glued=False):
    """The word lists of a text's sentences (split at . ! ? : ; and line breaks; with
    `glued`, also where a mark touches the next word), read as `words` reads them:
    compatibility forms folded and invisible format characters (a zero width space after a
    full stop, say) dropped before the text is split."""
    text = unicodedata.normalize("NFKC", text or "")
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    split = _REPLY_SENTENCE if glued else _SENTENCE
    return [w for w in (words(s) for s in split.split(text)) if w]


def kb_sentences(texts):
    """The sentences of `texts` a fragment could be cut from, as space-joined words."""
    return sorted({" ".join(s) for t in texts for s in sentence_words(t)
                   if len(s) >= FRAGMENT_MIN + FRAGMENT_CUT})


def own_words(text, sentences, *, glued=False):
    """For each sentence of a reply of `FRAGMENT_MIN` words or more (split as
    `sentence_words` does with `glued`): how many of its words are its own beside the
    longest run it shares with a longer sentence of `sentences` (`kb_sentences`), or None
    when it shares no such run of `FRAGMENT_MIN` words."""
    kb = [s.split() for s in sentences]
    at: dict = {}  # a KB 4-gram -> [(sentence, position)]
    for k, s in enumerate(kb):
        for j in range(len(s) - FRAGMENT_MIN + 1):
            at.setdefault(tuple(s[j:j + FRAGMENT_MIN]), []).append((k, j))
    seen: dict = {}
    out = []
    for s in sentence_words(text, glued=glued):
        if len(s) < FRAGMENT_MIN:
            continue
        key = tuple(s)
        if key not in seen:
            best = None
            for i in range(len(s) - FRAGMENT_MIN + 1):
                for k, j in at.get(key[i:i + FRAGMENT_MIN], ()):
                    if j and i and s[i - 1] == kb[k][j - 1]:
                        continue  # not where the shared run starts
                    run = FRAGMENT_MIN
                    while (i + run < len(s) and j + run < len(kb[k])
                           and s[i + run] == kb[k][j + run]):
                        run += 1
                    if len(kb[k]) >= run + FRAGMENT_CUT:
                        best = len(s) - run if best is None else min(best, len(s) - run)
            seen[key] = best
        out.append(seen[key])
    return out


def fragment_shares(text, sentences, *, glued=False):
    """The share of a reply's sentences cut out of the knowledge base's with at most k
    words of their own, for each k of `FRAGMENT_LIMITS` (zeros for a reply of no sentence
    of `FRAGMENT_MIN` words)."""
    own = own_words(text, sentences, glued=glued)
    return [sum(1 for n in own if n is not None and n <= k) / len(own) if own else 0.0
            for k in range(len(FRAGMENT_LIMITS))]


def cut_from_kb(text, sentences, limits=FRAGMENT_LIMITS):
    """Whether a reply is made of the knowledge base's fragments: the first k (words of
    its own) whose share of cut sentences passes its limit, else None. The reply is read
    split both ways (`sentence_words`): a mark glued to the next word hides a sentence end
    from the first, and the second can split a sentence of its own in two."""
    for glued in (False, True):
        for k, (share, limit) in enumerate(zip(fragment_shares(text, sentences, glued=glued), limits)):
            if share > limit:
                return k, share, limit
    return None


REPLY_CHARS_PER_WORD = 40  # a reply longer than this many characters a word allowed is too long


def score_reply(ref, submitted):
    """A customer reply: required facts (partial credit, each once), forbidden content,
    length, and seven gates against stuffing: the share of fact text, how many of the
    knowledge base's other facts it names (a listing of the knowledge base names many),
    the share copied from what the policy was shown, how many of its sentences are cut out
    of the knowledge base's longer ones (`whole_sentences`, `fragments`), whether it answers this ticket and
    not another (`on_topic`, `topic_scores`), how many of its word pairs are pairs the
    company's other replies use (filler such as lorem ipsum, or common words strung
    together, are not), and how many of its word triples are the company's common
    phrasing (`phrased`: word pairs strung into a walk are not); and, where the company's
    data labels its tickets' issues, whether the reply is read as this ticket's issue
    (`answers_issue`, `issue_scores`)."""
    text = (submitted or "").strip()
    comps = {}
    lo, hi = ref.get("min_words", 15), ref.get("max_words", 400)
    if len(text) > REPLY_CHARS_PER_WORD * hi:
        # Far past the length allowed in any writing: failed before NFKC, which turns one
        # character into up to 18 (U+FDFA) and would hand every gate millions of words.
        comps["length"] = component(0, 0, "medium", gate=True,
                                    detail=f"{len(text)} characters; at most {hi} words allowed")
        return reward(comps, pass_threshold=ref.get("pass_threshold", 1.0), reason="length")
    tokens = words(text)
    n_words = len(text.split())
    comps["length"] = component(1 if lo <= n_words <= hi else 0, 0, "medium", gate=True,
                                detail=f"{n_words} words; allowed {lo}-{hi}")
    leaked = [f for f in ref.get("forbidden", []) if _mentions_words(tokens, f)]
    comps["no_forbidden_content"] = component(0 if leaked else 1, 0, "fine", gate=True,
                                              detail=f"{len(leaked)} forbidden item(s) present")
    facts = ref.get("required", [])
    hits = [f for f in facts if _mentions_words(tokens, f)]
    comps["key_facts"] = component(len(hits) / len(facts) if facts else 1.0, 1.0, "coarse",
                                   detail=f"{len(hits)}/{len(facts)} key facts")
    covered = fact_positions(tokens, facts)
    share = len(covered) / len(tokens) if tokens else 1.0
    limit = ref.get("max_fact_share", FACT_SHARE)
    comps["not_stuffed"] = component(share <= limit, 0, "medium", gate=True,
                                     detail=f"{share:.0%} of the words are fact text; at most {limit:.0%}")
    others = [d for d in ref.get("distractors", []) if _mentions_words(tokens, d)]
    allowed = ref.get("max_distractors", 1)
    comps["focused"] = component(len(others) <= allowed, 0, "medium", gate=True,
                                 detail=f"{len(others)} of the knowledge base's other facts named; "
                                        f"at most {allowed}")
    copied = copied_share(text, ref.get("copy_sources", []))
    limit = ref.get("max_copy_share", COPY_SHARE)
    comps["original"] = component(copied <= limit, 0, "medium", gate=True,
                                  detail=f"{copied:.0%} of its 4-grams were in what it was shown; "
                                         f"at most {limit:.0%}")
    if ref.get("kb_sentences"):
        cut = cut_from_kb(text, ref["kb_sentences"], ref.get("fragment_limits", FRAGMENT_LIMITS))
        comps["whole_sentences"] = component(
            cut is None, 0, "medium", gate=True,
            detail="no more of its sentences cut out of the knowledge base's than a written "
                   "reply's" if cut is None else
                   f"{cut[1]:.0%} of its sentences are cut out of the knowledge base's longer "
                   f"ones with at most {cut[0]} word(s) of their own; at most {cut[2]:.0%}")
    topic = ref.get("topic")
    if topic:
        own, other = topic_scores(topic, text, facts)
        floor, margin = topic.get("floor", TOPIC_FLOOR), topic.get("margin", TOPIC_MARGIN)
        comps["on_topic"] = component(own >= floor and own >= other - margin, 0, "medium",
                                      gate=True,
                                      detail=f"{own:.2f} alike the real reply's words (at least "
                                             f"{floor:.2f}); {other:.2f} another issue's (at most "
                                             f"{margin:.2f} more)")
    issue = ref.get("issue")
    if issue:
        own, other = issue_scores(issue, text, facts)
        need = issue.get("margin", ISSUE_MARGIN)
        comps["answers_issue"] = component(
            own - other >= need, 0, "medium", gate=True,
            detail=f"read as this ticket's issue ahead of every other by {own - other:+.2f} "
                   f"(at least {need:+.2f})")
    if ref.get("common_bigrams"):
        rate = common_share(text, ref["common_bigrams"])
        need = ref.get("min_common_share", 0.0)
        comps["fluent"] = component(rate >= need, 0, "medium", gate=True,
                                    detail=f"{rate:.0%} of its word pairs are pairs the company's "
                                           f"replies use; at least {need:.0%}")
    if ref.get("common_trigrams"):
        # Word pairs can be strung into anything; runs of three the company writes cannot
        # be, without copying: a walk over the knowledge base's pairs has few of them.
        rate = common_share(text, ref["common_trigrams"], n=3)
        need = ref.get("min_trigram_share", 0.0)
        comps["phrased"] = component(rate >= need, 0, "medium", gate=True,
                                     detail=f"{rate:.0%} of its word triples are the company's "
                                            f"common phrasing; at least {need:.0%}")
    failed = [name for name, c in comps.items() if c["gate"] and c["value"] < 1]
    return reward(comps, pass_threshold=ref.get("pass_threshold", 1.0),
                  reason=failed[0] if failed else "")
