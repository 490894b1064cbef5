"""`python -m olmocr_rl.train ARGS` = `olmocr-rl train ARGS`, for launchers that start a module on
every rank: `deepspeed --num_gpus 8 -m olmocr_rl.train PREPARED --model M -o OUT --zero 2` (the
`--local_rank=N` the launcher adds is accepted), or `torchrun --nproc-per-node 8 -m olmocr_rl.train ...`."""

import sys

from olmocr_rl.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
