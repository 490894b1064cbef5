#!/usr/bin/env python3
"""Runs the upstream olmOCR-bench runner (`olmocr.bench.benchmark`) on a bench folder, for
making golden data. Dev machines only; CI never runs the reference.

    python run_reference_bench.py OLMOCR_TREE -- --dir BENCH_DIR [benchmark flags...]

OLMOCR_TREE is an extracted upstream checkout (commit f7cfe4c) whose bench dependencies are
installed (rapidfuzz, fuzzysearch, beautifulsoup4, lxml, playwright, tqdm, numpy, pypdf).
`olmocr.bench.report` (HTML reports only) imports Pillow and the PDF renderer; it is replaced by
a stub so those are not needed. A missing generated `olmocr/version.py` is written as a stub.
"""

import os
import sys
import types

tree = os.path.abspath(sys.argv[1])
args = sys.argv[2:]
if args and args[0] == "--":
    args = args[1:]
sys.path.insert(0, tree)
version_py = os.path.join(tree, "olmocr", "version.py")
if not os.path.exists(version_py):
    with open(version_py, "w") as f:
        f.write('VERSION = "reference"\nVERSION_SHORT = "reference"\n')

report = types.ModuleType("olmocr.bench.report")
report.generate_html_report = lambda *a, **k: None  # only used with --test_report
sys.modules["olmocr.bench.report"] = report

from olmocr.bench import benchmark

sys.argv = ["olmocr.bench.benchmark", *args]
benchmark.main()
