#!/usr/bin/env python3
"""Search a folder of knowledge-base files with BM25; ranked snippets, standard library only.

This one file is both rlforge's build-time ranking (which earlier tickets a reply task's
knowledge base holds, and whether a fact is findable) and the `search` command shipped in
a task's workspace (`python3 kb/search.py "refund damaged parcel"`; the multi-turn loop's
`search` tool runs the same command). A document is a file; its score is Okapi BM25
(k1 = 1.2, b = 0.75) over lower-cased word tokens; a snippet is the document's lines that
hold the most query words.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections import Counter

K1, B = 1.2, 0.75
TOKEN = re.compile(r"\w+")


def tokens(text):
    """Lower-cased word tokens."""
    return TOKEN.findall(text.lower())


class Index:
    """BM25 statistics of a list of documents (token lists), built once, queried often."""

    def __init__(self, docs):
        self.tf = [Counter(d) for d in docs]
        self.lengths = [len(d) for d in docs]
        self.avg = (sum(self.lengths) / len(docs) or 1.0) if docs else 1.0
        self.postings = {}
        for i, tf in enumerate(self.tf):
            for t in tf:
                self.postings.setdefault(t, []).append(i)

    def scores(self, query, max_share=1.0):
        """{document index: BM25 score} of the documents sharing a word with the query;
        words in more than `max_share` of the documents are left out (they weigh little
        and cost a pass over most documents)."""
        n, out = len(self.tf), {}
        for t in sorted(set(query)):  # a fixed order: the same sums, bit for bit
            docs = self.postings.get(t, ())
            if not docs or len(docs) > max_share * n:
                continue
            idf = math.log(1 + (n - len(docs) + 0.5) / (len(docs) + 0.5))
            for i in docs:
                f = self.tf[i][t]
                norm = K1 * (1 - B + B * self.lengths[i] / self.avg)
                out[i] = out.get(i, 0.0) + idf * f * (K1 + 1) / (f + norm)
        return out


def bm25_scores(query, docs):
    """BM25 score of each document (a list of token lists) for the query's tokens."""
    scores = Index(docs).scores(query)
    return [scores.get(i, 0.0) for i in range(len(docs))]


def rank(query, texts, k=None):
    """Indices of `texts` by BM25 score for `query`, best first (ties by index); only
    documents that share a word with the query."""
    scores = bm25_scores(tokens(query), [tokens(t) for t in texts])
    order = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], i))
    return order if k is None else order[:k]


def snippet(text, query, width=400):
    """The lines of `text` holding the most query words, in order, at most `width` chars."""
    terms = set(tokens(query))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    scored = sorted(range(len(lines)), key=lambda i: (-len(terms & set(tokens(lines[i]))), i))
    picked, size = [], 0
    for i in scored:
        if size + len(lines[i]) > width and picked:
            break
        picked.append(i)
        size += len(lines[i]) + 3
    return " … ".join(lines[i][:width] for i in sorted(picked))


def search(root, query, k=5):
    """(path relative to `root`, score, snippet) of the best `k` files under `root`."""
    paths = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        paths += [os.path.join(folder, f) for f in sorted(files)
                  if not f.endswith(".py") and not f.startswith(".")]
    texts = []
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as fh:
            texts.append(fh.read())
    scores = bm25_scores(tokens(query), [tokens(t) for t in texts])
    order = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], i))[:k]
    return [(os.path.relpath(paths[i], root), round(scores[i], 3), snippet(texts[i], query))
            for i in order]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    k = 5
    if len(argv) >= 2 and argv[0] in ("-k", "--top"):
        k, argv = int(argv[1]), argv[2:]
    query = " ".join(argv).strip()
    if not query:
        print("usage: python3 kb/search.py [-k N] QUERY WORDS", file=sys.stderr)
        return 2
    root = os.path.dirname(os.path.abspath(__file__))
    hits = search(root, query, k)
    if not hits:
        print(f"no results for {query!r}; try other words")
        return 0
    for n, (path, score, text) in enumerate(hits, 1):
        print(f"{n}. kb/{path}  (score {score})\n   {text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
