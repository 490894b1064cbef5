#!/usr/bin/env python3
"""Golden cases for the short-output guard of `present`/`absent` tests (allenai/olmocr PR #462,
docs/checks.md §3.1.1), judged by two versions of the reference.

PR #462 adds one step to `TextPresenceTest.run`: after normalizing (and lowercasing, and cutting
to first_n/last_n) the page, if `len(page) < len(text) - max_diffs`, `present` fails ("Candidate
too short ...") and `absent` passes. The cases here sit on both sides of that line: page lengths
`len(text) - max_diffs` and one either side, cuts that make the page short, normalization and
lowercasing that change lengths (whitespace runs, `<br>`, emphasis, NFC, `İ`), `max_diffs` at and
beyond `len(text)`, empty and blank pages, plus cases far from the boundary and random ones.

Every case gets two verdicts:
  "passed", "explanation"   from PR #462's head (aabb122): the guarded checks;
  "published"               {"passed", "explanation"} from f7cfe4c: the published benchmark.
(or "load_error" when the reference rejects the record; both trees load records alike).

Sub-commands
------------
  generate > cases.jsonl
      The input cases only (standard library only; deterministic: random.Random(SEED)).
  build [--out tests/golden/guard_cases.jsonl] [--overlay-out tests/golden/guard_text_overlay.jsonl]
      generate + judge with both trees + check the expectations written here, and judge the
      present/absent cases of text_cases.jsonl with PR #462's tree: the overlay file lists the
      ones whose guarded verdict or explanation differs from their (published) golden one.
      Options: --pr-tree, --published-tree, --ref-python, --tool.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from collections import Counter, OrderedDict

SEED = 20260626
HERE = os.path.dirname(os.path.abspath(__file__))

WORDS = "the of annual report revenue grew by twelve percent committee members thank you for invitation".split()
ALPHABETS = [
    "abcdefgh ",
    "The quick brown fox, 12.5 % ",
    "aé\u0301ΣσςİI ı ß\u1e9e ",  # lowercasing and NFC change lengths
    "x*_ <br>y\t\n\r ",  # normalize_text shrinks these
    "日本語テキスト 한국어 ",
]


class Cases:
    def __init__(self):
        self.items = []
        self.counts = Counter()

    def add(self, group, test, text, *, note=None, expect=None):
        """One case: `test` without pdf/page/id; `expect` = {"guarded": bool, "published": bool}
        (either key optional) or "load_error": what we know the verdicts must be."""
        self.counts[group] += 1
        cid = "%s-%04d" % (group, self.counts[group])
        rec = OrderedDict(pdf="golden/guard.pdf", page=1, id=cid)
        rec.update(test)
        case = OrderedDict(case=cid, test=rec, text=text)
        if note:
            case["note"] = note
        if expect is not None:
            case["expect"] = expect
        self.items.append(case)


def both(kind_tests, C, group, text, **kw):
    for t in kind_tests:
        C.add(group, t, text, **kw)


def piece(s, n, rng=None):
    """n code points of s (a random window of it, or its start), padded with 'z' past its end."""
    if n <= len(s):
        start = rng.randrange(len(s) - n + 1) if rng and len(s) > n else 0
        return s[start : start + n]
    return s + "z" * (n - len(s))


def boundary(C, rng):
    """Page lengths len(text) - max_diffs - 2 .. + 1, pages made of a piece of the text (the role
    swap: the published check passes `present`), of other characters, or of blanks."""
    texts = [
        "an expression of good will",
        "Dear Committee Members",
        "TELEPHONE 478",
        "abcdef",
        "Revenue grew by twelve percent over the previous year",
        "x y",
        "ab",
        "Überschrift größer",
        "Quarterly figures (in $ thousands) for the fiscal years ending March 31, 2023 and 2024, as restated",
    ]
    for text in texts:
        L = len(text)
        for k in sorted({0, 1, 2, 3, L // 3, L - 1, L, L + 1}):
            if k < 0:
                continue
            need = L - k
            for n in range(need - 2, need + 2):
                if n < 0:
                    continue
                for how in ("piece", "other", "blank"):
                    if how == "piece":
                        page = piece(text, n, rng)
                    elif how == "other":
                        page = "".join(rng.choice("qvwjk ") for _ in range(n))
                    else:
                        page = " " * n
                    # A page that normalizes to a different length would leave the boundary.
                    if how != "blank" and ("  " in page or page != page.replace("**", "")):
                        continue
                    for kind in ("present", "absent"):
                        C.add(
                            "edge",
                            {"type": kind, "text": text, "max_diffs": k},
                            page,
                            note="len(text)=%d max_diffs=%d page=%d (%s)" % (L, k, n, how),
                        )


def degenerate(C):
    """The outputs a policy might collapse to, on tests with and without spaces."""
    tests = [
        {"text": "an expression of good will"},
        {"text": "TELEPHONE"},
        {"text": "a"},
        {"text": "Dear Committee Members", "max_diffs": 2},
        {"text": "ab", "max_diffs": 2},
        {"text": "ab", "max_diffs": 5},
        {"text": "ab", "max_diffs": True},
        {"text": "Page 1", "case_sensitive": False},
    ]
    pages = ["", "\n", " ", "\n\n\n", "\t \r\n", "a b", ".", "**", "<br>", "\u3000", "\u200b"]
    for t in tests:
        for page in pages:
            for kind in ("present", "absent"):
                C.add("degenerate", dict(type=kind, **t), page)
    # The documented examples: PR #462's own regression pages, with their verdicts.
    for page in ("", "\n", " ", "a b"):
        C.add(
            "degenerate",
            {"type": "present", "text": "an expression of good will from you"},
            page,
            # published: a blank page normalizes to " ", which matches the text's spaces
            expect={"guarded": False, "published": page in ("\n", " ")},
        )
        C.add("degenerate", {"type": "absent", "text": "TELEPHONE 478"}, page, expect={"guarded": True})


def cuts(C, rng):
    """first_n / last_n: the guard measures the cut page, not the whole page."""
    text = "Sincerely, Ada"  # 14 code points
    page = "Dear all,\n\nthank you for the invitation.\n\nSincerely, Ada Lovelace\n"
    norm_len = len(" ".join(page.split())) + 1  # the final newline becomes one space
    for k in (0, 1, 3):
        need = len(text) - k
        for n in (need - 1, need, need + 1, 0, 1, 200):
            for key in ("first_n", "last_n"):
                for kind in ("present", "absent"):
                    C.add("cut", {"type": kind, "text": text, "max_diffs": k, key: n}, page, note="%s=%d need=%d" % (key, n, need))
        # Both: the pieces are concatenated (and may overlap past the page's end).
        for f, l_ in ((need // 2, need - need // 2 - 1), (need // 2, need - need // 2), (5, 400), (400, 5), (norm_len, norm_len)):
            for kind in ("present", "absent"):
                C.add("cut", {"type": kind, "text": text, "max_diffs": k, "first_n": f, "last_n": l_}, page)
    # Odd cut values: negative (Python slices from the other end), booleans, zero (unset), floats
    # (the reference raises TypeError before the guard is reached).
    for key in ("first_n", "last_n"):
        for n in (-3, -60, -200, True, False, 0, 2.0, "5", None):
            for kind in ("present", "absent"):
                C.add("cut", {"type": kind, "text": text, key: n}, page)
                C.add("cut", {"type": kind, "text": "Ada", key: n}, "Ada")
    # A case-insensitive cut where the window is exactly long enough.
    for n in (2, 3, 4):
        C.add("cut", {"type": "present", "text": "Outlook", "case_sensitive": False, "first_n": n, "max_diffs": 4}, "OUTLOOK for 2025")
    for _ in range(60):
        t = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        p = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12)))
        test = {"type": rng.choice(("present", "absent")), "text": t, "max_diffs": rng.choice((0, 0, 1, 2, 5))}
        which = rng.choice(("first_n", "last_n", "both"))
        if which in ("first_n", "both"):
            test["first_n"] = rng.randint(1, len(t) + 3)
        if which in ("last_n", "both"):
            test["last_n"] = rng.randint(1, len(t) + 3)
        C.add("cut", test, p)


def normalization(C):
    """Pages (and texts) whose length changes under normalize_text or lowercasing, placed so that
    the raw length and the compared length fall on different sides of the boundary."""
    text = "abcdef"  # needs 6 - max_diffs code points
    pages = {
        "abcd  \n\n  ": "whitespace run collapses to one space (5 code points)",
        "ab<br>cd": "<br> becomes one space (5)",
        "ab<br/>": "<br/> becomes one space (3)",
        "**abc**de": "emphasis removed (5)",
        "__abcd__": "emphasis removed (4)",
        "<b>abcd</b>": "tags removed (4)",
        "a\u0301b\u0301c\u0301": "NFC composes: 6 raw, 3 compared",
        "\u00e1\u00e9": "precomposed (2)",
        "ab\r\ncd": "\\r\\n is whitespace: one space (5)",
        "abc\u2014de": "em dash flattened to - (6)",
        "\ufb01ne": "fi ligature kept (3)",
        "abcd\u200b": "zero-width space is not whitespace (5)",
    }
    for page, note in pages.items():
        for k in (0, 1, 2):
            for kind in ("present", "absent"):
                C.add("norm", {"type": kind, "text": text, "max_diffs": k}, page, note=note)
    # Lowercasing changes lengths: İ lowers to two code points (i + combining dot).
    for page in ("İİ", "İİİ", "i̇i̇", "ii", "İ İ", "İİİİİİ"):
        for t, cs in (("İİİ", False), ("İİİ", True), ("iii", False)):
            for k in (0, 1, 2, 3):
                for kind in ("present", "absent"):
                    C.add("norm", {"type": kind, "text": t, "case_sensitive": cs, "max_diffs": k}, page, note="lowercasing İ")
    # Texts normalized at load time: the guard uses the normalized text's length.
    for t in ("**bold** words", "a   b   c", "x<br>y", "e\u0301e\u0301e\u0301"):
        for page in ("bold words", "bold", "a b", "x y", "x", "\u00e9\u00e9", "\u00e9\u00e9\u00e9"):
            for kind in ("present", "absent"):
                C.add("norm", {"type": kind, "text": t}, page)


def large_diffs(C):
    """max_diffs at, beyond and far beyond len(text): the requirement is <= 0, never triggered."""
    for text in ("ab", "abc d", "Dear Committee Members"):
        L = len(text)
        for k in (L - 1, L, L + 1, 10**6, 10**30, True, False):
            for page in ("", "\n", "x", text[:1], text):
                for kind in ("present", "absent"):
                    C.add("diffs", {"type": kind, "text": text, "max_diffs": k}, page)


def messages(C):
    """The guard's message quotes the (lowercased) text's first 40 code points."""
    texts = [
        "A heading that is much longer than forty characters, surely",
        "Ünïcödé ‘quoted’ — text with “marks” and 😀 emoji in it, past forty",
        "Case Folded TEXT İstanbul",
        "short 'quote'",
        "back\\slash {braces} %s %d",
    ]
    for t in texts:
        for cs in (True, False):
            C.add("message", {"type": "present", "text": t, "case_sensitive": cs}, "\n")
            C.add("message", {"type": "present", "text": t, "case_sensitive": cs, "max_diffs": 3}, "x" * 10)


def far(C, rng):
    """Pages well beyond the boundary: the guard must change nothing."""
    for _ in range(120):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))
        words = [rng.choice(WORDS) for _ in range(rng.randint(20, 60))]
        if rng.random() < 0.5:
            words.insert(rng.randrange(len(words)), text)
        page = " ".join(words)
        if rng.random() < 0.3:  # a small typo
            i = rng.randrange(len(page))
            page = page[:i] + "#" + page[i + 1 :]
        C.add("far", {"type": rng.choice(("present", "absent")), "text": text, "max_diffs": rng.choice((0, 1, 2))}, page)


def random_cases(C, rng):
    """Random texts and pages of lengths around the boundary, in several alphabets."""
    for _ in range(700):
        alpha = rng.choice(ALPHABETS)
        text = "".join(rng.choice(alpha) for _ in range(rng.randint(1, 30)))
        if not text.strip() or not text.replace("*", "").replace("_", "").strip():
            text = "x" + text
        k = rng.choice((0, 0, 0, 1, 1, 2, 3, 5))
        n = max(0, len(text) - k + rng.randint(-4, 3))
        page = piece(text, n, rng) if rng.random() < 0.6 else "".join(rng.choice(alpha) for _ in range(n))
        test = {"type": rng.choice(("present", "absent")), "text": text, "max_diffs": k}
        if rng.random() < 0.3:
            test["case_sensitive"] = False
        if rng.random() < 0.2:
            test[rng.choice(("first_n", "last_n"))] = rng.randint(1, 40)
        C.add("random", test, page)


def generate(out):
    rng = random.Random(SEED)
    C = Cases()
    boundary(C, rng)
    degenerate(C)
    cuts(C, rng)
    normalization(C)
    large_diffs(C)
    messages(C)
    far(C, rng)
    random_cases(C, rng)
    for case in C.items:
        out.write(json.dumps({k: v for k, v in case.items() if k != "expect"}, ensure_ascii=False) + "\n")
    return C


def judge(args, tree, cases_path, out_path):
    with open(out_path, "w", encoding="utf-8") as out:
        subprocess.run([args.ref_python, args.tool, tree, cases_path], stdout=out, check=True, env=dict(os.environ, PYTHONHASHSEED="0"))
    with open(out_path, encoding="utf-8") as f:
        return {d["case"]: d for d in map(json.loads, f)}


def verdict(r):
    return {"load_error": r["load_error"]} if "load_error" in r else {"passed": r["passed"], "explanation": r["explanation"]}


def build(args):
    tmp = tempfile.mkdtemp(prefix="golden_guard_")
    cases_path = os.path.join(tmp, "cases.jsonl")
    with open(cases_path, "w", encoding="utf-8") as f:
        C = generate(f)
    pr = judge(args, args.pr_tree, cases_path, os.path.join(tmp, "pr462.jsonl"))
    pub = judge(args, args.published_tree, cases_path, os.path.join(tmp, "f7cfe4c.jsonl"))
    counts = Counter()
    mismatches = []
    with open(args.out, "w", encoding="utf-8") as out:
        for case in C.items:
            cid = case["case"]
            g, p = verdict(pr[cid]), verdict(pub[cid])
            rec = OrderedDict(case=cid, test=case["test"], text=case["text"])
            rec.update(g)
            if ("load_error" in g) != ("load_error" in p):
                mismatches.append((cid, "the two trees load the record differently", g, p))
            if "load_error" not in g:
                rec["published"] = p
            if "note" in case:
                rec["note"] = case["note"]
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
            group = cid.split("-")[0]
            if "load_error" in g:
                counts[(group, "load_error")] += 1
            else:
                counts[(group, "pass" if g["passed"] else "fail")] += 1
                counts[(group, "guard_message")] += g["explanation"].startswith("Candidate too short")
                counts[(group, "differs")] += g != p
                counts[(group, "flipped")] += g["passed"] != p["passed"]
            exp = case.get("expect")
            if exp == "load_error" and "load_error" not in g:
                mismatches.append((cid, "expected a load error", g))
            elif isinstance(exp, dict):
                for key, got in (("guarded", g), ("published", p)):
                    if key in exp and got.get("passed") != exp[key]:
                        mismatches.append((cid, key, exp[key], got))
    overlay = text_overlay(args, tmp)
    report(counts, len(C.items), args.out, overlay, mismatches)


def text_overlay(args, tmp):
    """PR #462's verdicts on the present/absent cases of text_cases.jsonl that loaded, written to
    the overlay file where they differ from the golden (published) verdict. Returns counts."""
    cases_path = os.path.join(tmp, "text_presence.jsonl")
    golden = {}
    with open(os.path.join(HERE, "text_cases.jsonl"), encoding="utf-8") as f, open(cases_path, "w", encoding="utf-8") as out:
        for line in f:
            c = json.loads(line)
            if "raw_test" in c or "load_error" in c or not isinstance(c["test"], dict):
                continue
            if c["test"].get("type") not in ("present", "absent"):
                continue
            golden[c["case"]] = c
            out.write(json.dumps({"case": c["case"], "test": c["test"], "text": c["text"]}, ensure_ascii=False) + "\n")
    pr = judge(args, args.pr_tree, cases_path, os.path.join(tmp, "text_pr462.jsonl"))
    n_diff = 0
    with open(args.overlay_out, "w", encoding="utf-8") as out:
        for cid, c in golden.items():
            g = verdict(pr[cid])
            if g != {"passed": c["passed"], "explanation": c["explanation"]}:
                n_diff += 1
                out.write(json.dumps(OrderedDict(case=cid, **g), ensure_ascii=False) + "\n")
    return {"judged": len(golden), "differ": n_diff}


def report(counts, n, path, overlay, mismatches):
    p = lambda *a: print(*a, file=sys.stderr)
    p("wrote %d cases to %s" % (n, path))
    cols = ("pass", "fail", "load_error", "guard_message", "differs", "flipped")
    p("| group | " + " | ".join(cols) + " | total |")
    p("|---|" + "---:|" * (len(cols) + 1))
    groups = sorted({g for g, _ in counts}, key=lambda g: list(dict.fromkeys(x for x, _ in counts)).index(g))
    total = Counter()
    for g in groups:
        row = [counts[(g, c)] for c in cols]
        total.update(dict(zip(cols, row)))
        p("| %s | %s | %d |" % (g, " | ".join(map(str, row)), row[0] + row[1] + row[2]))
    p("| **total** | %s | **%d** |" % (" | ".join("**%d**" % total[c] for c in cols), total["pass"] + total["fail"] + total["load_error"]))
    p("text_cases.jsonl present/absent cases judged with PR #462: %(judged)d, differing from the golden verdict: %(differ)d" % overlay)
    p("expectation mismatches: %d" % len(mismatches))
    for m in mismatches:
        p("  ", m)
    if mismatches:
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("generate")
    b = sub.add_parser("build")
    b.add_argument("--out", default=os.path.join(HERE, "guard_cases.jsonl"))
    b.add_argument("--overlay-out", default=os.path.join(HERE, "guard_text_overlay.jsonl"))
    b.add_argument("--pr-tree", default="/tmp/ref462", help="allenai/olmocr at refs/pull/462/head (aabb122)")
    b.add_argument("--published-tree", default="/tmp/reff7", help="allenai/olmocr at f7cfe4c")
    b.add_argument("--ref-python", default="/tmp/refvenv/bin/python")
    b.add_argument("--tool", default="/work/shared/tools/reference_verdicts.py")
    args = ap.parse_args()
    if args.cmd == "generate":
        C = generate(sys.stdout)
        print("generated %d cases: %s" % (len(C.items), dict(C.counts)), file=sys.stderr)
    else:
        build(args)


if __name__ == "__main__":
    main()
