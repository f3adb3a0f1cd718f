"""The verifier every answer, reply and script task carries in its tests/ directory.

This file is copied verbatim into each task as `tests/rlforge_verify.py` and run by
`tests/test.sh` with any Python 3.8+ and nothing else installed, so Harbor (or any runner)
can score a task without rlforge. rlforge imports the same functions and scores in its
own process, with its sandbox as the launcher of policy code; both paths give the same
reward.

    python3 rlforge_verify.py REFERENCE.json [--logs /logs/verifier]

A reward has named components, each a value in [0, 1] with a weight and a level (coarse:
the result is right; medium: valid format / it runs; fine: process constraints). A
component marked as a gate must be 1, or the total is 0. Otherwise the total is the
weighted mean of the non-gate components. A failing reward names its `reason`. The result
is written as Harbor reads it, reward.json (a flat map of numbers: `reward`, the total, and
one number per component) and reward.txt (the total), in full to rlforge_result.json beside
them, and printed on stdout as one line starting with `RLFORGE_REWARD `.

Code the policy wrote never runs in this process: see "policy code: the trust boundary"
below for the contract every verifier kind follows.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unicodedata

REWARD_PREFIX = "RLFORGE_REWARD "
MAX_ANSWER_CHARS = 400
# Spaces and tabs only around the keyword: with re.M, \s* would also take newlines and
# backtrack quadratically over a reply of many blank lines.
ANSWER_LINE = re.compile(r"^[ \t]*(?:final[ \t]+)?answer[ \t]*[:=][ \t]*(.*)$", re.I | re.M)


# --- rewards -------------------------------------------------------------------------

def component(value, weight=1.0, level="coarse", gate=False, detail=""):
    """One named reward component."""
    value = max(0.0, min(1.0, float(value)))
    return {"value": value, "weight": float(weight), "level": level, "gate": bool(gate),
            "detail": detail}


def total_of(components):
    """0 if any gate is not fully met, else the weighted mean of the other components."""
    if any(c["gate"] and c["value"] < 1.0 for c in components.values()):
        return 0.0
    scored = [c for c in components.values() if not c["gate"] and c["weight"] > 0]
    if not scored:
        return 1.0
    return sum(c["value"] * c["weight"] for c in scored) / sum(c["weight"] for c in scored)


def reward(components, pass_threshold=1.0, detail="", reason=""):
    """The result: components, total, outcome and, for a fail, a typed `reason` (why the
    policy's submission failed: e.g. `wrong_answer`, `crash`, `timeout`, `signal`)."""
    total = round(total_of(components), 6)
    passed = total >= pass_threshold - 1e-9
    out = {"components": components, "total": total, "outcome": "pass" if passed else "fail",
           "detail": detail}
    if not passed:
        out["reason"] = reason or "wrong_answer"
    return out


# --- answers -------------------------------------------------------------------------

def extract_answer(text):
    """The answer in a reply: the last `ANSWER: ...` line if there is one, else all of it."""
    if text is None:
        return ""
    found = ANSWER_LINE.findall(text)
    answer = found[-1] if found else text
    return answer.strip().strip("`").strip()


def normalize(text):
    """Case-, space- and punctuation-insensitive form used for exact comparison."""
    text = text.casefold().strip().strip("\"'`.,;:!?()[]{}<>").strip()
    text = re.sub(r"[\s_\-/]+", " ", text)
    return text.strip()


def parse_number(text):
    cleaned = text.strip().rstrip(".").replace(",", "")
    cleaned = re.sub(r"\s*(lines?|events?|entries|requests?|seconds?|s|ms|%)$", "", cleaned, flags=re.I)
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


TS_FORMATS = ("%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S.%f",
              "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M")


def parse_timestamp(text):
    """A written time as a naive datetime, or None. A `Z` or `+00:00` suffix is dropped;
    any other UTC offset names another instant than the same digits in the logs' own
    time, so such a time is not read (never silently shifted or ignored)."""
    t = text.strip()
    if t[-1:] in "Zz":
        t = t[:-1]
    offset = re.search(r"([+-])(\d\d):?(\d\d)$", t) if re.search(r"\d[T ]\d", t) else None
    if offset:
        if offset.group(2) != "00" or offset.group(3) != "00":
            return None
        t = t[:offset.start()]
    for fmt in TS_FORMATS:
        try:
            return dt.datetime.strptime(t.strip(), fmt)
        except ValueError:
            continue
    return None


def _minute_precision(text):
    """Whether a reference time is written to the minute (`YYYY-MM-DD HH:MM`)."""
    return re.fullmatch(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d", text.strip()) is not None


def split_items(text):
    return [i for i in (x.strip() for x in re.split(r"[,\n;]+", text)) if i]


def score_answer(ref, submitted):
    """Score one answer against the reference; see `reward` for the shape of the result."""
    kind = ref["answer_kind"]
    answer = extract_answer(submitted)
    comps = {}
    if len({normalize(a) for a in ANSWER_LINE.findall(submitted or "")}) > 1:
        comps["valid_format"] = component(0, 0, "medium", gate=True,
                                          detail="several different ANSWER lines")
        comps["correct"] = component(0)
        return reward(comps, detail="ambiguous answer")
    if not answer:
        comps["valid_format"] = component(0, 0, "medium", gate=True, detail="empty answer")
        comps["correct"] = component(0)
        return reward(comps, detail="no answer")
    if len(answer) > ref.get("max_chars", MAX_ANSWER_CHARS):
        comps["valid_format"] = component(0, 0, "medium", gate=True,
                                          detail=f"answer longer than {ref.get('max_chars', MAX_ANSWER_CHARS)} characters")
        comps["correct"] = component(0)
        return reward(comps, detail="answer too long")
    ok_format, correct, detail = True, False, ""
    expected = ref["answer"]
    if kind == "label":
        labels = {normalize(x): x for x in ref["labels"]}
        got = normalize(answer)
        ok_format = got in labels
        correct = ok_format and got == normalize(expected)
        detail = "not one of the offered labels" if not ok_format else ""
    elif kind == "exact":
        correct = normalize(answer) == normalize(expected)
    elif kind == "numeric":
        value = parse_number(answer)
        ok_format = value is not None
        if ok_format:
            tol = max(float(ref.get("abs_tol", 0)), abs(float(expected)) * float(ref.get("rel_tol", 0)))
            correct = abs(value - float(expected)) <= tol + 1e-12
        detail = "" if ok_format else "not a single number"
    elif kind == "timestamp":
        value = parse_timestamp(answer)
        ok_format = value is not None
        if ok_format:
            want = parse_timestamp(expected)
            if _minute_precision(expected):  # a minute asked: its seconds do not matter
                value = value.replace(second=0, microsecond=0)
            correct = abs((value - want).total_seconds()) <= float(ref.get("tolerance_sec", 0))
        detail = "" if ok_format else ("not a timestamp as the logs write it (YYYY-MM-DD "
                                       "HH:MM:SS, no UTC offset)")
    elif kind == "set":
        got = {normalize(x) for x in split_items(answer)}
        want = {normalize(x) for x in expected}
        ok_format = bool(got)
        correct = got == want
        inter = len(got & want)
        f1 = 0.0 if not got or not want else 2 * inter / (len(got) + len(want))
        comps["overlap_f1"] = component(f1, 0, "fine", detail="informational")
    else:
        raise ValueError(f"unknown answer kind {kind!r}")
    comps["valid_format"] = component(1 if ok_format else 0, 0, "medium", gate=True, detail=detail)
    comps["correct"] = component(1 if correct else 0, 1.0, "coarse")
    return reward(comps)


# --- replies -------------------------------------------------------------------------
#
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


REPLY_CHARS_PER_WORD = 40  # a reply longer than this many characters a word allowed is too long


def score_reply(ref, submitted):
    """A customer reply: required facts (partial credit, each once), forbidden content,
    length, and six gates against stuffing: the share of fact text, how many of the
    knowledge base's other facts it names (a listing of the knowledge base names many),
    the share copied from what the policy was shown, whether it answers this ticket and
    not another (`on_topic`, `topic_scores`), how many of its word pairs are pairs the
    company's other replies use (filler such as lorem ipsum, or common words strung
    together, are not), and how many of its word triples are the company's common
    phrasing (`phrased`: word pairs strung into a walk are not)."""
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
    covered = set()
    for f in facts:
        needle = words(f)
        for i in _spans(tokens, needle):
            covered.update(range(i, i + len(needle)))
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
    topic = ref.get("topic")
    if topic:
        own, other = topic_scores(topic, text, facts)
        floor, margin = topic.get("floor", TOPIC_FLOOR), topic.get("margin", TOPIC_MARGIN)
        comps["on_topic"] = component(own >= floor and own >= other - margin, 0, "medium",
                                      gate=True,
                                      detail=f"{own:.2f} alike the real reply's words (at least "
                                             f"{floor:.2f}); {other:.2f} another issue's (at most "
                                             f"{margin:.2f} more)")
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


# --- policy code: the trust boundary ------------------------------------------------
#
# The contract every verifier kind follows. Code the policy controls (a submitted program,
# the repository's tests that import the submitted code) runs only through a `PolicyCode`
# launcher, never in this process:
# - it gets a private copy of what it needs (`tree`, read-write) and read-only data
#   directories (`data`), never the verifier's inputs (reference.json, hidden answers,
#   canary names) and never the directory the reward is written to;
# - its results come back over channels this process owns (its stdout pipe; for test runs
#   a FIFO whose reports are taken first-come, see rlforge_repair.py), never from a file
#   it could have written;
# - it runs as another uid than the scorer (rlforge's sandbox, or uid 65534 when this
#   file runs as root, as under Harbor), so it cannot signal or trace the scorer;
# - once it has run, a crash, a timeout, a signal or a missing or malformed result is a
#   *fail* with a typed `reason`, never a missing reward.
# `LocalPolicy` is the launcher for tests/test.sh; rlforge passes its sandbox launcher
# (rlforge.verify.boundary) to the same scoring functions.

POLICY_UID = 65534
INIT_NAMES = ("systemd", "init", "launchd", "upstart", "openrc-init", "runit")


class SandboxBroken(Exception):
    """The launcher could not start policy code at all (an infrastructure failure)."""


class Ran:
    """What one run of policy code did."""

    def __init__(self, code, stdout="", stderr="", timed_out=False):
        self.code, self.stdout, self.stderr, self.timed_out = code, stdout, stderr, timed_out

    @property
    def reason(self):
        """`timeout`, `signal` (killed by one), `crash` (non-zero exit), or '' when it exited 0."""
        if self.timed_out:
            return "timeout"
        if self.code is None or self.code < 0 or self.code > 128:
            return "signal"
        return "crash" if self.code else ""


class _LocalHandle:
    def __init__(self, proc, policy, timeout):
        self.proc, self.policy = proc, policy
        self.deadline = time.monotonic() + timeout
        self.killed = False

    def poll(self):
        """True once the code has exited (or was killed at its deadline)."""
        if self.proc.poll() is not None:
            return True
        if time.monotonic() > self.deadline:
            self.kill()
            self.killed = True
            return True
        return False

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.policy.sweep()

    def result(self, out_limit=1_000_000):
        try:
            out, err = self.proc.communicate(timeout=max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.killed = True
            self.kill()
            out, err = self.proc.communicate()
        out, err = out or b"", err or b""
        self.kill()  # whatever it left behind goes before its result is read
        self.proc.wait()
        code = None if self.killed else self.proc.returncode
        return Ran(code, out[:out_limit].decode("utf-8", "replace"),
                   err[-10_000:].decode("utf-8", "replace"), self.killed)


class LocalPolicy:
    """Runs policy code as a child process of this verifier (tests/test.sh under Harbor).

    As root (Harbor runs test.sh as root), the code runs as uid/gid 65534 with no
    supplementary groups in a session of its own; its tree is handed to that uid, its data
    copied to a directory it may only read, and every process of that uid is killed when
    it ends. Without root the code runs as this process's own uid: there is no uid to drop
    to, and only rlforge's sandbox (or a separate verifier container) keeps it apart.
    """

    def __init__(self, python=None, drop=None):
        self.drop = (hasattr(os, "geteuid") and os.geteuid() == 0) if drop is None else drop
        self.python = python or sys.executable

    def places(self, tree, data):
        """Where the tree and each data directory appear to the code (host paths here)."""
        return tree, dict(data)

    def _prepare(self, tree, data):
        if not self.drop:
            return
        for dirpath, dirnames, filenames in os.walk(tree):
            for name in [dirpath] + [os.path.join(dirpath, n) for n in dirnames + filenames]:
                os.lchown(name, POLICY_UID, POLICY_UID)
        for path in [tree, *data.values()]:
            _traversable(os.path.dirname(os.path.abspath(path)))
        for path in data.values():
            for dirpath, dirnames, filenames in os.walk(path):
                os.chmod(dirpath, 0o755)
                for n in filenames:  # regular files only: a FIFO keeps its own mode
                    if _regular_file(os.path.join(dirpath, n)):
                        os.chmod(os.path.join(dirpath, n), 0o644)

    def _demote(self):
        os.setsid()
        if self.drop:
            os.setgroups([])
            os.setgid(POLICY_UID)
            os.setuid(POLICY_UID)

    def start(self, argv, tree, data=None, env=None, timeout=30.0, log=None):
        """Start `argv` with cwd `tree`; returns a handle with poll(), kill(), result().

        `log`: a file path for stdout and stderr together (for long runs whose output is
        not read while they run), else both are piped back."""
        data = data or {}
        self._prepare(tree, data)
        run_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": tree, "TMPDIR": tree,
                   "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        run_env.update(env or {})
        out = open(log, "wb") if log else None
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                    stdout=out or subprocess.PIPE,
                                    stderr=subprocess.STDOUT if out else subprocess.PIPE,
                                    env=run_env, cwd=tree, close_fds=True,
                                    preexec_fn=self._demote)
        except OSError as exc:
            raise SandboxBroken(f"cannot start {argv[0]}: {exc}") from None
        finally:
            if out:
                out.close()
        return _LocalHandle(proc, self, timeout)

    def run(self, argv, tree, data=None, env=None, timeout=30.0):
        """Run to the end; a `Ran`."""
        return self.start(argv, tree, data, env, timeout).result()

    def require_apart(self):
        """Refuse (SandboxBroken) to score by running policy code as this verifier's own
        uid: it could read the tests and write the reward."""
        if not self.drop:
            raise SandboxBroken(
                "this verifier would run policy code as its own uid, beside the reference and "
                "the reward: run tests/test.sh as root (policy code then runs as uid "
                f"{POLICY_UID}), or in rlforge's environments, whose scorer keeps it apart")

    def sweep(self):
        """Kill what policy code left running: every process of the policy's uid, or,
        inside rlforge's sandbox (a pid namespace of our own), every process but ours."""
        if not self.drop:
            if os.environ.get("RLFORGE_SANDBOXED") == "1":
                stop_other_processes()
            return
        for _ in range(20):
            left = [p for p in _live_pids() if _uid_of(p) == POLICY_UID]
            if not left:
                return
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
            _reap()
            time.sleep(0.01)


def _traversable(path):
    """Let other users pass through path and its parents up to the temporary directory."""
    top = os.path.abspath(tempfile.gettempdir())
    path = os.path.abspath(path)
    while path.startswith(top + os.sep):
        os.chmod(path, os.stat(path).st_mode | 0o111)
        path = os.path.dirname(path)


def _uid_of(pid):
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _no_core_access():
    """Make this process non-dumpable so code of the same uid cannot trace it or reach its
    file descriptors through /proc."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:
        pass


def _ignore_signals():
    """Survive signals from code of the same uid: ignore every catchable one we can."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                signal.SIGUSR2, signal.SIGPIPE, signal.SIGALRM, signal.SIGTSTP, signal.SIGTTIN,
                signal.SIGTTOU, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGVTALRM,
                signal.SIGPROF):
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (OSError, ValueError):
            pass


def _private_namespace():
    """Whether this process is in a container or sandbox of its own, where stopping every
    other process is safe: never on a host whose pid 1 is an init system."""
    if os.environ.get("RLFORGE_SANDBOXED") == "1":
        return True
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"):
        return True
    try:
        with open("/proc/1/comm") as fh:
            return fh.read().strip() not in INIT_NAMES
    except OSError:
        return False


def stop_other_processes():
    """Before scoring, stop every process that is not this verifier or one of its
    ancestors (pid 1 of the container stays): nothing the agent left running may read the
    tests or rewrite the reward. Returns how many were killed (-1: not in a container)."""
    if not _private_namespace():
        return -1
    keep, pid = {1}, os.getpid()
    while pid > 1:
        keep.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    killed = set()
    for _ in range(50):
        _reap()
        others = [p for p in _live_pids() if p not in keep]
        if not others:
            break
        for p in others:
            try:
                os.kill(p, signal.SIGKILL)
                killed.add(p)
            except OSError:
                pass
        time.sleep(0.01)
    return len(killed)


def _live_pids():
    """Pids in /proc that are not zombies (a zombie is already dead; only its parent can reap it)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            out.append(int(name))
    return out


def _reap():
    """Collect exited children (the verifier may be a namespace's pid 1, which inherits orphans)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


MAX_DEPTH = 64  # directory levels a submitted tree may have


def copy_tree_bounded(src, dst, limit=200 * 1024 * 1024, max_files=100_000, skip=None):
    """Copy the regular files under src into dst (created), never following links.

    Symlinks and special files are left out, as is any relative path `skip(rel)` is true
    for. Returns the relative paths copied; raises OSError past `limit` bytes,
    `max_files` files and directories (each takes an inode of the tree's file system) or
    MAX_DEPTH directory levels.
    """
    os.makedirs(dst, exist_ok=True)
    copied, total, dirs = [], 0, 0
    for dirpath, dirnames, filenames in os.walk(src):
        rel_dir = os.path.relpath(dirpath, src)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        if rel_dir.count("/") + 2 > MAX_DEPTH and dirnames:
            raise OSError(f"the workspace is deeper than {MAX_DEPTH} directories")
        keep = []
        for d in sorted(dirnames):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            if not os.path.islink(os.path.join(dirpath, d)) and not (skip and skip(rel)):
                dirs += 1
                if len(copied) + dirs > max_files:
                    raise OSError(f"the workspace has more than {max_files} files and directories")
                keep.append(d)
                os.makedirs(os.path.join(dst, rel), exist_ok=True)
        dirnames[:] = keep
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if skip and skip(rel):
                continue
            if len(copied) + dirs >= max_files:
                raise OSError(f"the workspace has more than {max_files} files and directories")
            try:
                fd = os.open(os.path.join(dirpath, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue  # a symlink or unreadable entry
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    continue
                total += st.st_size
                if total > limit:
                    raise OSError(f"the workspace is larger than {limit // (1024 * 1024)} MB")
                with os.fdopen(os.dup(fd), "rb") as fh:
                    data = fh.read(limit + 1)
            finally:
                os.close(fd)
            target = os.path.join(dst, rel)
            with open(target, "wb") as out:
                out.write(data)
            os.chmod(target, 0o755 if st.st_mode & 0o111 else 0o644)
            copied.append(rel)
    return copied


def _regular_file(path):
    """Whether path is a regular file reached without following a link at its last step."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


# --- scripts the policy wrote --------------------------------------------------------

def score_script(ref, tests_dir, workspace=None, policy=None):
    """Run the policy's program on the visible logs and on each held-back variant.

    Each case runs in a fresh launch of its own, on a private copy of the workspace, with
    only that case's data (a held-back window is a read-only data directory); its answer
    is the last line it printed on its stdout, compared here.
    """
    ws = workspace or ref["workspace"]
    policy = policy or LocalPolicy()
    program = next((name for name in ref["programs"] if _regular_file(os.path.join(ws, name))), None)
    comps = {}
    if program is None:
        comps["runs"] = component(0, 0, "medium", gate=True,
                                  detail="no " + " or ".join(ref["programs"]) + " in the workspace")
        comps["correct"] = component(0)
        return reward(comps, detail="no program", reason="no_program")
    ran_ok, right, details, per_case, reasons = 0, 0, [], [], []
    scratch = tempfile.mkdtemp(prefix="rlforge-cases-")
    try:
        for i, case in enumerate(ref["cases"]):
            root = os.path.join(scratch, f"case{i}")
            os.mkdir(root)
            tree = os.path.join(root, "app")
            try:
                copy_tree_bounded(ws, tree)
            except OSError as exc:
                comps["runs"] = component(0, 0, "medium", gate=True, detail=str(exc))
                comps["correct"] = component(0)
                return reward(comps, detail="the workspace could not be copied",
                              reason="submission_too_large")
            data = {}
            if case.get("data_dir"):
                data["data"] = os.path.join(root, "data")
                copy_tree_bounded(os.path.join(tests_dir, case["data_dir"]), data["data"])
            inside, places = policy.places(tree, data)
            if data:
                target = places["data"]
            else:  # a path in the workspace, e.g. /app/logs
                rel = os.path.relpath(case["path"], ref.get("workspace", "/app"))
                target = inside if rel == "." else inside.rstrip("/") + "/" + rel
            path = inside.rstrip("/") + "/" + program
            argv = ([policy.python if hasattr(policy, "python") else "python3", path, target]
                    if program.endswith(".py") else ["bash", path, target])
            ran = policy.run(argv, tree, data, timeout=ref.get("timeout_sec", 30))
            if ran.code == 0:
                ran_ok += 1
            elif ran.reason:
                reasons.append(ran.reason)
            lines = [line for line in ran.stdout.splitlines() if line.strip()]
            answer = lines[-1] if lines else ""
            scored = score_answer(case["answer"], answer)
            is_right = ran.code == 0 and scored["components"]["correct"]["value"] >= 1.0
            right += is_right
            per_case.append(is_right)
            details.append(f"{case['name']}: {ran.reason or 'exit 0'}, answer {answer[:60]!r}, "
                           f"{'right' if is_right else 'wrong'}")
            shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    n = len(ref["cases"])
    comps["runs"] = component(1 if ran_ok == n else 0, 0, "medium", gate=True,
                              detail=f"{ran_ok}/{n} runs exited 0")
    comps["correct"] = component(1 if right == n else 0, 1.0, "coarse",
                                 detail="; ".join(details))
    comps["correct_on_visible"] = component(1 if per_case and per_case[0] else 0, 0, "fine",
                                            detail="informational: the visible case alone")
    reason = reasons[0] if reasons else ("" if right == n else "wrong_answer")
    return reward(comps, reason=reason)


# --- entry point ---------------------------------------------------------------------

def unscorable_reward(detail):
    """The fail of a submission whose scoring raised (a disk the policy's code filled, a
    file it left that nothing can read): once the policy's work is in, a reward is always
    written, and an error on it is the policy's, never a missing reward."""
    return reward({"scorable": component(0, 0, "medium", gate=True, detail=detail)},
                  detail="the submission could not be scored", reason="unscorable")


def read_submission(path, limit=1_000_000):
    """The answer file as text (UTF-8 with replacement, universal newlines), links refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a directory, a FIFO, a device
            os.close(fd)
            return ""
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as fh:
            return fh.read(limit)
    except OSError:
        return ""


def score(ref, tests_dir, workspace=None, policy=None):
    """Dispatch on the reference's verifier kind and return the reward.

    `workspace`: the submission's directory (default: the reference's, /app); `policy`:
    how policy code is launched (default `LocalPolicy`).
    """
    kind = ref["verifier"]
    if kind == "script":
        return score_script(ref, tests_dir, workspace, policy)
    path = ref["submission"]
    if workspace is not None:
        path = os.path.join(workspace, os.path.relpath(path, ref.get("workspace", "/app")))
    submitted = read_submission(path)
    if kind == "answer":
        return score_answer(ref, submitted)
    if kind == "reply":
        return score_reply(ref, submitted)
    raise ValueError(f"unknown verifier kind {kind!r}")


RESULT_NAME = "rlforge_result.json"  # the detailed result, beside Harbor's reward files


def flat_reward(result):
    """Harbor's reward.json: a flat map of numbers, `reward` the total and one number per
    component (a component named `reward` is written as `component_reward`)."""
    flat = {"reward": result["total"]}
    for name, c in sorted(result.get("components", {}).items()):
        flat["component_reward" if name == "reward" else name] = c["value"]
    return flat


def write_reward(result, logs_dir):
    """Write reward.json (Harbor's flat map), reward.txt (the total) and rlforge_result.json
    (components with weights, levels, gates and details; outcome and reason), replacing
    whatever stands at those names (a directory, a link, a file another process wrote)
    through a private temporary file."""
    os.makedirs(logs_dir, exist_ok=True)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        os.chmod(logs_dir, 0o755)
    for name, text in ((RESULT_NAME, json.dumps(result, indent=2, sort_keys=True)),
                       ("reward.json", json.dumps(flat_reward(result), sort_keys=True)),
                       ("reward.txt", f"{result['total']}\n")):
        target = os.path.join(logs_dir, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target, ignore_errors=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}-", dir=logs_dir)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)


def protect_inputs(tests_dir):
    """As root, make the tests directory readable by root alone before policy code runs."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        try:
            os.chmod(tests_dir, 0o700)
        except OSError:
            pass


def harden():
    """What every verifier does first: stop what else runs in the container, refuse to be
    traced, ignore signals, and keep the tests to itself."""
    _ignore_signals()
    _no_core_access()
    stop_other_processes()


#: Set by rlforge's environments (Harbor's, verifiers') in the trusted sandbox test.sh runs
#: in: the socket of the scorer that scores outside it (rlforge.verify.scorer).
SCORER_ENV = "RLFORGE_SCORER"
SCORER_ANSWER_LIMIT = 64 * 1024 * 1024


def ask_scorer(address):
    """The reward from the scorer this verifier's environment runs outside its sandbox;
    SandboxBroken when there is none to give (the scorer could not score at all)."""
    import socket

    data = b""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(address)
            conn.sendall(b'{"score": "/app"}\n')
            while len(data) <= SCORER_ANSWER_LIMIT:
                chunk = conn.recv(1 << 16)
                if not chunk:
                    break
                data += chunk
    except OSError as exc:
        raise SandboxBroken(f"the scorer at {address} cannot be reached: {exc}") from None
    try:
        answer = json.loads(data)
    except ValueError:
        raise SandboxBroken(f"the scorer at {address} gave no answer") from None
    if not isinstance(answer, dict) or "result" not in answer:
        raise SandboxBroken(str(answer.get("error") if isinstance(answer, dict) else answer))
    return answer["result"]


def verifier_main(ref_path, logs_dir, score_here):
    """What test.sh runs: the reward of the submission in /app, written to `logs_dir`.

    In rlforge's environments the scorer outside this sandbox gives it; elsewhere
    `score_here(ref, tests_dir)` computes it with the tests made readable by root alone.
    Exits 2, writing no reward, when no reward can be given without running policy code
    beside the scorer, or the sandbox for it could not start (an infrastructure failure).
    """
    harden()
    address = os.environ.get(SCORER_ENV)
    try:
        if address:
            result = ask_scorer(address)
        else:
            with open(ref_path, encoding="utf-8") as fh:  # unreadable: the task is broken
                ref = json.load(fh)
            tests_dir = os.path.dirname(os.path.abspath(ref_path))
            protect_inputs(tests_dir)
            try:
                result = score_here(ref, tests_dir)
            except SandboxBroken:
                raise
            except Exception as exc:  # raised on what the policy left: its fail, with a reward
                sys.stderr.write(f"rlforge verifier: {type(exc).__name__}: {exc}\n")
                result = unscorable_reward(f"{type(exc).__name__}: {exc}"[:300])
    except SandboxBroken as exc:
        sys.stderr.write(f"rlforge verifier: {exc}\n")
        return 2
    write_reward(result, logs_dir)
    sys.stdout.write(REWARD_PREFIX + json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


def _score_here(ref, tests_dir):
    policy = LocalPolicy()
    if ref["verifier"] == "script":
        policy.require_apart()
    try:
        return score(ref, tests_dir, policy=policy)
    finally:
        policy.sweep()


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    logs_dir = "/logs/verifier"
    if "--logs" in argv:
        i = argv.index("--logs")
        logs_dir = argv[i + 1]
        del argv[i:i + 2]
    return verifier_main(argv[0], logs_dir, _score_here)


if __name__ == "__main__":
    sys.exit(main())
