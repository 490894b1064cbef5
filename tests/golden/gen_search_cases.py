#!/usr/bin/env python3
"""Generate differential test cases for rust/search.rs against fuzzysearch 0.8.1.

Run with the reference venv (NOT run in CI):

    /work/ref/venv/bin/python tests/golden/gen_search_cases.py

It draws random (sub, seq, k) cases (small alphabets, some Unicode; len(sub)
1..60, len(seq) up to 300, k up to len(sub)//2, a few with k >= len(sub)),
evaluates `find_near_matches(sub, seq, max_l_dist=k)` in several subprocesses
with different PYTHONHASHSEED values (the library breaks some ties through set
iteration order, which depends on the per-process string-hash seed), and writes
tests/golden/search_cases.jsonl. The library's LP algorithm can take
exponential time in k, so cases it does not finish within a per-case time
limit (under seed 0) are dropped; a separate batch of large-k LP cases (seq a
near copy of sub) gets a longer limit. Takes several minutes.

Each line holds:
  sub, seq, k
  matches         [[start, end, dist], ...] from PYTHONHASHSEED=0
  hash_dependent  whether any seed gave a different result
  all_results     the distinct results over all seeds (seed-0 result first)
  tie             whether some consolidation group had several members with the
                  same minimal (dist, length) key, i.e. the library's answer is
                  decided by hash order
  tie_break       (only when tie) the library's raw matches, grouped by the
                  library's own group_matches, with ties broken by the smallest
                  start (then end): the documented deterministic answer of
                  rust/search.rs

The Rust test (golden_cases_against_fuzzysearch in rust/search.rs) requires
equality with `matches` when there is no tie and with `tie_break` otherwise.
"""

import json
import os
import random
import subprocess
import sys
import tempfile

N_CASES = 4000
N_DRAWN = 5200
CASE_TIME_LIMIT = 0.25  # seconds
# Extra LP cases with large k (len(sub)//3 <= k <= len(sub)//2) and seq a near copy of sub:
# the library needs much longer for these, so they get a longer limit.
N_HEAVY_DRAWN = 320
HEAVY_TIME_LIMIT = 1.0
SEEDS = list(range(6))
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "search_cases.jsonl")

ALPHABETS = [
    "ab",
    "abc",
    " ab",
    "abcd",
    "aab",
    "αβγ",
    "aé😀",
    "абвгд ",
    "abcdefghij ",
    "the quick brown fox",
]


def mutate(rng, s, alphabet, n_edits):
    s = list(s)
    for _ in range(n_edits):
        op = rng.randrange(3)
        if op == 0 and s:
            s[rng.randrange(len(s))] = rng.choice(alphabet)
        elif op == 1 and s:
            del s[rng.randrange(len(s))]
        else:
            s.insert(rng.randrange(len(s) + 1), rng.choice(alphabet))
    return "".join(s)


def rand_str(rng, alphabet, n):
    return "".join(rng.choice(alphabet) for _ in range(n))


