"""The hand-written olmocr_rl/_core.pyi must match the compiled extension (mypy stubtest)."""

import subprocess
import sys


def test_core_stub_matches_extension():
    out = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "--ignore-disjoint-bases", "olmocr_rl._core"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
