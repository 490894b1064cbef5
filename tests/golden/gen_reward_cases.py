"""Golden rewards for EditDistanceReward, ElementCountReward, RectTablesReward and
MedoidReward(group="batch") from the reference's own reward functions.

    /work/ref/venv/bin/python tests/golden/gen_reward_cases.py OLMOCR_TREE > tests/golden/reward_cases.jsonl

The reference functions (`bench_edit_distance_reward`, `reward_element_count`,
`reward_rect_tables`, `medoid_reward`) live in olmocr/train/grpo_train.py, whose imports need
torch; this script compiles just those functions from the upstream file at run time (nothing is
copied) beside upstream's `parse_html_tables` and RapidFuzz. Needs rapidfuzz and beautifulsoup4
in that venv. Deterministic (`random.Random(20261203)`). Not run in CI.

Each line: {"case", "reward", "completions", "claude_original" (a list, or absent), and either
"expected" (the reference's list of floats) or "error" (the exception the reference raised)
and "each" (its value for each completion alone, null where that raises)}.
"""

import ast
import json
import logging
import random
import sys
from typing import Optional

tree = sys.argv[1]
sys.path.insert(0, tree)
from olmocr.bench.table_parsing import parse_html_tables
from rapidfuzz import distance, fuzz

NAMES = ["bench_edit_distance_reward", "reward_element_count", "reward_rect_tables", "medoid_reward"]
src = open(f"{tree}/olmocr/train/grpo_train.py", encoding="utf-8").read()
fns = [n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name in NAMES]
assert len(fns) == len(NAMES), [f.name for f in fns]
ns = {
    "Optional": Optional,
    "fuzz": fuzz,
    "distance": distance,
    "parse_html_tables": parse_html_tables,
    "logger": logging.getLogger("ref"),
}
exec(compile(ast.Module(fns, []), "grpo_train.py", "exec"), ns)

rng = random.Random(20261203)

WORDS = {
    "en": "the of and results table figure model training page section data value method shown".split(),
    "de": "der die das Ergebnisse Tabelle Abbildung Straße größer über für Maß Übersicht".split(),
    "fr": "le la les résultats tableau être déjà où façon élève naïve cœur".split(),
    "ru": "и в не на результаты таблица данные метод страница значение".split(),
    "zh": "的 是 在 数据 表格 模型 训练 结果 页面 方法".split(),
    "ja": "これは 表 データ 結果 モデル ページ 方法 値".split(),
    "ar": "في من على النتائج جدول البيانات نموذج صفحة".split(),
    "emoji": ["😀", "🚀", "👍🏽", "🇩🇪", "👨‍👩‍👧", "∑", "∞", "𝔸", "𝒙"],
    "mark": ["e\u0301", "n\u0303", "\u200b", "\u00a0", "ﬁ", "Å", "ǅ", "İ", "ß", "\t"],
}


def words(n, lang=None):
    pool = WORDS[lang or rng.choice(list(WORDS))]
    return " ".join(rng.choice(pool) for _ in range(n))


def paragraph():
    lang = rng.choice(["en", "en", "en", "de", "fr", "ru", "zh", "ja", "ar"])
    out = words(rng.randint(5, 40), lang)
    if rng.random() < 0.2:
        out += " " + words(rng.randint(1, 4), rng.choice(["emoji", "mark"]))
    return out


