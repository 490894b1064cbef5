#!/usr/bin/env python3
"""Writes the small PDFs under bench_fixtures/pdfs/ (pure Python, no dependencies).

Each PDF holds a few lines of Helvetica text per page; the benchmark only needs their page
counts (olmOCR-bench checks that every page has a test), but the text mirrors the candidate
outputs so the fixture reads sensibly. Run from anywhere; the output is deterministic:

    python bench_fixtures/make_pdfs.py
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

DOCS: dict[str, list[list[str]]] = {
    "sample_paper.pdf": [
        [
            "Sparse Attention for Long Documents",
            "Abstract. We study sparse attention patterns for transformers that read",
            "long scanned documents.",
            "1 Introduction",
            "Document OCR models must read pages with tables, equations and footnotes.",
        ],
    ],
    "reports/annual_report.pdf": [
        [
            "Annual Report 2024",
            "Revenue grew by twelve percent over the previous year.",
            "Chairman's Letter",
        ],
        [
            "Outlook",
            "We expect steady demand in the coming year.",
            "Page 2",
        ],
    ],
    "letter.pdf": [
        [
            "Dear Committee Members,",
            "Thank you for the invitation to review the proposal.",
            "Sincerely, Ada",
        ],
    ],
}


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[list[str]]) -> bytes:
    """A minimal valid PDF 1.4: catalog, page tree, one content stream per page, a shared font,
    and an exact cross-reference table."""
    n = len(pages)
    # Object numbers: 1 catalog, 2 pages, 3 font, then (page, content) pairs.
    objects: list[bytes] = []
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, lines in enumerate(pages):
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            ops.append(f"({_escape(line)}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for num, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % num + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n" % (len(objects) + 1)
    out += b"0000000000 65535 f \n"
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def main() -> None:
    for key, pages in DOCS.items():
        path = HERE / "pdfs" / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(make_pdf(pages))
        print(f"wrote {path.relative_to(HERE)} ({len(pages)} page{'s' if len(pages) > 1 else ''})")


if __name__ == "__main__":
    main()
