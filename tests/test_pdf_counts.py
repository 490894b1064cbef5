"""Page counts read by the core (`_core.pdf_page_counts`) are pypdf's `len(reader.pages)`, the
reference's count, on PDFs of many shapes; on damaged files the core either declines (None, then
`olmocr-rl bench` asks pypdf) or gives pypdf's number, never another."""

from __future__ import annotations

import logging
import random
import warnings

import pytest
from pdf_samples import samples, via_pypdf
from pypdf import PdfReader

from olmocr_rl import _core


def pypdf_count(path) -> object:
    try:
        return len(PdfReader(path).pages)
    except Exception as e:
        return type(e)


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> list:
    d = tmp_path_factory.mktemp("pdfs")
    paths = []
    for name, data in samples(0).items():
        for tag, b in (
            ("", data),
            ("w", via_pypdf(data)),
            ("i", via_pypdf(data, incremental=True)),
            ("wi", via_pypdf(via_pypdf(data), incremental=True)),
        ):
            p = d / f"{name}{tag}.pdf"
            p.write_bytes(b)
            paths.append(p)
    return paths


def test_clean_pdfs_are_counted_as_pypdf_counts_them(clean):
    got = _core.pdf_page_counts(clean, threads=2)
    assert got == [pypdf_count(p) for p in clean]  # all answered, wrong /Count entries included
    assert any("xs_os" in p.name for p in clean) and len(set(got)) > 2


def test_damaged_pdfs_give_pypdfs_count_or_none(clean, tmp_path):
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    rng = random.Random(0)
    bases = [p.read_bytes() for p in clean]
    paths = []
    for k in range(400):
        b = bytearray(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.choice([rng.randrange(256), *b" 0R/><\n"])
        p = tmp_path / f"m{k}.pdf"
        p.write_bytes(bytes(b))
        paths.append(p)
    got = _core.pdf_page_counts(paths)
    logging.disable(logging.NOTSET)
    wrong = [(p.name, g, pypdf_count(p)) for p, g in zip(paths, got) if g is not None and g != pypdf_count(p)]
    assert not wrong
    assert 10 < sum(g is not None for g in got) < len(paths)  # both paths exercised


def test_unreadable_paths_and_non_pdfs_are_declined(tmp_path):
    (tmp_path / "x.pdf").write_bytes(b"not a pdf")
    assert _core.pdf_page_counts([tmp_path / "x.pdf", tmp_path / "missing.pdf", tmp_path]) == [None, None, None]
