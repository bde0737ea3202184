"""Worker processes that end with their parent (issue 26).

``privdist run --jobs N`` and ``privdist audit --jobs N`` spread their work over a process pool. When the parent is
killed outright (``kill -9``, the OOM killer, a closed terminal's SIGHUP) it cannot shut its pool down, and a
worker blocked in a trial would run on, holding memory and CPU and writing nothing anyone reads. Each worker
therefore starts a watchdog thread (:func:`worker_initializer`) that checks every
:data:`WATCHDOG_SECONDS` whether its parent process is still the one that started it (``os.getppid()`` changes when
the parent dies: the worker is re-parented to init or a subreaper) and ends the worker at once if not. A thread
rather than Linux's ``PR_SET_PDEATHSIG``: that signal fires when the parent *thread* that forked the worker ends,
which for a pool may be a helper thread, and it does not exist on macOS.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

__all__ = ["worker_initializer", "WATCHDOG_SECONDS", "WATCHDOG_OS_NAME"]

#: Seconds between two checks of the parent (a worker outlives a killed parent by at most about this long).
WATCHDOG_SECONDS = 0.5

#: The watchdog thread's name for the operating system (Linux: ``/proc/PID/task/TID/comm``, ``top -H``; at most 15
#: bytes), so that one can see that a worker watches its parent.
WATCHDOG_OS_NAME = "privdist-watch"


def worker_initializer(ignore_sigint: bool = True) -> None:
    """Initializer of a pool worker: watch the parent (ending this process when it is gone) and, with
    ``ignore_sigint``, leave Ctrl-C to the parent (which cancels the pool; no traceback per worker)."""
    if ignore_sigint:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    threading.Thread(target=_watch, args=(parent,), name="privdist-parent-watchdog", daemon=True).start()


def _watch(parent: int) -> None:
    _name_os_thread(WATCHDOG_OS_NAME)
    while True:
        time.sleep(WATCHDOG_SECONDS)
        if os.getppid() != parent:
            os._exit(1)  # the parent is gone: nobody reads this worker's results


def _name_os_thread(name: str) -> None:
    """Give the calling thread ``name`` at the OS level (Linux ``prctl(PR_SET_NAME)``); nothing elsewhere."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass
