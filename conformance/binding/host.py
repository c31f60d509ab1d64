"""Driving an engine through its host process: JSON lines on stdin/stdout (engine-binding.md).

The host is a child process in a session of its own.  Every call writes one line
``{"fn": NAME, "args": {...}}`` and reads one line back under a deadline and a size bound.
What can go wrong is data, never an exception: :class:`Answer` says whether the host answered
(``ok`` / ``error``), did not know the function (``unknown``), or failed as a process
(``hang``, ``flood``, ``crash``, ``garbage``).  A host that fails so is killed (its whole
process group) and started again for the next call; after :data:`MAX_RESTARTS` failures in a
row, or once the run's time budget (:data:`RUN_BUDGET_S`) is spent, every further call is
answered ``dead`` at once, without starting it again.  ``close()`` kills whatever is left,
so nothing outlives the run.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Literal

from conformance.errors import UsageError

JSON = Any
AnswerKind = Literal["ok", "error", "unknown", "hang", "flood", "crash", "garbage", "dead"]

CALL_TIMEOUT_S = 5.0
MAX_LINE_BYTES = 4 * 1024 * 1024
MAX_RESTARTS = 3
RUN_BUDGET_S = 1800.0
#: Added to the first call's deadline after a start: the host's own start-up (an interpreter,
#: its imports) is not an answer that is late.
STARTUP_GRACE_S = 15.0
STDERR_KEEP = 4096


@dataclass(frozen=True)
class Answer:
    kind: AnswerKind
    value: JSON = None
    detail: str = ""

    @property
    def failed_process(self) -> bool:
        return self.kind in ("hang", "flood", "crash", "garbage", "dead")


def _decode_line(line: bytes) -> Answer:
    try:
        msg = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return Answer("garbage", detail=f"not a JSON line: {line[:120]!r}")
    if not isinstance(msg, dict) or len(msg) != 1 or not ({"ok", "error"} & msg.keys()):
        return Answer("garbage", detail=f"neither {{ok}} nor {{error}}: {line[:120]!r}")
    if "ok" in msg:
        return Answer("ok", msg["ok"])
    err = msg["error"]
    if err == "unknown function":
        return Answer("unknown")
    return Answer("error", err, detail=str(err)[:200])


class EngineHost:
    """One engine host process, restarted after a process failure (see the module doc)."""

    def __init__(
        self,
        command: str,
        *,
        timeout_s: float = CALL_TIMEOUT_S,
        max_line: int = MAX_LINE_BYTES,
        max_restarts: int = MAX_RESTARTS,
        budget_s: float = RUN_BUDGET_S,
        startup_grace_s: float = STARTUP_GRACE_S,
    ) -> None:
        try:
            self.argv = shlex.split(command)
        except ValueError as exc:
            raise UsageError(f"--host: {exc}") from exc
        if not self.argv:
            raise UsageError("--host: empty command")
        self.timeout_s = timeout_s
        self.max_line = max_line
        self.startup_grace_s = startup_grace_s
        self.max_restarts = max_restarts
        self.restarts_left = max_restarts
        self.give_up_at = time.monotonic() + budget_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.buffer = b""
        self.starts = 0
        self.calls = 0
        self.failures: list[str] = []
        self.fresh = False

    # -- process -------------------------------------------------------------------------

    def _start(self) -> None:
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise UsageError(
                f"--host: cannot start {self.argv[0]!r}: {exc.strerror or exc}"
            ) from exc
        self.buffer = b""
        self.starts += 1
        self.fresh = True

    def _kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not refused
            pass

    def close(self) -> None:
        self._kill()

    def __enter__(self) -> EngineHost:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- one call ------------------------------------------------------------------------

    def call(self, fn: str, args: JSON) -> Answer:
        """Send one call and read its answer (never raises for anything the host does)."""
        if time.monotonic() > self.give_up_at:
            self._kill()
            return Answer("dead", detail="the run's time budget for the host is spent")
        if self.proc is None:
            if self.starts > 0 and self.restarts_left <= 0:
                return Answer("dead", detail="the host failed too often; not started again")
            if self.starts > 0:
                self.restarts_left -= 1
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        self.calls += 1
        stray = self._stray()
        if stray is not None:
            return self._failed(stray)
        line = json.dumps({"fn": fn, "args": args}, ensure_ascii=True, allow_nan=False) + "\n"
        try:
            self.proc.stdin.write(line.encode("ascii"))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return self._failed(Answer("crash", detail="the host closed its stdin"))
        answer = self._read_line()
        if answer.failed_process:
            return self._failed(answer)
        self.restarts_left = self.max_restarts  # only failures in a row use the restarts up
        return answer

    def _failed(self, answer: Answer) -> Answer:
        self.failures.append(f"{answer.kind}: {answer.detail}")
        self._kill()
        return answer

    def _stray(self) -> Answer | None:
        """Bytes the host wrote while no call was open: the lines are out of step."""
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        if self.buffer:
            return Answer("garbage", detail="output while no call was open")
        ready, _, _ = select.select([proc.stdout.fileno()], [], [], 0)
        if not ready:
            return None
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            return Answer("crash", detail=f"the host exited (status {proc.poll()})")
        return Answer("garbage", detail=f"output while no call was open: {chunk[:80]!r}")

    def _read_line(self) -> Answer:
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        grace = self.startup_grace_s if self.fresh else 0.0
        self.fresh = False
        deadline = time.monotonic() + self.timeout_s + grace
        while True:
            nl = self.buffer.find(b"\n")
            if nl >= 0:
                line, self.buffer = self.buffer[:nl], self.buffer[nl + 1 :]
                if self.buffer.strip():
                    return Answer("garbage", detail="more than one line for one call")
                return _decode_line(line)
            if len(self.buffer) > self.max_line:
                return Answer("flood", detail=f"an answer longer than {self.max_line} bytes")
            left = deadline - time.monotonic()
            if left <= 0:
                return Answer("hang", detail=f"no answer within {self.timeout_s:g} s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                code = proc.poll()
                return Answer("crash", detail=f"the host exited (status {code})")
            self.buffer += chunk
