#!/usr/bin/env python3
"""size-peak.py DB STOPFILE DEADLINE_S - the peak size of a SQLite store
(DB plus DB-wal) while it is written, for tests/store/*.sh.

The folder of DB is watched with inotify: every write, creation, rename
or truncation of a file there wakes the watcher, which then reads both
sizes (a burst of events is drained first, so a busy writer costs one
pair of stat calls per wake-up, not one per write).  Without inotify, and
between events, it reads them every 10 ms.  It stops once STOPFILE
exists, printing one line:

    PEAK <db+wal bytes> DB <db bytes> WAL <wal bytes> DBMAX <bytes> WALMAX <bytes> SAMPLES <n>

(DB and WAL: the two sizes at the peak of their sum; DBMAX and WALMAX:
each file's own peak) and exits 0; exits 2 with the same line if
DEADLINE_S seconds pass first.  A size read between a file's growth and
its truncation can be missed, so the peak is a lower bound of the true
one, never above it.
"""
import ctypes
import ctypes.util
import os
import select
import sys
import time

IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE = 0x2, 0x8, 0x80, 0x100


def size(path):
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def inotify_fd(folder):
    """A non-blocking inotify fd watching folder, or None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            return None
        mask = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE
        if libc.inotify_add_watch(fd, os.fsencode(folder), mask) < 0:
            os.close(fd)
            return None
        return fd
    except (OSError, AttributeError):
        return None


def main():
    if len(sys.argv) != 4:
        sys.stderr.write(__doc__)
        return 64
    db, stop, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
    wal = db + "-wal"
    deadline = time.monotonic() + limit
    fd = inotify_fd(os.path.dirname(os.path.abspath(db)))
    peak = (0, 0, 0)
    dbmax = walmax = samples = 0
    while True:
        d, w = size(db), size(wal)
        samples += 1
        if d + w > peak[0]:
            peak = (d + w, d, w)
        dbmax, walmax = max(dbmax, d), max(walmax, w)
        if os.path.exists(stop):
            rc = 0
            break
        if time.monotonic() > deadline:
            rc = 2
            break
        if fd is None:
            time.sleep(0.01)
            continue
        if select.select([fd], [], [], 0.01)[0]:
            try:
                while os.read(fd, 65536):
                    pass
            except BlockingIOError:
                pass
    print("PEAK %d DB %d WAL %d DBMAX %d WALMAX %d SAMPLES %d" % (peak + (dbmax, walmax, samples)), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
