"""The given names and surnames person-name detection reads, for many countries.

Why a module of its own: the lists come from a large package that is slow to load, so
they are derived once into a small cached file and read lazily from there.

Source: the `names-dataset` package (Apache-2.0; 730k first names and 983k last names with
their rank in each of 105 countries). Unpickling it takes about 30 s and 1.8 GB, so the
first use derives the names ranked within the top `TOP_RANK` of at least one country,
case-folded, into ``names-<version>-<TOP_RANK>.txt.gz`` in the cache directory (about
0.3 s to read back), and later uses read that file. Without the package, the given names
of every country in `gender-guesser`'s dictionary are used, and no surnames. A listed
word that is also one of the most frequent words of a supported language (`wordfreq`,
derived into the same file) needs more evidence than the lists (`people`).
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
from importlib.metadata import version
import os
import re
import tempfile
from pathlib import Path
from typing import NamedTuple

# A name counts when it ranks within this many of one country's names (the lists rank
# each country's names separately; a common word such as "Best" can rank high somewhere).
TOP_RANK = 3000
# and is no evidence alone when it is one of this many most frequent words of a language
# ("Label", "Printer" and "Stationery" are in the lists too)
COMMON_TOP = 10000
LANGUAGES = ("en", "de", "fr", "es", "it", "nl", "pt", "pl")
_WORD = re.compile(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*")


def default_cache() -> Path:
    """Where the derived lists are kept: ``$XDG_CACHE_HOME/rlforge``, else the machine-wide
    ``/var/tmp/rlforge-cache`` (the default cache of prepared environments too)."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "rlforge" if xdg else Path("/var/tmp/rlforge-cache")


def _gender_guesser_given() -> set[str]:
    import gender_guesser

    path = Path(gender_guesser.__file__).parent / "data" / "nam_dict.txt"
    out = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line[0] in "#=":
                continue
            name = line.split(None, 2)[1]
            out.add(name.replace("+", "-").casefold())
    return out


def _derive(pickled: Path) -> set[str]:
    import pickle

    with gzip.open(pickled, "rb") as f:
        table = pickle.load(f)  # noqa: S301 - the installed package's own data file
    out = set()
    for name, info in table.items():
        ranks = [r for r in (info.get("rank") or {}).values() if r is not None]
        if ranks and min(ranks) <= TOP_RANK and _WORD.fullmatch(name):
            out.add(name.casefold())
    del table
    return out


def _common_words() -> set[str]:
    """The `COMMON_TOP` most frequent words of each supported language (`wordfreq`): a
    name-list entry that is also one ("Best", "Data", "Grace") is no evidence alone."""
    try:
        import wordfreq
    except ImportError:
        return set()
    return {w.casefold() for lang in LANGUAGES for w in wordfreq.top_n_list(lang, COMMON_TOP)}


class NameLists(NamedTuple):
    """Case-folded words: given names, surnames, and the languages' common words."""

    given: frozenset[str]
    surnames: frozenset[str]
    common: frozenset[str]


@functools.lru_cache(maxsize=4)
def load(cache_dir: Path | None = None) -> NameLists:
    """The name lists: the cached derivation of `names-dataset` and `wordfreq` (built on
    first use), or, without `names-dataset`, `gender-guesser`'s given names alone."""
    # found, not imported: the package's import pulls in pycountry, and only its data is read
    spec = importlib.util.find_spec("names_dataset")
    if spec is None or not spec.origin:
        return NameLists(frozenset(_gender_guesser_given()), frozenset(), frozenset(_common_words()))
    folder = Path(spec.origin).parent / "v3"
    cache = (cache_dir or default_cache()) / (
        f"names-{version('names-dataset')}-{TOP_RANK}-{COMMON_TOP}.txt.gz")
    try:
        with gzip.open(cache, "rt", encoding="utf-8") as f:
            lines = f.read().split("\n")
        if len(lines) == 3:
            return NameLists(*(frozenset(line.split(" ")) - {""} for line in lines))
    except (OSError, ValueError, EOFError):
        pass
    given = _derive(folder / "first_names.pkl.gz") | _gender_guesser_given()
    surnames = _derive(folder / "last_names.pkl.gz")
    common = _common_words()
    cache.parent.mkdir(parents=True, exist_ok=True)
    # written whole, then renamed: a reader never sees half a file
    fd, tmp = tempfile.mkstemp(dir=cache.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as raw, gzip.open(raw, "wt", encoding="utf-8") as f:
        f.write("\n".join(" ".join(sorted(words)) for words in (given, surnames, common)))
    os.chmod(tmp, 0o644)
    os.replace(tmp, cache)
    return NameLists(frozenset(given), frozenset(surnames), frozenset(common))