def html_table(rows=None, cols=None, spans=0.0, ragged=0.0, upper=False, head=None):
    rows = rows or rng.randint(1, 6)
    cols = cols or rng.randint(1, 6)
    t = lambda s: s.upper() if upper else s
    out = [f"<{t('table')}{rng.choice(['', ' border=1', ' class=x'])}>"]
    if head is None:
        head = rng.random() < 0.4
    for r in range(rows):
        n = cols
        if rng.random() < ragged:
            n += rng.choice([-2, -1, 1])
        cells = []
        for c in range(max(0, n)):
            tag = "th" if (head and r == 0) or rng.random() < 0.05 else "td"
            attrs = ""
            if rng.random() < spans:
                which = rng.choice(["rowspan", "colspan"])
                value = rng.choice(["2", "3", "0", "-1", "abc", "", " 2", "2.5", "1", "4", "50", "02"])
                attrs = f' {which}="{value}"'
            text = words(rng.randint(0, 3), rng.choice(["en", "de", "zh"]))
            if rng.random() < 0.05:
                text += "<br>" + words(1, "en")
            close = "" if rng.random() < 0.05 else f"</{t(tag)}>"
            cells.append(f"<{t(tag)}{attrs}>{text}{close}")
        tr_close = "" if rng.random() < 0.05 else f"</{t('tr')}>"
        out.append(f"<{t('tr')}>" + "".join(cells) + tr_close)
    if head and rng.random() < 0.5:
        out.insert(1, "<thead>")
        out.insert(3, "</thead>")
    out.append(f"</{t('table')}>")
    return "\n".join(out)


def md_table():
    cols = rng.randint(1, 4)
    lines = ["| " + " | ".join(words(1, "en") for _ in range(cols)) + " |", "|" + "---|" * cols]
    for _ in range(rng.randint(1, 4)):
        lines.append("| " + " | ".join(words(rng.randint(0, 2), "en") for _ in range(cols)) + " |")
    return "\n".join(lines)


MATH = ["x^2", "\\frac{a}{b}", "\\sum_{i=1}^n i", "a\n+ b", "\\alpha", " ", "$", "\\)", "α+β", "x_{i,j}"]


def math_span():
    body = rng.choice(MATH)
    return rng.choice([f"$${body}$$", f"\\({body}\\)", f"\\[{body}\\]", f"${body}$", f"$$\n{body}\n$$", "$$$$", "\\(\\)", "\\[\\]"])


def page(tables=0.3, math=0.3, md=0.1):
    parts = []
    for _ in range(rng.randint(1, 8)):
        r = rng.random()
        if r < tables:
            parts.append(html_table(spans=rng.choice([0, 0.1, 0.3]), ragged=rng.choice([0, 0, 0.2])))
        elif r < tables + math:
            parts.append(paragraph() + " " + math_span() + " " + paragraph())
        elif r < tables + math + md:
            parts.append(md_table())
        else:
            parts.append(("# " if rng.random() < 0.1 else "") + paragraph())
    return rng.choice(["\n\n", "\n", "\r\n\r\n"]).join(parts)


def mutate(text, edits):
    chars = list(text)
    for _ in range(edits):
        op = rng.random()
        at = rng.randrange(len(chars) + 1)
        if op < 0.3 and chars:
            del chars[min(at, len(chars) - 1)]
        elif op < 0.6:
            chars.insert(at, rng.choice("abcxyz .,\n$<>|éß中😀"))
        elif op < 0.9 and chars:
            chars[min(at, len(chars) - 1)] = rng.choice("abcxyz .,\n$<>|éß中😀")
        elif chars:
            start = rng.randrange(len(chars))
            chunk = chars[start : start + rng.randint(1, 40)]
            chars[at:at] = chunk
    return "".join(chars)


def long_page(target):
    out = ""
    while len(out) < target:
        out += page() + "\n\n"
    return out[:target]


def as_completion(text):
    r = rng.random()
    if r < 0.25:
        return [{"role": "assistant", "content": text}]
    return text


cases = []


def add(group, reward, completions, claude_original=None):
    cases.append((f"{reward}-{group}-{sum(1 for c in cases if c[1] == reward):04d}", reward, completions, claude_original))


