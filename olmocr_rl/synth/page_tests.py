"""The unit tests of a synthetic page, derived from its HTML.

A port of olmOCR's `generate_tests_from_html` (allenai/olmocr @ f7cfe4c, `mine_html_templates.py`):
for the same HTML and the same `random.Random` it returns the same tests in the same order
(tests/golden/synth_cases.jsonl), because it draws from the generator at the same points (the shuffle
of each table's cells, one `choice` per relation, the shuffle of sentence pairs, of rare words and of
rare numbers), parses with the same libraries (BeautifulSoup's html.parser, syntok, wordfreq, the
markdown of `olmocr_rl.synth.markdown`), and keeps a candidate test only when the reference's check
passes it where upstream runs that check, here with this project's checks (the reference's verdicts,
docs/fidelity.md) and its table parser (`_core._parse_tables`, the reference's `parse_html_tables`):

* `absent`: the text of the header's and footer's leaf elements (and `div.page-number`), unless it
  also appears in the page's main text;
* `table`: up to 26 cells per table with a neighbour or heading, each checked on its table's HTML;
* `order`: up to 6 random pairs of sentences of the markdown, checked on it;
* `present`: the 10 rarest words (wordfreq Zipf <= 3 in the page's language) and the 5 rarest
  numbers, checked on the markdown;
* `math`: every distinct equation of the markdown (up to 50), as written;
* `format`: up to 5 headings, bold and italic texts, checked on the markdown;
* `footnote`: up to 5 footnote markers (`<sup>`) with the words around them, checked on the markdown;
* one `baseline` test (disallowed characters checked unless the markdown itself has some).

Differences: test ids are `{pdf_id}_{kind}_{n:08x}`, n counting the ids asked for on the page in
upstream's order (upstream: 8 random hex digits of uuid4), so a page's tests are reproducible; where
upstream raises (a table whose check raises, or a table with rows but no cells) this raises
`PageTestError` naming the cause. wordfreq's Japanese, Chinese and Korean word lists need optional
tokenizers (MeCab, jieba); without them, as upstream in the same environment, no word of those
languages counts as rare.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import olmocr_rl._core as _core
from olmocr_rl.synth.markdown import page_markdown, page_metadata, soup_of, strip_running_heads, unicode_scripts

RELATIONS = ("up", "down", "left", "right", "left_heading", "top_heading")
TEXT_FIELDS = ("text", "cell", "before", "after", "up", "down", "left", "right", "top_heading", "left_heading")
LATEX_DELIMITERS = (r"\(", r"\)", r"\[", r"\]")
SCRIPT_CHARS = set("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₓₕₖₗₘₙₚₛₜ")
LEAF_TAGS = ["span", "div", "p", "h3", "h4", "h5", "h6"]
FOOTNOTE_SYMBOLS = ("*", "†", "‡", "§", "¶")
NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")


class PageTestError(ValueError):
    """olmOCR's generator raises on this page; the message says where."""


@dataclass
class _Page:
    """What the steps share: the page's names, the id counter and the checks."""

    pdf_id: str
    pdf: str
    rng: random.Random
    ids: int = 0
    tests: list[dict] = field(default_factory=list)

    def record(self, kind: str, **fields: Any) -> dict:
        """A test record with the next id (upstream takes a fresh uuid at the same point)."""
        test_id = f"{self.pdf_id}_{kind}_{self.ids:08x}"
        self.ids += 1
        return {"pdf": self.pdf, "page": 1, "id": test_id, **fields}


def verdict(record: dict, text: str) -> Any:
    """The reference's verdict (`passed`, `explanation`) of `record` on `text`, or None where the
    reference would refuse the record or raise while checking it."""
    import orjson

    suite = _core.Suite.from_sources([("synth.jsonl", orjson.dumps(record).decode())])
    if len(suite) != 1:
        return None
    result = suite.check(record["id"], text)
    return None if result.error else result


def check(record: dict, text: str) -> bool | None:
    """`verdict`'s passed, or None."""
    result = verdict(record, text)
    return None if result is None else result.passed


def generate_page_tests(html: str, pdf_id: str, page_num: int, rng: random.Random) -> list[dict]:
    """The tests of one page (see the module docstring); `pdf` is `{pdf_id}_page{page_num}.pdf`."""
    page = _Page(pdf_id, f"{pdf_id}_page{page_num}.pdf", rng)
    soup = _trimmed_soup(html)
    _absence_tests(page, soup)
    _table_tests(page, html, soup)
    markdown = page_markdown(html)
    language = page_metadata(html).get("primary_language", "en")
    body = _prose(markdown)
    sentences = _sentences(body)
    _order_tests(page, sentences, markdown)
    _presence_tests(page, sentences, language, markdown)
    _math_tests(page, markdown)
    _format_tests(page, html, markdown)
    _footnote_tests(page, html, markdown)
    tests = [t for t in page.tests if t["type"] != "absent" or t["text"] not in body]
    tests = _deduplicated([t for t in tests if _clean(t)])
    tests.append(_baseline_test(page, markdown))
    return tests


