"""One memory budget for a run: at most one *large* answer parsed and judged at a time, in the
whole run (the harness and its worker processes).

A target may answer every call with 4 MiB (the client's bound) of tiny JSON values: a million
``{}`` parse to about 75 MB of Python objects.  The judge needs the whole parsed answer while
it judges, so that cannot be avoided for one answer; what must not happen is ten
lanes in three processes holding one each at the same time (more than 1 GB).  So an answer
whose parsed size is estimated above :data:`LARGE_COST` takes the run's *answer gate* before
it is parsed, and holds it as long as its :class:`~conformance.vocabulary.Exchange` (with the
parsed body) lives -- a step keeps only a bounded part of an answer once judged
(:meth:`Exchange.kept`), so the gate is let go when the step is over.

The gate is an exclusive ``flock`` on one file per run (its path in the environment variable
:data:`ENV`, set by the first process and inherited by the worker processes), so it holds
across processes and across the threads of one (each take opens the file anew).  A thread that
already holds it takes it again at once (one lane's two answers of one step never wait for
each other), and nobody waits longer than :data:`WAIT_S`: past that the answer is parsed
anyway (a bound on memory never turns into a hang).  Small answers never touch the gate.
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import os
import tempfile
import threading
import time
import weakref
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no gate
    fcntl = None  # type: ignore[assignment]

#: The environment variable naming the run's gate file.
ENV = "MEMSPEC_ANSWER_GATE"
#: An answer estimated to cost more than this once parsed takes the gate (bytes).
LARGE_COST = 16 * 1024 * 1024
#: About what one parsed JSON value costs (a small dict, a short string, a list slot).
VALUE_COST = 100
#: The longest wait for the gate; then the answer is parsed anyway.
WAIT_S = 60.0

_local = threading.local()


def _libc() -> Any:
    try:
        name = ctypes.util.find_library("c")
        lib = ctypes.CDLL(name) if name else None
        if lib is not None and hasattr(lib, "malloc_trim") and hasattr(lib, "mallopt"):
            return lib
    except OSError:  # pragma: no cover - no C library to speak to
        pass
    return None


#: glibc, where there is one: a large answer's buffers are given back to the system once the
#: answer is let go (``malloc_trim``), and buffers of 256 KiB and more are always mapped on
#: their own (``M_MMAP_THRESHOLD``; glibc otherwise raises that threshold after the first large
#: buffer is freed and keeps later ones in its heap, which a lane thread's arena never gives
#: back): a process that judged one 4 MiB answer does not stay that large for the rest of the
#: run.
_LIBC = _libc()
_M_MMAP_THRESHOLD = -3
if _LIBC is not None:
    _LIBC.mallopt(_M_MMAP_THRESHOLD, 256 * 1024)


def _give_back() -> None:
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def estimated_cost(decoded: bytes) -> int:
    """What parsing ``decoded`` is likely to cost: its values (commas, brackets) and its text."""
    values = 1 + decoded.count(b",") + decoded.count(b"[") + decoded.count(b"{")
    return values * VALUE_COST + 3 * len(decoded)


def _gate_path() -> str:
    path = os.environ.get(ENV)
    if not path:
        fd, path = tempfile.mkstemp(prefix="memspec-answers-", suffix=".lock")
        os.close(fd)
        os.environ[ENV] = path  # the worker processes started from here inherit it
        atexit.register(_remove, path, os.getpid())
    return path


def _remove(path: str, owner: int) -> None:
    if os.getpid() == owner:
        try:
            os.unlink(path)
        except OSError:
            pass


class Hold:
    """This thread's hold of the gate: the open file and how many live answers need it."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd
        self.count = 0
        self.lock = threading.Lock()

    def release_one(self) -> None:
        with self.lock:
            self.count -= 1
            if self.count > 0 or self.fd is None:
                return
            fd, self.fd = self.fd, None
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
        if getattr(_local, "hold", None) is self:
            _local.hold = None
        _give_back()


def take(cost: int) -> Hold | None:
    """Take the gate for an answer of ``cost`` (None: a small answer, no gate needed).  Tie
    the result to the answer's exchange with :func:`tie`."""
    if cost <= LARGE_COST or fcntl is None:
        return None
    hold: Hold | None = getattr(_local, "hold", None)
    if hold is not None and hold.fd is not None:
        with hold.lock:
            hold.count += 1
        return hold
    try:
        fd = os.open(_gate_path(), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                break  # parsed anyway: a memory bound never becomes a hang
            time.sleep(0.01)
        except OSError:
            break
    hold = Hold(fd)
    hold.count = 1
    _local.hold = hold
    return hold


def tie(hold: Hold | None, owner: Any) -> None:
    """Let the gate go when ``owner`` (the exchange holding the parsed answer) is gone."""
    if hold is not None:
        weakref.finalize(owner, hold.release_one)


# Named now, before any worker process starts, so that every process of the run shares it.
_gate_path()