# --- edit distance and element count: one completion with one reference (or none) -----------
FIXED_PAIRS = [
    ("", ""),
    ("", "a"),
    ("a", ""),
    ("same", "same"),
    ("abc", "ABC"),
    ("e\u0301", "é"),
    ("😀😀", "😀"),
    ("👨‍👩‍👧", "👨"),
    ("\r\n", "\n"),
    (" ", "\u00a0"),
    ("<table></table>", "<TABLE></TABLE>"),
    ("$$x$$", "\\(x\\)"),
    ("$$$$", "$$ $$"),
    ("\\(\\)", "\\( \\)"),
    ("<tables>x</tables>", "<table\n>x</table>"),
    ("<table>x</table", "<table>x</table>"),
    ("<table><table>x</table></table>", "<table>x</table>"),
    ("$$a$$b$$", "$$a$$"),
    ("\\[\na\n\\]", "\\[a\\]"),
    ("x" * 3000, "x" * 2999 + "y"),
    ("ab" * 2000, "ba" * 2000),
    ("中文" * 500, "中文" * 499),
]
for a, b in FIXED_PAIRS:
    for reward in ("edit_distance", "element_count"):
        add("fixed", reward, [a], [b])
        add("fixed", reward, [b], [a])
        add("fixed", reward, [as_completion(a)], [None])
        add("fixed", reward, [[]], [b])
for reward in ("edit_distance", "element_count"):
    for _ in range(260):
        base = page(tables=rng.choice([0, 0.3, 0.6]), math=rng.choice([0, 0.3, 0.6]))
        kind = rng.random()
        if kind < 0.5:
            other = mutate(base, rng.choice([0, 1, 3, 10, 50]))
        elif kind < 0.6:
            other = page()
        elif kind < 0.7:
            other = base.replace("<table", "<TABLE").replace("$$", "\\[", 1)
        elif kind < 0.8:
            other = ""
        else:
            other = base + "\n\n" + page()
        n = rng.randint(1, 4)
        comps = [as_completion(mutate(other, rng.choice([0, 2, 5]))) for _ in range(n)]
        refs = [rng.choice([base, base, None]) for _ in range(n)]
        add("page", reward, comps, refs)
    for _ in range(20):
        base = long_page(rng.randint(3000, 8000))
        add("long", reward, [as_completion(mutate(base, rng.choice([0, 5, 100, 600])))], [base])

# --- rectangular tables: one or more completions, no reference -------------------------------
FIXED_TABLES = [
    "",
    "no tables here",
    md_table(),
    "<table></table>",
    "<table><tr></tr></table>",
    "<table><tr><td>a</td></tr></table>",
    "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>",
    '<table><tr><td rowspan="2">a</td><td>b</td></tr><tr><td>c</td></tr></table>',
    '<table><tr><td rowspan="3">a</td><td>b</td></tr><tr><td>c</td></tr></table>',
    '<table><tr><td colspan="2">a</td></tr><tr><td>b</td><td>c</td></tr></table>',
    '<table><tr><td colspan="2">a</td></tr><tr><td>b</td></tr></table>',
    '<table><tr><td rowspan="0">a</td><td>b</td></tr><tr><td>c</td></tr><tr><td>d</td></tr></table>',
    '<table><tr><td colspan="0">a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>',
    '<table><tr><td colspan="abc">a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>',
    "<table><tr><td>a<table><tr><td>x</td><td>y</td></tr></table></td></tr></table>",
    "<table><tr><td>a</td><td>b</td></tr><tr><td>c",
    "<table><tr><td>a</td></tr></table><table><tr><td>a</td></tr><tr><td>b</td><td>c</td></tr></table>",
    "<TABLE><TR><TD>a</TD><TD>b</TD></TR><TR><TD>c</TD></TR></TABLE>",
    "<table><thead><tr><th>h</th><th>i</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>",
    "<table><caption>c</caption><tr><td>a</td></tr></table>",
    "<table><tr><td>a</td></tr><!-- <tr><td>b</td><td>c</td></tr> --></table>",
    "<table><tr><th>a</th><td>b</td></tr><tr><td>c</td><th>d</th></tr></table>",
    "text <table> <tr> <td> a </td> </tr> </table> text",
    "<table><tr><td>a</td></tr>",
    "</table><table>",
    "<table><td>a</td><td>b</td></table>",
    "<table><tr><td>&lt;b&gt;</td><td>&amp;</td></tr></table>",
]
for text in FIXED_TABLES:
    add("fixed", "rect_tables", [as_completion(text)])
