"""The one place PDFs of a bench folder are opened, by the two readers the project uses:

* `page_counts`: each PDF's pages as the reference runner counts them (`len(pypdf.PdfReader(path)
  .pages)`), by the core's own reader (`_core.pdf_page_counts`, the same number without importing
  pypdf) and pypdf for the files it declines; what `bench` checks page coverage with;
* `open_document`: a pypdfium2 document, what `prepare` renders the pages with.

`validate` asks both of every PDF its tests name.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any


class PdfUnreadable(ValueError):
    """A PDF a reader cannot open; the message is the reader's error (`Type: message`)."""


def _pypdf_page_count(path: str | os.PathLike[str]) -> int:
    import logging

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    return len(PdfReader(path).pages)


def page_counts(paths: Sequence[str | os.PathLike[str]]) -> list[int | PdfUnreadable]:
    """Each PDF's page count as the reference counts it (the leaves of the page tree), or the
    PdfUnreadable that says why it cannot be read."""
    import olmocr_rl._core as _core

    out: list[int | PdfUnreadable] = []
    for path, n in zip(paths, _core.pdf_page_counts([os.fspath(p) for p in paths])):
        if n is None:
            try:
                n = _pypdf_page_count(path)
            except Exception as e:  # noqa: BLE001 - pypdf raises many types on a corrupt file
                n = PdfUnreadable(f"{type(e).__name__}: {e}")
        out.append(n)
    return out


def open_document(path: str | os.PathLike[str]) -> Any:
    """The PDF as a pypdfium2 document (close it when done); PdfUnreadable when pdfium cannot open it."""
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(os.fspath(path))
    except (pdfium.PdfiumError, OSError, ValueError) as e:
        raise PdfUnreadable(f"{type(e).__name__}: {e}") from None
