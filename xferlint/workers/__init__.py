"""Worker processes for entry points (user code): `check_paths`, `fix_input`.

    pool.py    fork one child per task from a warm parent, `jobs` at a time, deadlines,
               crashes and exits as one-line failures, children's output in task order
    check.py   the check and fix pipelines with Python entry points in workers
    files.py   a plain check's program files spread over `jobs` workers
    payloads.py  what a worker sends back (imported only where workers run)

This package sits above the pipeline and the fixes (it runs both in its children); the
CLI calls it, nothing below imports it.
"""

from xferlint.workers.check import FixOptions, check_paths, default_jobs, fix_input
from xferlint.workers.files import SettleOptions

__all__ = ["FixOptions", "SettleOptions", "check_paths", "default_jobs", "fix_input"]
