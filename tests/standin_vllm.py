"""A stand-in for `vllm serve` in the orchestration tests (`vllm_server_command=python THIS`).

It receives what the real server would (`MODEL --host H --port P ...`), records its arguments,
the environment variables the orchestrator sets, its pid and the pid of a worker child it starts
(as vLLM's engine processes are) to $STANDIN_RECORD, and serves GET /health on H:P. $STANDIN_MODE:
  ok     healthy after $STANDIN_DELAY seconds (default 0.5), until stopped
  never  listens but answers 503 forever
  die    healthy, then exits with status 3 after $STANDIN_DIE_AFTER seconds
  crash  prints an error and exits with status 2 at once
"""

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

args = sys.argv[1:]
host = args[args.index("--host") + 1]
port = int(args[args.index("--port") + 1])
mode = os.environ.get("STANDIN_MODE", "ok")
print(f"stand-in vllm serve {args[0]} on {host}:{port} ({mode})", flush=True)
if mode == "crash":
    print("RuntimeError: CUDA error: no kernel image is available for execution on the device", flush=True)
    sys.exit(2)

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
record = {
    "argv": args,
    "env": {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "VLLM_SERVER_DEV_MODE")},
    "pid": os.getpid(),
    "child_pid": child.pid,
}
with open(os.environ["STANDIN_RECORD"], "w") as f:
    json.dump(record, f)

ready_at = time.monotonic() + float(os.environ.get("STANDIN_DELAY", "0.5"))


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        ok = mode != "never" and time.monotonic() >= ready_at and self.path == "/health"
        self.send_response(200 if ok else 503)
        self.end_headers()

    def log_message(self, *a):
        pass


server = ThreadingHTTPServer((host, port), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
print("INFO:     Application startup complete.", flush=True)
if mode == "die":
    time.sleep(float(os.environ.get("STANDIN_DIE_AFTER", "2")))
    print("engine core died unexpectedly", flush=True)
    os._exit(3)
while True:
    time.sleep(3600)
