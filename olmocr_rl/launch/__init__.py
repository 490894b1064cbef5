"""Starting a command's processes and stopping them all, for any command (nothing here knows about
training; olmocr_rl/train/plan.py decides what `olmocr-rl train` starts):

    launchers.py   accelerate / deepspeed: one argv builder each behind `launcher_argv`, the ranks'
                   environment, the DeepSpeed presets
    gpus.py        CUDA, the visible GPUs, their split between ranks and a server
    server.py      a vLLM server process: started, waited for (/health), stopped
    supervise.py   the launcher (and the server) run, watched and stopped together

Every process is owned as olmocr_rl/procs.py says (signals, orphans, kill -9).
"""
