"""Screenshots of the first screen of `olmocr-rl bench --report` for docs/bench.md: a comparison
of the two bundled candidates and a single candidate, on bench_fixtures/, in Debian's headless
chromium (tests/browser.py drives it; `make browser` installs it).

    .venv/bin/python scripts/report_screenshots.py [--out docs/images]

Run by hand when the report's first screen changes; the PNGs are committed (CI does not make them).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WIDTH, HEIGHT = 1100, 760  # a laptop browser window's first screen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "tests"))
    from browser import Page
    from PIL import Image

    from olmocr_rl.cli import main as cli

    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    os.chdir(REPO)  # the report names the bench folder as given: "bench_fixtures"
    shots = {
        "report_compare.png": ["--compare", "-c", "demo_model", "-c", "other_model"],
        "report_single.png": ["-c", "demo_model", "--guard", "short-output+footnote"],
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in shots.items():
            html = Path(tmp) / name.replace(".png", ".html")
            with contextlib.redirect_stdout(io.StringIO()):
                code = cli(["bench", "bench_fixtures", "--report", str(html), *flags])
            if code:
                return code
            with Page(html.as_uri(), width=WIDTH, height=HEIGHT) as page:
                page.set_width(WIDTH, HEIGHT)
                page.wait_for("document.querySelector('#toc li') !== null")
                raw = Path(tmp) / name
                page.screenshot(raw)
            # A 64-colour palette: the page is text on white, so it stays sharp at a fraction of the size.
            image = Image.open(raw).convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
            buf = io.BytesIO()
            image.save(buf, format="PNG", optimize=True)
            (args.out / name).write_bytes(buf.getvalue())
            print(f"{args.out / name}: {len(buf.getvalue()) // 1024} kB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
