#!/usr/bin/env python3
"""Golden outputs of olmOCR's synthetic-data pipeline on our own HTML pages, for tests/test_synth.py.

For every page of tests/fixtures/synth/html/ and a few seeds, this runs the reference's own functions
(allenai/olmocr @ f7cfe4c, `olmocr/synth/mine_html_templates.py`):

* `generate_tests_from_html(html, pdf_id, 1, random.Random(seed))`: the unit tests, in order;
* `html_to_markdown_with_frontmatter(html)`: the reference markdown;
* `render_pdf_with_playwright(html, out.pdf, 791, 1024)` (a US Letter page at 1024 px, as upstream
  renders the original page): whether it renders, at which scale, and whether its cutoff detection
  drops the page (with the elements it flags).

The only change to the reference's run: `uuid.uuid4` in that module is replaced by a counter
(00000000, 00000001, ... per page), so the test ids are reproducible; olmocr-rl names its tests that
way (docs/preparing.md). The seeds are ours: sha1 of the page's bytes (the rule `olmocr-rl synth`
uses for an HTML page, as upstream seeds with the PDF's sha1), then 1 and 2.

Dev machines only, not CI: the reference needs its tree, PyPI packages and Debian's chromium.

    git -C <allenai/olmocr clone> archive f7cfe4c | tar -x -C /work/ref-olmocr
    python3 -m venv /work/ref-venv && /work/ref-venv/bin/pip install beautifulsoup4==4.15.0 \
        markdownify==1.2.3 syntok==1.4.4 wordfreq==3.1.1 rapidfuzz==3.14.6 fuzzysearch==0.8.1 \
        lxml tqdm numpy pypdf pypdfium2 pillow playwright==1.65.2
    PYTHONHASHSEED=0 /work/ref-venv/bin/python tests/golden/gen_synth_cases.py --ref-tree /work/ref-olmocr
        # -> tests/golden/synth_cases.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import shutil
import sys
import tempfile
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "synth" / "html"
VIEWPORT = (791, 1024)  # US Letter, longest side 1024 px


def stub_modules() -> None:
    """Modules the reference imports at the top of mine_html_templates.py but that these functions
    never call: the Anthropic client and the language filter."""
    anthropic = types.ModuleType("anthropic")
    anthropic.AsyncAnthropic = object
    sys.modules["anthropic"] = anthropic
    lingua = types.ModuleType("lingua")
    lingua.Language = type("Language", (), {"ENGLISH": "en"})
    lingua.LanguageDetectorBuilder = object
    sys.modules["lingua"] = lingua


def point_playwright_at_chromium() -> None:
    """Playwright cannot download its browser here: Debian's chromium instead."""
    from playwright.async_api._generated import BrowserType

    launch = BrowserType.launch

    async def patched(self, *a, **kw):
        kw.setdefault("executable_path", shutil.which("chromium"))
        kw.setdefault("args", ["--no-sandbox", "--disable-gpu"])
        return await launch(self, *a, **kw)

    BrowserType.launch = patched


class CounterUuid:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self):
        value = types.SimpleNamespace(hex=f"{self.n:08x}" + "0" * 24)
        self.n += 1
        return value


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref-tree", required=True)
    ap.add_argument("--out", default=str(HERE / "synth_cases.jsonl"))
    ap.add_argument("--no-render", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, args.ref_tree)
    version_py = Path(args.ref_tree) / "olmocr" / "version.py"
    if not version_py.exists():
        version_py.write_text('VERSION = "reference"\nVERSION_SHORT = "reference"\n')
    stub_modules()
    point_playwright_at_chromium()
    from olmocr.synth import mine_html_templates as ref

    lines = []
    tmp = Path(tempfile.mkdtemp())
    for path in sorted(FIXTURES.glob("*.html")):
        html = path.read_text(encoding="utf-8")
        pdf_id = path.stem
        content_seed = int(hashlib.sha1(path.read_bytes()).hexdigest()[:8], 16)
        case = {"page": path.name, "pdf_id": pdf_id, "markdown": ref.html_to_markdown_with_frontmatter(html)}
        runs = []
        for seed in (content_seed, 1, 2):
            ref.uuid.uuid4 = CounterUuid()
            try:
                tests = ref.generate_tests_from_html(html, pdf_id, 1, random.Random(seed))
                runs.append({"seed": seed, "tests": tests})
            except Exception as e:  # the reference raises on this page
                runs.append({"seed": seed, "raises": f"{type(e).__name__}: {e}"})
        case["runs"] = runs
        if not args.no_render:
            result = asyncio.run(ref.render_pdf_with_playwright(html, str(tmp / "out.pdf"), *VIEWPORT))
            case["render"] = {
                "viewport": list(VIEWPORT),
                "success": result.success,
                "scale": result.scale_used,
                "cutoff": result.has_cutoff,
                "flagged": [
                    {"tag": e.tag, "text": e.text, "occluded": e.is_occluded, "hvis": round(e.horizontal_visible_ratio, 3)}
                    for e in result.cutoff_elements
                ],
            }
        lines.append(json.dumps(case, ensure_ascii=False))
        print(path.name, [len(r.get("tests", [])) for r in runs], case.get("render", {}).get("scale"), file=sys.stderr)
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
