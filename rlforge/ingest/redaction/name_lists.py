"""The given names and surnames person-name detection reads, for many countries.

Why a module of its own: the lists come from a large package that is slow to load, so
they are derived once into a small cached file and read lazily from there.

Source: the `names-dataset` package (Apache-2.0; 730k first names and 983k last names with
their rank in each of 105 countries). Unpickling it takes about 30 s and 1.8 GB, so the
first use derives the names ranked within the top `TOP_RANK` of at least one country,
case-folded, into a file in the cache directory, and later uses read that file. Without
the package, the given names of every country in `gender-guesser`'s dictionary are used,
and no surnames. A listed word that is also one of the most frequent words of a supported
language (`wordfreq`, derived into the same file) needs more evidence than the lists
(`people`).

The file is a hash table, not a word list: 8 bytes a slot, each the top 59 bits of a
word's BLAKE2b hash and 5 bits that say in which lists it is (open addressing, linear
probing, at most half full: 32 MB for every ranked name). Reading it back maps the file
and does no per-word work (building sets of 430k words took 0.15 s of every process that
redacts, a log ingest too); a look-up hashes the word, reads the page of a slot or two
and remembers the answer.
"""

from __future__ import annotations

import array
import functools
import gzip
import hashlib
import importlib.util
import json
import mmap
import os
import re
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Callable, Iterable, NamedTuple, Protocol

# A name counts when it ranks within this many of one country's names (the lists rank
# each country's names separately; a common word such as "Best" can rank high somewhere,
# which `COMMON_TOP` answers). No country ranks past about 20,000, so this takes every
# ranked name: 573k given names and 842k surnames (3000 took 172k and 191k, and missed
# rare surnames such as "Pieszak" or "Dobosiewicz").
TOP_RANK = 30000
# A surname ranked within this many of one country's is a prominent one ("Miller", "Rossi"):
# the long tail holds words such as "Valley" too, which need more than a common given name
# before them ("Hope Valley").
PROMINENT_RANK = 3000
# and is no evidence alone when it is one of this many most frequent words of a language
# ("Label", "Printer" and "Stationery" are in the lists too)
COMMON_TOP = 10000
# A word within this many of a language's words is a known word ("kernel", "module"): a
# listed name that is one cannot stand in for an unlisted partner ("Kernel Module"), while
# a rare one can ("Min Xia", "Hredhaan Sanghvi": `people`).
KNOWN_TOP = 30000
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


def _derive(pickled: Path) -> tuple[set[str], set[str]]:
    """The names ranked within `TOP_RANK` of one country, and those within `PROMINENT_RANK`."""
    import pickle

    with gzip.open(pickled, "rb") as f:
        table = pickle.load(f)  # noqa: S301 - the installed package's own data file
    out, prominent = set(), set()
    for name, info in table.items():
        ranks = [r for r in (info.get("rank") or {}).values() if r is not None]
        if ranks and min(ranks) <= TOP_RANK and _WORD.fullmatch(name):
            out.add(name.casefold())
            if min(ranks) <= PROMINENT_RANK:
                prominent.add(name.casefold())
    del table
    return out, prominent


def _common_words(top: int = COMMON_TOP) -> set[str]:
    """The `top` most frequent words of each supported language (`wordfreq`): a name-list
    entry that is one of the `COMMON_TOP` ("Best", "Data", "Grace") is no evidence alone."""
    try:
        import wordfreq
    except ImportError:
        return set()
    return {w.casefold() for lang in LANGUAGES for w in wordfreq.top_n_list(lang, top)}


class Words(Protocol):
    """A set of case-folded words, as far as name detection asks: membership and size."""

    def __contains__(self, word: object) -> bool: ...

    def __len__(self) -> int: ...


class NameLists(NamedTuple):
    """Case-folded words: given names, surnames, the languages' common words, their known
    words (a longer list of the same), and the prominent surnames."""

    given: Words
    surnames: Words
    common: Words
    known: Words
    prominent: Words


_MAGIC = b"rlforge-name-table 3\n"
_HEAD = 256  # the magic line and the list sizes (JSON), padded: the slots start aligned
_LISTS = ("given", "surnames", "common", "known", "prominent")  # bit 0 to 4 of a slot
_BITS = 5
_MEMO_LIMIT = 200_000


def _key(word: str) -> int:
    """A word's 64-bit hash (stable across processes, unlike `hash`)."""
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8", "surrogateescape"),
                                          digest_size=8).digest(), "little")