def make_cases():
    rng = random.Random(20240601)
    cases = [
        ("aa", "aaaa", 0),
        ("abab", "a babaabb", 2),
        ("PATTERN", "---PATERN---", 1),
        ("abc", "", 1),
        ("abc", "", 0),
        ("abcdef", "abc", 2),
        ("ab", "xxabxx", 2),
        ("ab", "xxabxx", 5),
        ("a", "bab", 1),
        ("a", "", 3),
    ]
    while len(cases) < N_DRAWN:
        alphabet = rng.choice(ALPHABETS)
        r = rng.random()
        if r < 0.15:
            m = rng.randint(1, 8)
        elif r < 0.6:
            m = rng.randint(1, 24)
        else:
            m = rng.randint(1, 60)
        sub = rand_str(rng, alphabet, m)
        if rng.random() < 0.03:
            k = rng.randint(m, m + 3)  # degenerate k >= len(sub)
        else:
            k = rng.randint(0, m // 2)
        n = rng.choice([rng.randint(0, 20), rng.randint(0, 120), rng.randint(0, 300)])
        if rng.random() < 0.75:
            # plant a few near copies of sub in random text
            parts = []
            total = 0
            while total < n:
                if rng.random() < 0.5:
                    piece = mutate(rng, sub, alphabet, rng.randint(0, k + 1))
                else:
                    piece = rand_str(rng, alphabet, rng.randint(0, 2 * m + 5))
                parts.append(piece)
                total += len(piece)
            seq = "".join(parts)[:n] if rng.random() < 0.5 else "".join(parts)
            seq = seq[:300]
        else:
            seq = rand_str(rng, alphabet, n)
        cases.append((sub, seq, k))
    return cases


def make_heavy_cases():
    rng = random.Random(20240602)
    cases = []
    while len(cases) < N_HEAVY_DRAWN:
        alphabet = rng.choice(ALPHABETS)
        m = rng.randint(14, 40)
        k = rng.randint(max(m // 3, 1), m // 2)
        if m // (k + 1) >= 3:
            continue
        sub = rand_str(rng, alphabet, m)
        seq = (
            rand_str(rng, alphabet, rng.randint(0, 4))
            + mutate(rng, sub, alphabet, rng.randint(0, k))
            + rand_str(rng, alphabet, rng.randint(0, 4))
        )
        cases.append((sub, seq, k))
    return cases


WORKER = r"""
import json, sys
from fuzzysearch import find_near_matches
from fuzzysearch.common import group_matches
from fuzzysearch.levenshtein import LevenshteinSearch
from fuzzysearch.common import LevenshteinSearchParams

import signal

class _Timeout(Exception):
    pass

def _alarm(*_):
    raise _Timeout()

signal.signal(signal.SIGALRM, _alarm)
cases = json.load(open(sys.argv[1], encoding="utf-8"))
want_tie = sys.argv[2] == "1"
out = []
for sub, seq, k, limit in cases:
    if limit > 0:
        signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        res = [[x.start, x.end, x.dist] for x in find_near_matches(sub, seq, max_l_dist=k)]
    except _Timeout:
        out.append(None)
        continue
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    rec = {"r": res}
    if want_tie:
        if k == 0:
            rec["tie"] = False
            rec["tb"] = res
        else:
            raw = list(LevenshteinSearch.search(sub, seq, LevenshteinSearchParams(max_l_dist=k)))
            tie = False
            best = []
            for g in group_matches(raw):
                key = min((x.dist, -(x.end - x.start)) for x in g)
                tied = [x for x in g if (x.dist, -(x.end - x.start)) == key]
                if len(tied) > 1:
                    tie = True
                b = min(tied, key=lambda x: (x.start, x.end))
                best.append((b.start, b.end, b.dist))
            rec["tie"] = tie
            rec["tb"] = [list(x) for x in sorted(best)]
            if not tie:
                assert rec["tb"] == res, (sub, seq, k, res, rec["tb"])
    out.append(rec)
json.dump(out, sys.stdout)
"""


def run_worker(wpath, cpath, seed, want_tie):
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    return subprocess.Popen(
        [sys.executable, wpath, cpath, "1" if want_tie else "0"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )


def finish(proc):
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit("worker failed")
    return json.loads(out)


def main():
    drawn = [c + (CASE_TIME_LIMIT,) for c in make_cases()]
    heavy = [c + (HEAVY_TIME_LIMIT,) for c in make_heavy_cases()]
    with tempfile.TemporaryDirectory() as td:
        wpath = os.path.join(td, "worker.py")
        with open(wpath, "w", encoding="utf-8") as f:
            f.write(WORKER)
        # Pass 1 (seed 0, with a per-case time limit): the library's LP
        # algorithm keeps an undeduplicated candidate list that can blow up
        # exponentially, so cases it cannot finish quickly are dropped.
        cpath = os.path.join(td, "drawn.json")
        with open(cpath, "w", encoding="utf-8") as f:
            json.dump(drawn + heavy, f, ensure_ascii=False)
        first = finish(run_worker(wpath, cpath, SEEDS[0], True))
        kept = [i for i, r in enumerate(first[: len(drawn)]) if r is not None][:N_CASES]
        kept += [len(drawn) + i for i, r in enumerate(first[len(drawn) :]) if r is not None]
        all_drawn = drawn + heavy
        cases = [all_drawn[i][:3] for i in kept]
        per_seed = [[first[i] for i in kept]]
        print(f"drawn {len(all_drawn)}, kept {len(cases)}", file=sys.stderr)
        cpath = os.path.join(td, "cases.json")
        with open(cpath, "w", encoding="utf-8") as f:
            json.dump([c + (0,) for c in cases], f, ensure_ascii=False)
        rest = SEEDS[1:]
        for b in range(0, len(rest), 2):
            procs = [run_worker(wpath, cpath, s, False) for s in rest[b : b + 2]]
            per_seed.extend(finish(p) for p in procs)
    n_hash = n_tie = 0
    with open(OUT, "w", encoding="utf-8") as f:
        for i, (sub, seq, k) in enumerate(cases):
            base = per_seed[0][i]
            results = []
            for s in per_seed:
                if s[i]["r"] not in results:
                    results.append(s[i]["r"])
            hd = len(results) > 1
            if hd:
                assert base["tie"], (sub, seq, k)
            n_hash += hd
            n_tie += base["tie"]
            line = {"sub": sub, "seq": seq, "k": k, "matches": base["r"], "hash_dependent": hd, "tie": base["tie"]}
            if hd:
                line["all_results"] = results
            if base["tie"]:
                line["tie_break"] = base["tb"]
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases, {n_tie} with ties, {n_hash} hash-dependent -> {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
