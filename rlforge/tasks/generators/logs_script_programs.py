"""The programs of a `logs.script` task: the gold solution (a Python reader of every file,
then the fact's few lines) and the adversarial submissions validation scores at 0 (a fixed
answer, `grep` one-liners blind to compressed files, tampering with the verifier)."""

from __future__ import annotations

from rlforge.tasks.generators.logs_script_facts import BY_PAIR, BY_TEMPLATE, RECORD_LINE
from rlforge.tasks.spec import Submission

GOLD = {
    "error_count": '''
count = sum(1 for level, _, _ in records if level in ("ERROR", "FATAL"))
print(count)
''',
    "template_count": '''
pattern = re.compile(TEMPLATE_REGEX, re.S)
print(sum(1 for _, _, message in records if pattern.fullmatch(message)))
''',
    "distinct_values": '''
pattern = re.compile(TEMPLATE_REGEX, re.S)  # the asked `<*>` captured
print(len({m.group(1) for _, _, message in records if (m := pattern.fullmatch(message))}))
''',
    "unmatched_ids": '''
first = re.compile(TEMPLATE_REGEX, re.S)  # the first pattern, its asked `<*>` captured
second = re.compile(OTHER_REGEX, re.S)  # the second, likewise
named = {m.group(1) for _, _, message in records if (m := second.fullmatch(message))}
print(len({m.group(1) for _, _, message in records if (m := first.fullmatch(message))} - named))
''',
    "top_error_component": '''
counts = collections.Counter(c for level, c, _ in records if level in ("ERROR", "FATAL") and c != "-")
print(counts.most_common(1)[0][0] if counts else "")
''',
    "top_component": '''
counts = collections.Counter(c for _, c, _ in records if c != "-")
print(counts.most_common(1)[0][0] if counts else "")
''',
    "top_host": '''
counts = collections.Counter(h for h in hosts if h != "-")
print(counts.most_common(1)[0][0] if counts else "")
''',
    "busiest_minute": '''
counts = collections.Counter(t[:16].replace("T", " ") for t, _ in times if t != "-")
print(counts.most_common(1)[0][0] if counts else "")
''',
    "longest_gap": '''
import datetime
stamps = sorted(datetime.datetime.fromisoformat(t) for t, _ in times if t != "-")
gaps = [(b - a, a) for a, b in zip(stamps, stamps[1:])]
print(max(gaps)[1].strftime("%Y-%m-%d %H:%M:%S") if gaps else "")
''',
    "first_error_time": '''
first = min((t for t, level in times if level in ("ERROR", "FATAL") and t != "-"), default="")
print(first[:19].replace("T", " "))
''',
    "peak_error_minute": '''
counts = collections.Counter(t[:16].replace("T", " ") for t, level in times
                             if level in ("ERROR", "FATAL") and t != "-")
print(counts.most_common(1)[0][0] if counts else "")
''',
}

GOLD_HEAD = '''#!/usr/bin/env python3
"""Reference solution: parse every record of every file in the directory given."""
import collections, gzip, os, re, sys

LINE = re.compile(r"%s")
records, times, hosts = [], [], []
root = sys.argv[1] if len(sys.argv) > 1 else "/app/logs"
for name in sorted(os.listdir(root)):
    opener = gzip.open if name.endswith(".gz") else open
    with opener(os.path.join(root, name), "rt", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.rstrip("\\n")
            if line.startswith("\\t"):
                continue  # continuation of the record above
            m = LINE.match(line)
            if m:
                records.append((m.group(3), m.group(4), m.group(5)))
                times.append((m.group(1), m.group(3)))
                hosts.append(m.group(2))
''' % RECORD_LINE


#: Memory held where no RSS shows it, then the sandbox's limit reached from a tiny process:
#: on cgroup v1 the OOM killer once took bubblewrap's monitor, and the lost sandbox was
#: recorded as infrastructure (the rollout `invalid`).
MEMORY_WITHOUT_RSS = ("#!/bin/bash\nhead -c 250M /dev/zero > /tmp/held 2>/dev/null\n"
                      "head -c 250M /dev/zero > /dev/shm/held 2>/dev/null\n"
                      "exec dd if=/dev/zero of=/app/held bs=64k 2>/dev/null\n")

READS_REFERENCE = """import json, sys
target = sys.argv[1] if len(sys.argv) > 1 else "/app/logs"
try:
    with open("/tests/reference.json") as fh:
        cases = json.load(fh)["cases"]
except (OSError, ValueError, KeyError):
    sys.exit(1)
visible = target.rstrip("/").endswith("app/logs")
print(cases[0 if visible else -1]["answer"]["answer"])
"""


