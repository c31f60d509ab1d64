"""The request watchdog ends a request at its deadline however it was armed before: it sleeps
through request after request (arming wakes it only for an earlier deadline, disarming never
does), so these check the cases that sleeping must not break."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from conformance.targets.base import _Watchdog


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def _ended_after(sock: socket.socket) -> float:
    """Seconds until a read blocked on ``sock`` is ended (the watchdog shuts it down); at most
    5 s, the socket's own timeout (the peer never writes)."""
    sock.settimeout(5)
    started = time.monotonic()
    try:
        data = sock.recv(1)
    except TimeoutError:
        return 5.0
    assert data == b""
    return time.monotonic() - started


@pytest.mark.clause()
def test_a_request_after_others_that_answered_ends_at_its_deadline(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    wd = _Watchdog()
    try:
        for _ in range(3):  # requests answered in time: armed, then disarmed
            wd.arm(pair[0], time.monotonic() + 0.05)
            wd.disarm()
        time.sleep(0.1)  # the thread woke at the last deadline, found nothing armed, went idle
        wd.arm(pair[0], time.monotonic() + 0.1)
        assert _ended_after(pair[0]) < 2
        assert wd.fired
    finally:
        wd.close()


@pytest.mark.clause()
def test_a_later_deadline_armed_while_the_thread_sleeps_is_kept(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    wd = _Watchdog()
    try:
        wd.arm(pair[0], time.monotonic() + 0.15)
        time.sleep(0.05)  # the thread sleeps until that first deadline
        wd.disarm()
        wd.arm(pair[0], time.monotonic() + 0.45)
        waited = _ended_after(pair[0])
        assert 0.3 < waited < 2  # at the second deadline, not the first, and not never
        assert wd.fired
    finally:
        wd.close()


@pytest.mark.clause()
def test_an_earlier_deadline_wakes_a_thread_sleeping_until_a_later_one(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    wd = _Watchdog()
    try:
        wd.arm(pair[0], time.monotonic() + 30)  # a long deadline the thread sleeps until
        time.sleep(0.05)
        wd.disarm()
        wd.arm(pair[0], time.monotonic() + 0.1)
        assert _ended_after(pair[0]) < 2
        assert wd.fired
    finally:
        wd.close()
