"""The shortcut battery for questions answered by a program over a logs directory
(`logs.script`): the cheap counts a policy learns first, and which of them get a task's
answers.

A script task is scored on the visible logs and on a held-back directory, so a shortcut
solves it only when one and the same cheap program prints both answers. The strategies
here are such programs: `grep -c` of the question's own words or of the pattern's pieces
(case-folded or not), ERROR/FATAL anywhere on a line, every line, the lines of the most
frequent message shape, `sort -u | wc -l` of the lines that hold a piece, ... Each reads
the directory twice over: every file, compressed ones decompressed (`zgrep`), and the
plain files only (`grep -I`). The builder does not emit a task any of them solves (the
reason is recorded); `rlforge validate` runs each as a program (this file's own source,
`program`), scored by the task's own verifier like the adversarial submissions.

Standard library only, and nothing imported from rlforge: `program` ships this file.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Callable

#: A record line: `TIMESTAMP HOST LEVEL COMPONENT: MESSAGE` (fields one or more spaces apart).
LINE = re.compile(r"^(\S+) +(\S+) +(\S+) +(\S+?): (.*)$")
QUOTED = re.compile(r"`([^`]+)`")
MODES = ("all_files", "plain_files")


def longest_piece(pattern: str) -> str:
    """The longest fixed piece of a pattern: what a literal `grep -F` of it would search."""
    return max(pattern.split("<*>"), key=len).strip()


def in_order(pieces: list[str], text: str) -> bool:
    """Whether the pieces occur in `text` in order, apart (what `grep -E 'a.*b.*c'` finds),
    in linear time: each at its earliest place after the one before."""
    at = 0
    for piece in pieces:
        found = text.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def read_files(files: dict[str, bytes], mode: str) -> str:
    """A directory's files (name -> bytes) as one text, in name order, the way a shortcut
    reads it: `all_files` decompresses gzip files, `plain_files` skips them."""
    out = []
    for name in sorted(files):
        data = files[name]
        if name.endswith(".gz"):
            if mode == "plain_files":
                continue
            data = gzip.decompress(data)
        out.append(data.decode("utf-8", "replace"))
    return "".join(t if t.endswith("\n") or not t else t + "\n" for t in out)


def _words(pattern: str) -> list[str]:
    return re.findall(r"[A-Za-z_][\w.$-]*", pattern.replace("<*>", " "))


def _shape(line: str) -> str:
    """A record line's message with every run of digits and hex ids cut to `#`: what
    lines of one template share (a cheap stand-in for template mining)."""
    m = LINE.match(line)
    message = m.group(5) if m else line
    return re.sub(r"\b(?:0x)?[0-9a-fA-F]*\d[0-9a-fA-F]*\b|\d+", "#", message)


def grep_counts(pattern: str | None, text: str, question: str = "") -> dict[str, int]:
    """What the cheap counts a policy learns first give over a text's lines (continuation
    lines, which start with a tab, left out), by strategy: for a pattern, a literal `grep
    -c` of its longest fixed piece, its longest word, its first piece, every word of it,
    its fixed pieces in order (`grep -cE 'a.*b'`), each also case-insensitive (`grep
    -ci`); for any question, the words it quotes in backticks, ERROR/FATAL anywhere on the
    line, every line, and the lines of the most frequent message shape. For a counting
    question over files (`logs.script`), where the battery's record view does not apply."""
    lines = [line for line in text.splitlines() if line and not line.startswith("\t")]
    folded = [line.lower() for line in lines]
    out: dict[str, int] = {}

    def count(name: str, needles: list[str], hit: Callable[[list[str], str], bool]) -> None:
        """`grep -c` (every needle as written) and `grep -ci` (case folded)."""
        out[name] = sum(1 for line in lines if hit(needles, line))
        low = [n.lower() for n in needles]
        out[name + "_i"] = sum(1 for line in folded if hit(low, line))

    def contains_all(needles: list[str], line: str) -> bool:
        return all(n in line for n in needles)

    if pattern:
        words = _words(pattern)
        for name, needles in (("grep_piece_count", [longest_piece(pattern)]),
                              ("grep_first_piece_count", [pattern.split("<*>")[0].strip()]),
                              ("grep_word_count", [max(words, key=len)] if words else []),
                              ("grep_all_words_count", words)):
            if needles and all(needles):
                count(name, needles, contains_all)
        pieces = [p.strip() for p in pattern.split("<*>") if p.strip()]
        if pieces:
            count("grep_pattern_count", pieces, lambda ps, line: in_order(ps, line))
    for quoted in QUOTED.findall(question.replace(f"`{pattern}`", "") if pattern else question):
        if len(quoted.strip()) >= 3 and "YYYY" not in quoted and "<*>" not in quoted:
            count(f"grep_quoted_{quoted.strip()[:20]}", [quoted.strip()], contains_all)
    count("grep_error_words", ["ERROR", "FATAL"], lambda ns, line: any(n in line for n in ns))
    out["every_line"] = len(lines)
    shapes = Counter(_shape(line) for line in lines)
    out["most_frequent_shape"] = shapes.most_common(1)[0][1] if shapes else 0
    return out


