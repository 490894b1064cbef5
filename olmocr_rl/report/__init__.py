"""Static HTML reports; every string from the data is escaped and the pages make no network
request (a content security policy allows only the report's own files):

* `bench_report(summary, path)`: `olmocr-rl bench --report NAME.html` (NAME.html and NAME_files/);
* `run_report(run_dir, path)`: `olmocr-rl report RUN_DIR`, a training run in one file.
"""

from olmocr_rl.report.bench import bench_report
from olmocr_rl.report.run import run_report

__all__ = ["bench_report", "run_report"]
