"""A stand-in for the training launcher in the orchestration tests: records its environment and
pid to $TRAINER_RECORD, asks the server's /health (URL: argv[1]) like trl's client does first,
then per $TRAINER_MODE exits 0 (ok), exits 5 (fail) or waits to be stopped (hang)."""

import json
import os
import sys
import time
import urllib.request

with urllib.request.urlopen(sys.argv[1] + "/health", timeout=5) as r:
    status = r.status
record = {
    "pid": os.getpid(),
    "health": status,
    "env": {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES")},
    "argv": sys.argv[1:],
}
with open(os.environ["TRAINER_RECORD"], "w") as f:
    json.dump(record, f)
mode = os.environ.get("TRAINER_MODE", "ok")
if mode == "fail":
    sys.exit(5)
if mode == "hang":
    while True:
        time.sleep(3600)
