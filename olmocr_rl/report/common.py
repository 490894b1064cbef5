"""What both reports share: escaping, the HTML shell with its content security policy, page
images (files are written through `olmocr_rl.atomic`)."""

from __future__ import annotations

import base64
import hashlib
import html
import io
import os
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def esc(x: Any) -> str:
    """HTML-escaped text (quotes too: safe inside attributes)."""
    return html.escape(str(x), quote=True)


def asset(name: str) -> str:
    """A stylesheet or script shipped beside this module."""
    return (HERE / name).read_text(encoding="utf-8")


def data_uri(data: bytes, mime: str) -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


_IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a")


def is_image(path: str | os.PathLike[str]) -> bool:
    """Whether the file starts as a PNG, JPEG, GIF or WebP image does (its first bytes)."""
    try:
        with open(path, "rb") as f:
            head = f.read(12)
    except OSError:
        return False
    return head.startswith(_IMAGE_MAGIC) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")


def script_json(value: Any) -> str:
    """JSON for a JavaScript file or an inline <script>: every `<` written as \\u003c, so no
    string can close the element or open a comment."""
    import orjson

    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode().replace("<", "\\u003c")


def document(title: str, body: str, *, style: str, script: str = "", head: str = "", files: str | None = None) -> str:
    """A whole page. The content security policy forbids every request except, when `files`
    names the report's folder of assets, local files (its images and scripts); inline script
    runs only if it is this page's own (by its hash)."""
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    local = " 'self' file:" if files else ""
    img = "data:" + local
    csp = (f"default-src 'none'; img-src {img}; style-src 'unsafe-inline'; script-src 'sha256-{digest}'{local}; "
           "base-uri 'none'; form-action 'none'")  # fmt: skip
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{esc(title)}</title>'
            f"<style>{style}</style>{head}</head><body>{body}<script>{script}</script></body></html>")  # fmt: skip


# Grey pages keep 8 levels of grey (paper white kept pure): text stays crisp and lossless WebP
# packs it ~30% smaller than lossy WebP at a legible quality.
_GREY_LEVELS = [255 if v >= 224 else (v // 32) * 36 for v in range(256)]


def _is_grey(image: Any) -> bool:
    """Whether a page has (almost) no colour: under 0.5% of a thumbnail's pixels have channels more
    than 48 apart (yellowed paper and anti-aliasing fringes stay under that)."""
    from PIL import ImageChops

    small = image.convert("RGB").reduce(8)  # a box-filtered thumbnail (~1 ms): thin coloured lines still count
    r, g, b = small.split()
    spread = ImageChops.lighter(ImageChops.lighter(ImageChops.difference(r, g), ImageChops.difference(g, b)), ImageChops.difference(r, b))
    hist = spread.histogram()
    return sum(hist[49:]) <= 0.005 * small.width * small.height


def encode_page(image: Any, quality: int = 30) -> bytes:
    """A rendered page as WebP: a grey page posterized to 8 levels and stored losslessly (or lossy,
    when that is smaller: a noisy scan); a colour page lossy at `quality`."""
    buf = io.BytesIO()
    if not _is_grey(image):
        image.convert("RGB").save(buf, format="WEBP", quality=quality, method=2)
        return buf.getvalue()
    grey = image.convert("L")
    grey.point(_GREY_LEVELS).save(buf, format="WEBP", lossless=True, method=2, quality=0)
    if buf.tell() > 64_000:  # noise (a scan, a photo): lossy may be smaller
        lossy = io.BytesIO()
        grey.save(lossy, format="WEBP", quality=quality, method=2)
        if lossy.tell() < buf.tell():
            return lossy.getvalue()
    return buf.getvalue()


def render_page(pdf: str | os.PathLike[str], page: int, longest: int = 1024, *, png: bool = False, quality: int = 30) -> bytes | None:
    """The page as WebP (`encode_page`) or PNG bytes, rendered by pdfium with its longest side
    `longest` px; None when it cannot be rendered."""
    try:
        import pypdfium2 as pdfium

        doc = pdfium.PdfDocument(str(pdf))
        try:
            p = doc[int(page) - 1]
            w, h = p.get_size()
            image = p.render(scale=longest / max(w, h, 1)).to_pil()
        finally:
            doc.close()
        if png:
            buf = io.BytesIO()
            image.save(buf, format="PNG", optimize=True)
            return buf.getvalue()
        return encode_page(image, quality)
    except Exception:  # noqa: BLE001 - an unrenderable page is shown without its image
        return None