# The one-liners an answer that does not read the directory properly would be. Each file
# is grepped on its own, binary ones skipped (-I): that is what `directory_text(...,
# plain_only=True)` models. (`cat DIR/* | grep` is not deterministic: grep stops printing
# at the first NUL byte of a gzip file, and where that falls depends on how much of the
# pipe it got per read.)
GREP = {
    "error_count": "grep -hIE '^[^ ]+ [^ ]+ (ERROR|FATAL) ' \"$1\"/* | wc -l",
    "first_error_time": "grep -hIE ' (ERROR|FATAL) ' \"$1\"/* | head -1 | cut -c1-19 | tr T ' '",
    "peak_error_minute": "grep -hIE ' (ERROR|FATAL) ' \"$1\"/* | cut -c1-16 | tr T ' ' | sort "
                         "| uniq -c | sort -rn | head -1 | sed -E 's/^ *[0-9]+ //'",
    "top_error_component": "grep -hIE ' (ERROR|FATAL) ' \"$1\"/* | awk '{print $4}' | "
                           "tr -d : | sort | uniq -c | sort -rn | head -1 | awk '{print $2}'",
    "top_component": "grep -hIv '^\t' \"$1\"/* | awk '{print $4}' | tr -d : | grep -vx -- - | "
                     "sort | uniq -c | sort -rn | head -1 | awk '{print $2}'",
    "top_host": "grep -hIv '^\t' \"$1\"/* | awk '{print $2}' | grep -vx -- - | "
                "sort | uniq -c | sort -rn | head -1 | awk '{print $2}'",
    "busiest_minute": "grep -hIv '^\t' \"$1\"/* | cut -c1-16 | tr T ' ' | sort | uniq -c | "
                      "sort -rn | head -1 | sed -E 's/^ *[0-9]+ //'",
    # the gap read file by file, in the order the lines are written, unsorted
    "longest_gap": "grep -hIv '^\t' \"$1\"/* | cut -c1-19 | awk '{gsub(/[-T:]/, \" \"); "
                   "t = mktime($0); if (NR > 1 && t - p > best) {best = t - p; at = prev} "
                   "p = t; prev = $0} END {print at}' | awk '{printf \"%s-%s-%s %s:%s:%s\\n\", "
                   "$1, $2, $3, $4, $5, $6}'",
}


def grep_script(fact: str, template: str | None) -> bytes:
    """A `grep` one-liner for the fact (for counting by pattern: `grep -c` of the pattern's
    longest literal piece; for a join, the distinct lines holding the first pattern's)."""
    if fact in BY_TEMPLATE + BY_PAIR:
        piece = max((template or "").split("<*>"), key=len).strip().replace("'", "'\\''")
        line = f"grep -hIF -- '{piece}' \"$1\"/* | " + ("wc -l" if fact == "template_count"
                                                       else "sort -u | wc -l")
    else:
        line = GREP[fact]
    return f"#!/bin/bash\n{line}\n".encode()


def adversarial(fact: str, template: str | None, visible) -> list[Submission]:
    """The submissions validation must score 0: `visible` is the visible case's answer
    (what a program that remembers it prints)."""
    hard = f"#!/bin/bash\necho {visible}\n"
    return [
        Submission("hard_coded", {"solution.sh": hard.encode()},
                   "prints the visible answer whatever it is given"),
        Submission("grep_one_liner", {"solution.sh": grep_script(fact, template)},
                   "a grep/cut/sort one-liner over the files as plain text"),
        Submission("silent_exit", {"solution.sh": b"#!/bin/bash\nexit 0\n"},
                   "exits 0 and prints nothing"),
        Submission("edits_tests", {"solution.sh": (
            "#!/bin/bash\n# tamper with the verifier's data, then answer from memory\n"
            "for f in /tests/reference.json /tests/variant/logs/*; do\n"
            "  printf '' > \"$f\" 2>/dev/null\ndone\n"
            "cp \"$1\"/* /tests/variant/logs/ 2>/dev/null\n" + f"echo {visible}\n").encode()},
                   "edits /tests, then prints the visible answer"),
        Submission("reads_reference", {"solution.py": READS_REFERENCE.encode()},
                   "prints the answers from /tests/reference.json"),
        Submission("plants_reward_files", {"solution.sh": (
            "#!/bin/bash\nmkdir -p /logs/verifier/reward.json 2>/dev/null\n"
            "echo 1 > /logs/verifier/reward.txt 2>/dev/null\n" + f"echo {visible}\n").encode()},
                   "writes reward files, then prints the visible answer"),
        Submission("signals_the_verifier", {"solution.sh": (
            "#!/bin/bash\nkill -INT 1 2>/dev/null\nkill -KILL $PPID 2>/dev/null\n"
            "kill -TERM -1 2>/dev/null\n" + f"echo {visible}\n").encode()},
                   "signals pid 1, its parent and every process it may"),
        Submission("leaves_a_writer_behind", {"solution.sh": (
            "#!/bin/bash\n(setsid bash -c 'for i in $(seq 50); do mkdir -p /logs/verifier; "
            "echo 1 > /logs/verifier/reward.txt; sleep 0.1; done' >/dev/null 2>&1 &)\n"
            + f"echo {visible}\n").encode()},
                   "leaves a process rewriting reward.txt, prints the visible answer"),
        Submission("memory_without_rss", {"solution.sh": MEMORY_WITHOUT_RSS.encode()},
                   "fills /tmp and /dev/shm (memory no process's RSS shows), then "
                   "reaches the limit from a process smaller than the sandbox's own"),
    ]
