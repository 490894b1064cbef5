"""`python -m olmocr_rl.cli`: the `olmocr-rl` command."""

from olmocr_rl.cli import console_main

console_main()
