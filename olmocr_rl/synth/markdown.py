"""The reference markdown of a synthetic page, and the page metadata in its front matter.

A port of what olmOCR's synthetic pipeline (allenai/olmocr @ f7cfe4c, `mine_html_templates.py`:
`html_to_markdown_with_frontmatter`, `extract_html_metadata`, `cleanup_headers_footers_soup`,
`convert_superscripts_subscripts`) makes of an HTML page, with the same libraries (BeautifulSoup's
html.parser, markdownify) called the same way, so that the text is the reference's byte for byte
(tests/golden/synth_cases.jsonl). What it does:

* front matter: `primary_language` from `<html lang>` (a 5-character tag such as pt-BR cut to its
  language), `is_table` / `is_diagram` when tables / image placeholders (`div.image`, 500 characters
  each) make up more than half of the body's content outside header and footer;
* the body: `<header>` removed, `<footer>` emptied but for its `.footnote` elements, line numbers,
  watermarks, `div.page-header` / `div.page-footer` removed, image placeholders and `<svg>` become
  `![...](page.png)`, then markdownify (ATX headings, `-` bullets, links as their text, no escaping
  of `*` and `_`) with tables kept as HTML and `<sup>`/`<sub>` kept as tags.
"""

from __future__ import annotations

from typing import Any

SUPERSCRIPTS = dict(zip("0123456789+-=()ni", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ"))
SUBSCRIPTS = dict(zip("0123456789+-=()aeoxhklmnpst", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₓₕₖₗₘₙₚₛₜ"))
FOOTNOTE_TAGS = ("div", "span", "p")


def soup_of(html: str) -> Any:
    from bs4 import BeautifulSoup

    return BeautifulSoup(html, "html.parser")


def unicode_scripts(element: Any) -> Any:
    """Every `<sup>` / `<sub>` below `element` replaced by its text in Unicode super/subscript
    characters where one exists (others kept as they are)."""
    for tag, table in (("sup", SUPERSCRIPTS), ("sub", SUBSCRIPTS)):
        for node in element.find_all(tag):
            node.replace_with("".join(table.get(ch, ch) for ch in node.get_text()))
    return element


def strip_running_heads(soup: Any) -> None:
    """Headers go; a footer keeps only its footnotes (`div/span/p.footnote`); line numbers and
    watermarks go."""
    for header in soup.find_all("header"):
        header.decompose()
    for footer in soup.find_all("footer"):
        kept = [note for name in FOOTNOTE_TAGS for note in footer.find_all(name, class_="footnote")]
        for note in kept:
            note.extract()
        footer.clear()
        for note in kept:
            footer.append(note)
    for cls in ("line-number", "watermark"):
        for node in soup.find_all(["div", "span"], class_=cls):
            node.extract()


def page_metadata(html: str) -> dict[str, Any]:
    """The front matter's fields for `html`."""
    soup = soup_of(html)
    root = soup.find("html")
    language = "en"
    if root and root.get("lang"):
        language = str(root.get("lang"))
        if len(language) == 5 and language[2] == "-":
            language = language[:2]
    body = soup.find("body") or soup
    main = soup_of(str(body))
    for node in main.find_all(["header", "footer"]):
        node.decompose()
    text_only = soup_of(str(main))
    for node in text_only.find_all("table"):
        node.decompose()
    for node in text_only.find_all("div", class_="image"):
        node.decompose()
    text_chars = len(text_only.get_text().strip())
    table_chars = sum(len(t.get_text().strip()) for t in main.find_all("table"))
    image_chars = 500 * len(main.find_all("div", class_="image"))
    total = text_chars + table_chars + image_chars
    is_table = total > 0 and table_chars / total > 0.5
    is_diagram = total > 0 and image_chars / total > 0.5
    return {
        "primary_language": language,
        "is_rotation_valid": True,
        "rotation_correction": 0,
        "is_table": is_table,
        "is_diagram": is_diagram,
    }


def _converter() -> Any:
    from markdownify import SPACES, MarkdownConverter

    class TablesAsHtml(MarkdownConverter):
        """Tables stay HTML (as html.parser re-serializes them); sup/sub stay tags."""

        def convert_table(self, el: Any, text: str, parent_tags: Any) -> str:
            table = soup_of(str(el)).table
            return str(table) if table else str(el)

        def convert_sup(self, el: Any, text: str, parent_tags: Any) -> str:
            return f"<sup>{el.get_text()}</sup>"

        def convert_sub(self, el: Any, text: str, parent_tags: Any) -> str:
            return f"<sub>{el.get_text()}</sub>"

    return TablesAsHtml(
        heading_style="ATX",
        bullets="-",
        strip=["a"],
        newline_style=SPACES,
        code_language="",
        escape_asterisks=False,
        escape_underscores=False,
    )


def body_markdown(html: str) -> str:
    """The page body as markdown (no front matter), cleaned as the module docstring says."""
    soup = soup_of(html)
    body = soup.find("body")
    page = soup_of(str(body)) if body else soup
    strip_running_heads(page)
    for cls in ("page-header", "page-footer"):
        for node in page.find_all("div", class_=cls):
            node.decompose()
    for node in page.find_all("div", class_="image"):
        node.replace_with(page.new_tag("img", src="page.png", alt="Image Placeholder"))
    for node in page.find_all("svg"):
        node.replace_with(page.new_tag("img", src="page.png", alt="Graphic Placeholder"))
    text = _converter().convert(str(page))
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    text = text.strip()
    while text.startswith("---"):
        text = text[3:].strip()
    while text.endswith("---"):
        text = text[:-3].strip()
    return text


def page_markdown(html: str) -> str:
    """The reference markdown of `html`: YAML front matter, then the body (upstream's
    `html_to_markdown_with_frontmatter`)."""
    meta = page_metadata(html)
    front = "---\n" + "".join(f"{key}: {meta[key]}\n" for key in meta) + "---"
    body = body_markdown(html)
    return f"{front}\n{body}" if body else front