def _trimmed_soup(html: str) -> Any:
    """The page without line numbers, page-header/footer divs as header/footer, and nothing in the
    body before the (first) header or after the (first) footer."""
    soup = soup_of(html)
    for node in soup.find_all(["div", "span"], class_="line-number"):
        node.extract()
    for cls, name in (("page-header", "header"), ("page-footer", "footer")):
        for node in soup.find_all("div", class_=cls):
            node.name = name
    body = soup.find("body")
    if body:
        header, footer = soup.find("header"), soup.find("footer")
        if header:
            if not body.contents:
                raise PageTestError("its <header> is outside an empty <body> (olmOCR's generator raises IndexError on it)")
            node = body.contents[0]
            while node and node != header:
                node, gone = node.next_sibling, node
                gone.extract()
        if footer:
            node = footer.next_sibling
            while node:
                node, gone = node.next_sibling, node
                gone.extract()
    return soup


def _absence_tests(page: _Page, soup: Any) -> None:
    for kind in ("header", "footer"):
        for element in soup.find_all(kind):
            mini = unicode_scripts(soup_of(str(element)))
            for node in mini.find_all(["h1", "h2"]):
                node.extract()
            texts = [t for tag in mini.find_all(LEAF_TAGS) if not tag.find(LEAF_TAGS) and (t := tag.get_text().strip())]
            if not texts and (whole := mini.get_text().strip()):
                texts = [whole]
            for text in texts:
                text = text.split("\n")[0] if "\n" in text else text
                if len(text) > 3 or any(c.isdigit() for c in text):
                    page.tests.append(page.record(kind, type="absent", text=text, max_diffs=round(len(text) * 0.05)))
    for element in soup.find_all("div", class_="page-number"):
        text = unicode_scripts(soup_of(str(element))).get_text().strip()
        if text:
            page.tests.append(page.record("page_number", type="absent", text=text, max_diffs=0))


def _table_tests(page: _Page, html: str, soup: Any) -> None:
    try:
        tables = _core._parse_tables(str(unicode_scripts(soup_of(html))), False)
    except ValueError as e:
        raise PageTestError(f"its tables cannot be parsed: {e}") from None
    originals = soup.find_all("table")
    for index, table in enumerate(tables):
        cells = [((r, c), text) for r, c, text in table["cells"]]
        if not cells:
            raise PageTestError(f"table {index} has rows but no cells (olmOCR's generator raises ValueError on it)")
        if max(r for (r, _), _ in cells) < 2 or max(c for (_, c), _ in cells) < 2:
            continue
        text_at = dict(cells)
        order = {pos: k for k, (pos, _) in enumerate(cells)}
        shuffled = list(cells)
        page.rng.shuffle(shuffled)
        kept: list[dict] = []
        for pos, content in shuffled:
            content = _core.normalize_text(content)
            if not content:
                continue
            test = page.record(f"table{index}", type="table", cell=content, max_diffs=0, ignore_markdown_tables=True)
            for name in RELATIONS:
                related = table[name][order[pos]]
                if related:
                    other = text_at[tuple(page.rng.choice(related))]
                    if other.strip() and "\n" not in other:
                        test[name] = _core.normalize_text(other)
            if not any(name in test for name in RELATIONS):
                continue
            if _table_check(test, originals, index):
                kept.append(test)
            if len(kept) > 25:
                break
        page.tests.extend(kept)


def _table_check(test: dict, originals: list, index: int) -> bool:
    """Upstream checks a table test on its table's HTML (the index-th table of the trimmed page),
    as a test without `ignore_markdown_tables`; a check that raises there ends the page."""
    if index >= len(originals):
        return False
    record = {k: v for k, v in test.items() if k != "ignore_markdown_tables"}
    verdict = check(record, str(originals[index]))
    if verdict is None:
        raise PageTestError(f"the check of table test {test['id']} raises in olmOCR's generator")
    return verdict


def _prose(markdown: str) -> str:
    """The markdown's body without front matter, HTML tables and math."""
    text = re.sub(r"<table[^>]*>.*?</table>", "", markdown, flags=re.DOTALL | re.IGNORECASE)
    for pattern in (r"\$\$.*?\$\$", r"\\\[.*?\\\]", r"\\\(.*?\\\)"):
        text = re.sub(pattern, "", text, flags=re.DOTALL)
    lines = text.split("\n")
    start = 0
    if lines[0] == "---":
        start = next((i + 1 for i, line in enumerate(lines[1:], 1) if line == "---"), 0)
    return "\n".join(lines[start:]).strip()