class _Table:
    """The hash table of the cache file: which lists each word is in (see the module)."""

    def __init__(self, slots: array.array | memoryview, sizes: dict[str, int]):
        self.slots, self.sizes, self.mask = slots, sizes, len(slots) - 1
        self.memo: dict[str, int] = {}

    @classmethod
    def build(cls, lists: dict[str, set[str]]) -> "_Table":
        flags: dict[str, int] = {}
        for bit, name in enumerate(_LISTS):
            for w in lists[name]:
                flags[w] = flags.get(w, 0) | 1 << bit
        size = 1 << max(10, (2 * len(flags) - 1).bit_length())  # at most half full
        slots = array.array("Q", bytes(8 * size))
        for w, f in flags.items():
            h = _key(w)
            i = h & (size - 1)
            while slots[i]:
                i = (i + 1) & (size - 1)
            slots[i] = (h >> _BITS) << _BITS | f
        return cls(slots, {name: len(lists[name]) for name in _LISTS})

    def flags(self, word: str) -> int:
        """The list bits of `word` (0: in none)."""
        got = self.memo.get(word)
        if got is None:
            h = _key(word)
            tag, i, got = h >> _BITS, h & self.mask, 0
            while True:
                slot = self.slots[i]
                if not slot:
                    break
                if slot >> _BITS == tag:
                    got = slot & (1 << _BITS) - 1
                    break
                i = (i + 1) & self.mask
            if len(self.memo) >= _MEMO_LIMIT:
                self.memo.clear()
            self.memo[word] = got
        return got

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        slots = array.array("Q", self.slots)
        if sys.byteorder != "little":
            slots.byteswap()
        head = _MAGIC + json.dumps(self.sizes).encode()
        # written whole, then renamed: a reader never sees half a file
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(head.ljust(_HEAD, b" ") + slots.tobytes())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)

    @classmethod
    def read(cls, path: Path) -> "_Table | None":
        """The table of a cache file, mapped (a look-up reads the one page it probes);
        None if it is missing or not whole."""
        try:
            with open(path, "rb") as f:
                head = f.read(_HEAD)
                if not head.startswith(_MAGIC):
                    return None
                sizes = json.loads(head[len(_MAGIC):])
                n = os.fstat(f.fileno()).st_size - _HEAD
                if n <= 0 or n % 8 or (n // 8) & (n // 8 - 1) \
                        or not isinstance(sizes, dict) or set(sizes) != set(_LISTS):
                    return None
                if sys.byteorder == "little":
                    mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                    return cls(memoryview(mapped)[_HEAD:].cast("Q"), sizes)
                slots = array.array("Q")
                slots.frombytes(f.read())
                slots.byteswap()
                return cls(slots, sizes)
        except (OSError, ValueError):
            return None


class _InTable:
    """One list of a `_Table`, as a set of words."""

    def __init__(self, table: _Table, name: str):
        self.table, self.bit, self.size = table, 1 << _LISTS.index(name), table.sizes[name]

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and bool(self.table.flags(word) & self.bit)

    def __len__(self) -> int:
        return self.size


def _lists_of(table: _Table) -> NameLists:
    return NameLists(*(_InTable(table, name) for name in _LISTS))


def cache_file(cache_dir: Path | None = None) -> Path:
    """The derived lists' file for the installed `names-dataset` (which need not exist)."""
    return (cache_dir or default_cache()) / (
        f"names-{version('names-dataset')}-{TOP_RANK}-{COMMON_TOP}-{KNOWN_TOP}-{PROMINENT_RANK}-3.table")


@functools.lru_cache(maxsize=4)
def load(cache_dir: Path | None = None) -> NameLists:
    """The name lists: the cached derivation of `names-dataset` and `wordfreq` (built on
    first use), or, without `names-dataset`, `gender-guesser`'s given names alone."""
    # found, not imported: the package's import pulls in pycountry, and only its data is read
    spec = importlib.util.find_spec("names_dataset")
    if spec is None or not spec.origin:
        return NameLists(frozenset(_gender_guesser_given()), frozenset(), frozenset(_common_words()),
                         frozenset(_common_words(KNOWN_TOP)), frozenset())
    cache = cache_file(cache_dir)
    table = _Table.read(cache)
    if table is None:
        folder = Path(spec.origin).parent / "v3"
        surnames, prominent = _derive(folder / "last_names.pkl.gz")
        table = _Table.build({"given": _derive(folder / "first_names.pkl.gz")[0] | _gender_guesser_given(),
                              "surnames": surnames, "prominent": prominent,
                              "common": _common_words(),
                              "known": _common_words(KNOWN_TOP)})
        table.write(cache)
    return _lists_of(table)


def cached_lines(name: str, package: str, derive: Callable[[], Iterable[str]],
                 cache_dir: Path | None = None) -> list[str]:
    """Lines derived from an installed package's data by `derive`, kept in the cache
    directory under `name` and the package's version: later processes only read them."""
    path = (cache_dir or default_cache()) / f"{name}-{version(package)}.txt.gz"
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            text = f.read()
        if text.endswith("\n"):  # whole
            return text.split("\n")[:-1]
    except (OSError, ValueError, EOFError):
        pass
    lines = list(derive())
    path.parent.mkdir(parents=True, exist_ok=True)
    # written whole, then renamed: a reader never sees half a file
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as raw, gzip.open(raw, "wt", encoding="utf-8") as f:
        f.write("".join(f"{line}\n" for line in lines))
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return lines
