"""Live progress on the terminal while a run is going, and the closing summary: the console's
run observer (:class:`conformance.engine.Observer`).

On a TTY a single line is rewritten in place (``\\r``); otherwise (CI logs, pipes) a plain line
is printed at most every ``interval_s`` seconds, so a long run shows it is alive without
flooding the log.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

from conformance.report.console import print_summary
from conformance.vocabulary import StepOutcome

if TYPE_CHECKING:
    from conformance.engine.pipeline import RunResult


class Progress:
    """The progress line on ``stream`` (default stderr; nothing when not ``enabled``); the
    summary and later lines on ``out`` (default stdout, as it is when they are written)."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        interval_s: float = 10.0,
        enabled: bool = True,
        out: TextIO | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.out = out
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval_s = interval_s
        self.enabled = enabled
        self.steps = 0
        self.scenarios = 0
        self.in_flight = 0  # scenarios or machine runs begun and not yet done
        self.divergences = 0
        self.indeterminate = 0
        self.phase = ""
        self._last = 0.0
        self._width = 0
        self._started = time.monotonic()
        self._lock = threading.RLock()  # lanes report from their own threads

    def phase_started(self, phase: str) -> None:
        if self.enabled and not self.tty and self.phase:
            self.stream.write(
                self.line().replace(f"memspec {self.phase}", f"memspec {self.phase} done", 1) + "\n"
            )
        self.phase = phase
        self._emit(force=True)

    def step(self, outcome: StepOutcome) -> None:
        with self._lock:
            self.steps += 1
            if outcome.verdict == "diverge":
                self.divergences += 1
            elif outcome.verdict == "indeterminate":
                self.indeterminate += 1
            self._emit()

    def scenario_started(self) -> None:
        with self._lock:
            self.in_flight += 1

    def scenario_done(self) -> None:
        with self._lock:
            self.scenarios += 1
            self.in_flight = max(0, self.in_flight - 1)
            self._emit()

    def line(self) -> str:
        elapsed = time.monotonic() - self._started
        parts = [
            f"memspec {self.phase}" if self.phase else "memspec",
            f"{self.scenarios} scenarios"
            + (f" ({self.in_flight} in flight)" if self.in_flight > 1 else ""),
            f"{self.steps} steps",
            f"{self.divergences} divergences",
        ]
        if self.indeterminate:
            parts.append(f"{self.indeterminate} indeterminate")
        parts.append(f"{elapsed:.0f}s")
        return " | ".join(parts)

    def _emit(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if self.tty:
            if not force and now - self._last < 0.1:
                return
            text = self.line()
            pad = max(0, self._width - len(text))
            self.stream.write("\r" + text + " " * pad)
            self.stream.flush()
            self._width = len(text)
        else:
            if not force and now - self._last < self.interval_s:
                return
            self.stream.write(self.line() + "\n")
            self.stream.flush()
        self._last = now

    def checks_done(self) -> None:
        if self.enabled and not self.tty and self.phase:
            self.stream.write(
                self.line().replace(f"memspec {self.phase}", f"memspec {self.phase} done", 1) + "\n"
            )
            self.stream.flush()
            self.phase = ""
        if self.enabled and self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()

    def report_written(self, result: RunResult) -> None:
        where = str(result.report_dir) if result.report_dir else None
        print_summary(result.data, self.out or sys.stdout, report_dir=where)

    def say(self, line: str) -> None:
        print(line, file=self.out or sys.stdout)