def _sentences(body: str) -> list[str]:
    """syntok's sentences of the prose, without markup lines, images, heading marks or bullets,
    normalized."""
    from syntok.segmenter import process

    out = []
    for paragraph in process(body) if body else []:
        for sentence in paragraph:
            text = "".join(token.spacing + token.value for token in sentence).strip()
            if not text or text.startswith("<") or text.endswith(">") or re.search(r"!\[.*?\]\(.*?\)", text):
                continue
            text = text.lstrip("#").strip()
            if text.startswith("- "):
                text = text[2:]
            text = _core.normalize_text(text.strip())
            if text:
                out.append(text)
    return out


def _order_tests(page: _Page, sentences: list[str], markdown: str) -> None:
    indexes = list(range(len(sentences)))
    page.rng.shuffle(indexes)
    pairs = [sorted(indexes[2 * i : 2 * i + 2]) for i in range(len(indexes) // 2)]
    kept = 0
    for i, j in pairs:
        first, second = sentences[i], sentences[j]
        if len(first) < 5 or len(second) < 5:
            continue
        first = first.split("\n")[0].strip() if "\n" in first else first
        second = second.split("\n")[0].strip() if "\n" in second else second
        max_diffs = round(max(len(first), len(second)) * 0.02)
        if max_diffs > len(first) // 4 or max_diffs > len(second) // 4:
            continue
        test = page.record("order", type="order", before=first, after=second, max_diffs=max_diffs)
        if check(test, markdown):
            kept += 1
            page.tests.append(test)
        if kept > 5:
            break


def _rarest(sentences: list[str], language: str) -> tuple[list[str], list[str]]:
    """The (up to) 10 rarest words with Zipf frequency <= 3 and the 5 least repeated numbers of
    the sentences, before shuffling."""
    from wordfreq import zipf_frequency

    words: Counter[str] = Counter()
    numbers: Counter[str] = Counter()
    zipf: dict[str, float] = {}
    lang = language if len(language) == 2 else "en"
    for token in "\n".join(sentences).split():
        token = token.strip(".,;:!?\"'()")
        if not token:
            continue
        if NUMBER.match(token):
            if len(token) >= 2:
                numbers[token] += 1
        elif any(c.isalpha() for c in token):
            word = token.lower()
            if len(word) >= 4:
                words[word] += 1
                if word not in zipf:
                    try:
                        zipf[word] = zipf_frequency(word, lang)
                    except Exception:  # noqa: BLE001 - as upstream: a language or tokenizer wordfreq lacks counts as common
                        zipf[word] = 4.0
    if zipf:
        rare = sorted(((w, z) for w, z in zipf.items() if z <= 3.0), key=lambda wz: (wz[1], words[wz[0]]))
        rare_words = [w for w, _ in rare[:10]]
    else:
        rare_words = [w for w, _ in sorted(words.items(), key=lambda wc: wc[1])[:10]]
    rare_numbers = [n for n, _ in sorted(numbers.items(), key=lambda nc: nc[1])[:5]]
    return rare_words, rare_numbers


def _presence_tests(page: _Page, sentences: list[str], language: str, markdown: str) -> None:
    rare_words, rare_numbers = _rarest(sentences, language)
    page.rng.shuffle(rare_words)
    page.rng.shuffle(rare_numbers)
    for text, kind in [(w, "present_word") for w in rare_words] + [(n, "present_num") for n in rare_numbers]:
        normalized = _core.normalize_text(text)
        if not normalized or len(normalized) < 2:
            continue
        test = page.record(kind, type="present", text=text, max_diffs=0)
        if check(test, markdown):
            page.tests.append(test)


def _math_tests(page: _Page, markdown: str) -> None:
    equations: list[str] = []
    for pattern in (r"\$\$(.+?)\$\$", r"\\\((.+?)\\\)", r"\\\[(.+?)\\\]"):
        for found in re.findall(pattern, markdown, re.DOTALL):
            equation = found.strip()
            if len(equation) > 2 and equation not in equations:
                equations.append(equation)
    for equation in equations[:50]:
        page.tests.append(page.record("math", type="math", math=equation, max_diffs=0, ignore_dollar_delimited=True))


def _format_tests(page: _Page, html: str, markdown: str) -> None:
    soup = unicode_scripts(soup_of(html))
    for node in soup.find_all(["header", "footer", "table"]):
        node.decompose()
    kept: list[dict] = []
    seen: set[str] = set()
    for tags, kind in ((("h1", "h2", "h3", "h4", "h5", "h6"), "heading"), (("b", "strong"), "bold"), (("i", "em"), "italic")):
        for element in soup.find_all(list(tags)):
            if len(kept) >= 5:
                break
            text = _core.normalize_text(element.get_text().strip())
            if text and len(text) >= 3 and text not in seen:
                test = page.record(f"format_{kind}", type="format", text=text, format=kind, max_diffs=round(len(text) * 0.05))
                if check(test, markdown):
                    kept.append(test)
                    seen.add(text)
    page.tests.extend(kept)


def _footnote_tests(page: _Page, html: str, markdown: str) -> None:
    soup = soup_of(html)
    strip_running_heads(soup)
    markers: dict[str, list] = {}
    for sup in soup.find_all("sup"):
        marker = sup.get_text().strip()
        if not marker or not (marker.isdigit() or (len(marker) == 1 and marker.isalpha()) or marker in FOOTNOTE_SYMBOLS):
            continue
        if marker not in markers:
            if len(markers) >= 5:
                continue
            markers[marker] = []
        markers[marker].append(sup)
    for marker, sups in markers.items():
        test = page.record("footnote", type="footnote", marker=marker, max_diffs=0)
        around = [_words_around(sup) for sup in sups if sup.parent]
        if len(around) >= 2:
            if around[0][0]:
                test["appears_before_marker"] = around[0][0]
            if around[1][1]:
                test["appears_after_marker"] = around[1][1]
        elif around:
            if around[0][0]:
                test["appears_before_marker"] = around[0][0]
            elif around[0][1]:
                test["appears_after_marker"] = around[0][1]
        if check(test, markdown):
            page.tests.append(test)


def _words_around(sup: Any) -> tuple[str | None, str | None]:
    """The last three words before a marker and the first three after it, within its parent
    (None where fewer than 10 characters or a normalized text under 5). Siblings are compared with
    BeautifulSoup's `==` (equal markup), as upstream does: a second identical marker in the same
    parent ends the text before it at the first."""
    before: list[str] = []
    for sibling in sup.parent.children:
        if sibling == sup:
            break
        before.append(sibling if isinstance(sibling, str) else sibling.get_text())
    after: list[str] = []
    found = False
    for sibling in sup.parent.children:
        if found:
            after.append(sibling if isinstance(sibling, str) else sibling.get_text())
        elif sibling == sup:
            found = True
    return _edge_words("".join(before).strip(), last=True), _edge_words("".join(after).strip(), last=False)


def _edge_words(text: str, *, last: bool) -> str | None:
    if len(text) < 10:
        return None
    words = text.split()
    if len(words) >= 2:
        text = " ".join(words[-3:] if last else words[:3])
    elif not last:
        text = text[:50]
    candidate = _core.normalize_text(text)
    return candidate if candidate and len(candidate) >= 5 else None


def _alnum(value: object) -> bool:
    return isinstance(value, str) and any(c.isalnum() for c in value)


def _latex(value: object) -> bool:
    return isinstance(value, str) and any(d in value for d in LATEX_DELIMITERS)


def _scripts(value: object) -> bool:
    return isinstance(value, str) and any(c in SCRIPT_CHARS for c in value)


def _sup_sub_tags(value: object) -> bool:
    return isinstance(value, str) and any(t in value for t in ("<sup>", "</sup>", "<sub>", "</sub>"))


def _clean(test: dict) -> bool:
    """Upstream's last filter: text fields with a letter or digit and no LaTeX delimiters,
    Unicode super/subscripts or sup/sub tags (math tests kept; format tests: their text only;
    footnote tests: the words around the marker, which may hold scripts)."""
    kind = test.get("type")
    if kind == "math":
        return True
    if kind == "format":
        return "text" in test and _alnum(test["text"]) and not _latex(test["text"]) and not _scripts(test["text"])
    if kind == "footnote":
        fields = [test[k] for k in ("appears_before_marker", "appears_after_marker") if test.get(k)]
        return all(_alnum(v) and not _latex(v) for v in fields)
    fields = [test[k] for k in TEXT_FIELDS if k in test]
    return all(_alnum(v) and not _latex(v) and not _scripts(v) and not _sup_sub_tags(v) for v in fields)


def _deduplicated(tests: list[dict]) -> list[dict]:
    """The first of tests equal in everything but the id."""
    seen, out = set(), []
    for test in tests:
        signature = tuple(sorted((k, str(v)) for k, v in test.items() if k != "id"))
        if signature not in seen:
            seen.add(signature)
            out.append(test)
    return out


def _baseline_test(page: _Page, markdown: str) -> dict:
    """The page's baseline test; disallowed characters unchecked when the markdown has some."""
    test = page.record("baseline", type="baseline", max_repeats=30, check_disallowed_characters=True)
    result = verdict(test, markdown)
    if result is not None and not result.passed and "disallowed characters" in result.explanation:
        test["check_disallowed_characters"] = False
    return test
