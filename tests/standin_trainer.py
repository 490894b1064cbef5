"""A stand-in for the training launcher in the orchestration tests: records its environment and
pid to $TRAINER_RECORD, asks the server's /health (URL: argv[1]) like trl's client does first,
then per $TRAINER_MODE exits 0 (ok), exits 5 (fail) or waits to be stopped (hang)."""

import json
import os
import subprocess
import sys
import time
import urllib.request

with urllib.request.urlopen(sys.argv[1] + "/health", timeout=5) as r:
    status = r.status
mode = os.environ.get("TRAINER_MODE", "ok")
ranks = []
if mode == "hang-ranks":
    # As torchrun starts ranks: each in a session of its own, out of reach of a signal to the
    # launcher's process group; this one also ignores SIGTERM.
    rank = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"
    ranks = [subprocess.Popen([sys.executable, "-c", rank], start_new_session=True).pid]
record = {
    "pid": os.getpid(),
    "health": status,
    "env": {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES")},
    "argv": sys.argv[1:],
    "ranks": ranks,
}
# Whole or not at all: the tests wait for the file to exist, then read it.
with open(os.environ["TRAINER_RECORD"] + ".tmp", "w") as f:
    json.dump(record, f)
os.replace(os.environ["TRAINER_RECORD"] + ".tmp", os.environ["TRAINER_RECORD"])
if mode == "fail":
    sys.exit(5)
if mode in ("hang", "hang-ranks"):
    while True:
        time.sleep(3600)
