"""Chinese names written in pinyin: which words are pinyin, and which are Chinese surnames.

Why a module of its own: the name lists (`name_lists`) know Chinese surnames ("Wang",
"Zhang") but few Chinese given names, which are written as one to three syllables run
together ("Xiuying", "Jianguo") and are too many to list. The syllables themselves are a
closed set, given by the spelling rules of Hanyu Pinyin: an initial consonant (or none)
and a final that the initial may take. A word made of one or two such syllables after a
listed one-syllable surname ("Wang Xiuying", "Xiuying Wang", "WANG Xiuying") is read as a
name by `people`.

The table below is the standard initial-final table, written from the spelling rules
(tone marks and the umlaut dropped: "lü" is written "lu", "lv" or "lue").
"""

from __future__ import annotations

import functools
import re

# Finals each group of initials takes (Hanyu Pinyin's syllable table).
_FINALS = {
    ("b", "p", "m"): "a o ai ei ao an en ang eng i ie iao ian in ing u",
    ("m", "p", "f"): "ou",
    ("m",): "e iu",
    ("f",): "a o ei an en ang eng u",
    ("d", "t"): "a e ai ei ao ou an en ang eng ong i ie iao iu ian ing u uo ui uan un",
    ("n", "l"): "a e ai ei ao ou an en ang eng ong i ia ie iao iu ian in iang ing u uo uan un v ve ue",
    ("l",): "o",
    ("g", "k", "h"): "a e ai ei ao ou an en ang eng ong u ua uo uai ui uan un uang",
    ("j", "q", "x"): "i ia ie iao iu ian in iang ing iong u ue uan un",
    ("zh", "ch", "sh", "r"): "a e ai ao ou an en ang eng ong i u ua uo uai ui uan un uang",
    ("zh", "sh"): "ei",
    ("z", "c", "s"): "a e ai ei ao ou an en ang eng ong i u uo ui uan un",
    ("y",): "a o e ao ou an in ang ing ong i u ue uan un",
    ("w",): "a o ai ei an en ang eng u",
    ("",): "a o e ai ei ao ou an en ang eng er",
}
SYLLABLES = frozenset(initial + final for initials, finals in _FINALS.items()
                      for initial in initials for final in finals.split())
# A word of one to three syllables, longest syllables tried first ("xian" before "xi an").
_SYL = "(?:" + "|".join(sorted(SYLLABLES, key=lambda s: (-len(s), s))) + ")"
_WORD = re.compile(rf"{_SYL}{{1,3}}")


@functools.lru_cache(maxsize=65536)
def syllables(low: str) -> int:
    """How many pinyin syllables make the case-folded word `low` (0: it is not pinyin):
    the longest first syllable that leaves a split of the rest ("xiuying" is xiu-ying). No
    syllable after the first starts with a vowel: pinyin marks such a split with an
    apostrophe ("Xi'an"), so "xian" is one syllable."""
    if not _WORD.fullmatch(low):
        return 0
    if low in SYLLABLES:
        return 1
    for cut in range(len(low) - 1, 0, -1):
        head, tail = low[:cut], low[cut:]
        if head in SYLLABLES and tail[0] not in "aoeiuv":
            rest = syllables(tail)
            if rest:
                return 1 + rest
    return 0
