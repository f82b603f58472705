"""A child process that ends with the process that started it.

A process killed with SIGKILL cannot pass the signal on, so the processes it started keep running,
re-parented, until they finish. For a child that does minutes of work for its parent alone (the
``ner`` stage's recognizer training, :func:`pipelines.stages.ner.train_in_child`) that means CPU spent
on a result nobody collects, and files it keeps writing where the rerun works. :func:`exit_with_parent`
ends such a child within a fraction of a second of its parent's death, on any POSIX system (no
``prctl``). Stdlib only, so a child can start the watch before its heavy imports.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

__all__ = ["exit_with_parent", "ORPHANED_EXIT"]

ORPHANED_EXIT = 3           # the exit status of a child whose parent died


def exit_with_parent(parent: int, scratch: Path | None = None, every: float = 0.5) -> threading.Thread:
    """Watch, in a daemon thread, that the process ``parent`` is still this process's parent (pass
    the parent's pid as the parent knew it, not ``os.getppid()`` read here, which is already wrong
    when the parent died during start-up); once it is gone, remove ``scratch`` (the job folder that
    the parent would have removed) and exit at once with :data:`ORPHANED_EXIT`."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        os._exit(ORPHANED_EXIT)

    thread = threading.Thread(target=watch, name="exit-with-parent", daemon=True)
    thread.start()
    return thread