def distinct_counts(pattern: str, text: str, slot: int = 1) -> dict[str, int]:
    """What cheap `sort -u | wc -l` pipelines count for a question about the distinct texts
    a pattern's `slot`-th `<*>` stands for, none checking that a line matches the whole
    pattern: the distinct lines, or messages, that hold its longest fixed piece, the
    distinct messages that hold every word of it (`grep w1 | grep w2 | cut -d: -f2- |
    sort -u`), the distinct tokens right after that piece, the distinct numbers on those
    lines, and the distinct texts after the piece just before the slot, up to the next
    piece's first character or a blank (`grep -o 'Leader:[^,]*' | sort -u`)."""
    lines = [line for line in text.splitlines() if line and not line.startswith("\t")]
    piece = longest_piece(pattern)
    if not piece:
        return {}
    hits = [line for line in lines if piece in line]
    messages = [m.group(5) if (m := LINE.match(line)) else line for line in hits]
    after = {line.split(piece, 1)[1].split()[0] if line.split(piece, 1)[1].split() else ""
             for line in hits}
    words = _words(pattern)
    worded = {m.group(5) if (m := LINE.match(line)) else line
              for line in lines if all(w in line for w in words)} if words else set()
    out = {"distinct_lines_with_piece": len(set(hits)),
           "distinct_messages_with_piece": len(set(messages)),
           "distinct_messages_with_all_words": len(worded),
           "distinct_tokens_after_piece": len(after),
           "distinct_numbers_on_lines": len({n for m in messages for n in re.findall(r"\d+", m)}),
           "lines_with_piece": len(hits)}
    parts = pattern.split("<*>")
    before = parts[slot - 1].lstrip() if 0 < slot < len(parts) else ""
    if before:
        stop = re.escape(parts[slot][:1]) if parts[slot][:1].strip() else ""
        cut = re.compile(rf"[^\s{stop}]*")
        values = {m.group(0) for m in messages if before in m
                  for m in [cut.match(m.split(before, 1)[1])] if m}
        out["distinct_after_slot_piece"] = len(values)
    return out


def slot_texts(pattern: str, slot: int, messages: list[str]) -> list[str]:
    """The text the pattern's `slot`-th `<*>` stands for in each message that matches the
    whole pattern (the stated rule: a space is one or more spaces or tabs, each `<*>` as
    few characters as it can), in order, repeats kept."""
    literal = ["[ \t]+".join(re.escape(w) for w in re.split(r"[ \t]+", piece))
               for piece in pattern.split("<*>")]
    capture = re.compile(".*?".join(literal[:slot]) + "(.*?)" + ".*?".join(literal[slot:]))
    return [hit.group(1) for m in messages if (hit := capture.fullmatch(m))]


def join_counts(pattern: str, slot: int, other: tuple[str, int], text: str) -> dict[str, int]:
    """What a join question's wrong cheap programs print (the texts the first pattern's
    `<*>` stands for that the second's never does): each pattern's distinct texts alone,
    their difference in number, the texts both have, the second's the first lacks (the
    join read backwards), the texts of either, and the difference of the two patterns'
    record counts. None computes the asked set (a join that counts records, not distinct
    texts, does, wherever an id is logged once: that is the work, not a shortcut)."""
    messages = [m.group(5) if (m := LINE.match(line)) else line
                for line in text.splitlines() if line and not line.startswith("\t")]
    first = slot_texts(pattern, slot, messages)
    second = slot_texts(other[0], other[1], messages)
    a, b = set(first), set(second)
    return {"join_first_texts": len(a), "join_second_texts": len(b),
            "join_difference_in_number": len(a) - len(b), "join_shared_texts": len(a & b),
            "join_reversed": len(b - a), "join_either_texts": len(a | b),
            "join_record_difference": len(first) - len(second)}