for _ in range(500):
    parts = []
    for _ in range(rng.randint(0, 4)):
        r = rng.random()
        if r < 0.7:
            parts.append(html_table(spans=rng.choice([0, 0.1, 0.3, 0.6]), ragged=rng.choice([0, 0.1, 0.4]), upper=rng.random() < 0.1))
        elif r < 0.8:
            parts.append(md_table())
        else:
            parts.append(paragraph())
    text = "\n\n".join(parts)
    if rng.random() < 0.1:
        text = text.replace("</table>", "", 1)
    if rng.random() < 0.05:
        inner = html_table(rows=2, cols=2)
        text = text.replace("</td>", "</td><td>" + inner + "</td>", 1)
    add("random", "rect_tables", [as_completion(text) for _ in range(1)] + ([as_completion(page())] if rng.random() < 0.2 else []))

# --- medoid, upstream's mode: one medoid over the whole list ----------------------------------
FIXED_GROUPS = [
    [],
    [""],
    ["a"],
    ["", ""],
    ["a", "a", "a"],
    ["a", "b"],
    ["a", "b", "c"],
    ["ab", "ba", "ab"],
    ["", "abc", "abd"],
    ["😀", "😀😀", "e\u0301", "é"],
    ["x" * 100, "x" * 99, "y" * 100],
]
for texts in FIXED_GROUPS:
    add("fixed", "medoid", [as_completion(t) for t in texts])
for _ in range(180):
    base = page()
    n = rng.choice([2, 3, 4, 5, 8, 12, 16])
    texts = []
    for _ in range(n):
        r = rng.random()
        if r < 0.6:
            texts.append(mutate(base, rng.choice([0, 1, 3, 10, 40])))
        elif r < 0.75:
            texts.append(page())
        elif r < 0.85:
            texts.append("")
        else:
            texts.append(texts[-1] if texts else base)
    add("random", "medoid", [as_completion(t) for t in texts])
for _ in range(12):
    n = rng.choice([8, 16, 28])
    bases = [long_page(rng.randint(3000, 8000)) for _ in range(rng.choice([1, 1, 2, 4]))]
    texts = []
    for _ in range(n):
        base = rng.choice(bases)
        r = rng.random()
        if r < 0.7:
            texts.append(mutate(base, rng.choice([0, 5, 50, 300])))
        elif r < 0.8:
            texts.append(base[: rng.randint(0, len(base))])
        elif r < 0.9:
            texts.append(base + base[: rng.randint(0, 2000)])
        else:
            texts.append(long_page(rng.randint(500, 8000)))
    add("long", "medoid", [as_completion(t) for t in texts])

FUNCS = {
    "edit_distance": ns["bench_edit_distance_reward"],
    "element_count": ns["reward_element_count"],
    "rect_tables": ns["reward_rect_tables"],
    "medoid": ns["medoid_reward"],
}
for case, reward, completions, refs in cases:
    line = {"case": case, "reward": reward, "completions": completions}
    kwargs = {}
    if refs is not None:
        line["claude_original"] = refs
        kwargs["claude_original"] = refs
    try:
        line["expected"] = FUNCS[reward](None, completions, **kwargs)
    except Exception as e:  # the reference's own failure is the golden value
        line["error"] = f"{type(e).__name__}: {e}"
        # The reference's value for each completion alone (null where it raises there too).
        each = []
        for i, c in enumerate(completions):
            one = {k: [v[i]] for k, v in kwargs.items()}
            try:
                each.append(FUNCS[reward](None, [c], **one)[0])
            except Exception:
                each.append(None)
        line["each"] = each
    print(json.dumps(line, ensure_ascii=False))