def counts(fact: str, pattern: str | None, question: str, text: str,
           slot: int = 1, other: tuple[str, int] | None = None) -> dict[str, int]:
    """Every strategy's count for a question of kind `fact` over a directory's text
    (`other`: a join's second pattern and its `<*>`)."""
    got = grep_counts(pattern, text, question)
    if fact in ("distinct_values", "unmatched_ids") and pattern:
        got.update(distinct_counts(pattern, text, slot))
    if fact == "unmatched_ids" and pattern and other:
        got.update(join_counts(pattern, slot, (other[0], int(other[1])), text))
    return got


def solved(fact: str, pattern: str | None, question: str,
           cases: list[tuple[dict[str, bytes], object]], slot: int = 1,
           other: tuple[str, int] | None = None) -> dict[str, object]:
    """The strategies (`NAME@MODE`) whose count equals the answer of every case (a
    directory's files and its answer), with the visible case's answer: the cheap programs
    that pass the task."""
    out: dict[str, object] = {}
    for mode in MODES:
        per_case = [counts(fact, pattern, question, read_files(files, mode), slot, other)
                    for files, _ in cases]
        for name in per_case[0]:
            if all(str(c.get(name)) == str(answer) for c, (_, answer) in zip(per_case, cases)):
                out[f"{name}@{mode}"] = cases[0][1]
    return out


def strategy_names(fact: str, pattern: str | None, question: str, slot: int = 1,
                   other: tuple[str, int] | None = None) -> list[str]:
    """Every `NAME@MODE` strategy that applies to a question (for `rlforge validate`)."""
    names = counts(fact, pattern, question, "", slot, other)
    return [f"{name}@{mode}" for mode in MODES for name in names]


def run(spec: dict, root: str) -> int:
    """One strategy's count over a directory on disk (what a submitted program prints)."""
    name, _, mode = spec["strategy"].rpartition("@")
    files = {}
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        if os.path.isfile(path):
            files[entry] = Path(path).read_bytes()
    got = counts(spec["fact"], spec["pattern"], spec["question"], read_files(files, mode),
                 spec.get("slot", 1), spec.get("other"))
    return got.get(name, 0)


def program(fact: str, pattern: str | None, question: str, strategy: str, slot: int = 1,
            other: tuple[str, int] | None = None) -> str:
    """A `solution.py` that prints one strategy's count for the directory it is given: this
    file's source and a line that runs it."""
    spec = {"fact": fact, "pattern": pattern, "question": question, "strategy": strategy,
            "slot": slot, "other": list(other) if other else None}
    source = Path(__file__).read_text(encoding="utf-8")
    return (source + "\n\nif __name__ == '__main__':\n    import sys\n"
            f"    print(run(json.loads({json.dumps(json.dumps(spec))}), "
            "sys.argv[1] if len(sys.argv) > 1 else '/app/logs'))\n")


#: The generators whose numeric questions the battery screens, and those questions.
SCREENED = {"logs.script": ("error_count", "template_count", "distinct_values",
                            "unmatched_ids")}
STATEMENT = re.compile(r"Write a program that prints \*\*(.*?)\*\* over all the log files", re.S)


def submissions(task_dir: Path, meta: dict) -> list[dict]:
    """The battery as submissions for `rlforge validate`: one `solution.py` per strategy,
    for a task of a screened generator whose metadata names a screened fact and whose
    instruction states it; none for other tasks."""
    rl = meta.get("metadata", {}).get("rlforge", {})
    fact = str(rl.get("fact", ""))
    if fact not in SCREENED.get(str(rl.get("generator", "")).partition("@")[0], ()):
        return []
    text = (Path(task_dir) / "instruction.md").read_text(encoding="utf-8", errors="replace")
    stated = STATEMENT.search(text)
    if stated is None:
        return []
    question = " ".join(stated.group(1).split())
    pattern, slot = rl.get("pattern"), int(rl.get("slot", 1))
    other = (str(rl["other_pattern"]), int(rl.get("other_slot", 1))) \
        if rl.get("other_pattern") else None
    return [{"name": f"shortcut_{name}", "files": {"solution.py": program(
        fact, pattern, question, name, slot, other)}}
        for name in strategy_names(fact, pattern, question, slot, other)]
