"""User mistakes and unkind terminals (issue 23): one line and exit 2, never "internal error".

Each case runs ``memspec run`` in its own interpreter against a real target on loopback (a
hostile server answering every data route 500, in front of a bundled store): an out-of-range
``--timeout``, malformed URLs, token files that are a directory, a FIFO nobody writes to, a
device or too large (read with a bound and a deadline: the run ends at once and its memory
does not grow), a stdout whose reader went away (``| head``: the run ends quietly with its
own exit code), and a terminal that cannot encode ``✗``/``✓`` (ASCII marks).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile_server import HostileServer

from conformance.cli import main
from conformance.commands.target import start_bundled_store

TOKEN = "Mk7/usr-Mistake-Tok9"

#: Writes the run's exit code and peak RSS (VmHWM, KiB) on the pipe named by MUT_FD after the
#: CLI returns.
RUNNER = """
import os, sys
from conformance.cli import main
code = main(sys.argv[1:])
hwm = [l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM")][0]
os.write(int(os.environ["MUT_FD"]), f"{code} {hwm}".encode())
sys.exit(code)
"""


@pytest.fixture(scope="module")
def target() -> Iterator[str]:
    store = start_bundled_store(TOKEN)
    srv = HostileServer("500s", int(store.url.rsplit(":", 1)[1]), TOKEN)
    try:
        yield srv.url
    finally:
        srv.stop()
        store.stop()


def memspec(
    args: list[str], *, env: dict[str, str] | None = None, close_stdout: bool = False
) -> dict[str, Any]:
    """Run the CLI in a fresh interpreter; its exit code, peak RSS (MB), stdout and stderr."""
    r, w = os.pipe()
    full_env = {**os.environ, "MUT_TOKEN": TOKEN, "MUT_FD": str(w), **(env or {})}
    full_env.pop("MEMSPEC_DEBUG", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", RUNNER, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full_env,
        pass_fds=(w,),
    )
    os.close(w)
    try:
        if close_stdout:
            assert proc.stdout is not None
            proc.stdout.close()  # the reader goes away before a byte is read (`| head -c 0`)
            _, err = proc.communicate(timeout=120)
            out = b""
        else:
            out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()  # a run that hangs (a FIFO read whole) fails the test, and ends
        proc.communicate()
        os.close(r)
        raise
    said = os.read(r, 100).decode().split()
    os.close(r)
    return {
        "exit": proc.returncode,
        "code": int(said[0]) if said else None,
        "peak_mb": int(said[1]) / 1024 if len(said) > 1 else None,
        "stdout": out.decode("utf-8", "replace"),
        "stderr": err.decode("utf-8", "replace"),
    }


def _quick(url: str, *more: str) -> list[str]:
    return [
        "run", "--target", url, "--spec", "memory", "--profile", "quick", "--examples", "1",
        "--timeout", "0.6", "--procs", "0", *more,
    ]  # fmt: skip


def _one_line_usage_error(r: dict[str, Any], mentions: str) -> None:
    lines = r["stderr"].strip().splitlines()
    assert r["exit"] == 2, r
    assert len(lines) == 1 and mentions in lines[0], r["stderr"][-600:]
    assert "internal error" not in r["stderr"] and "Traceback" not in r["stderr"]
    assert len(lines[0]) < 400


def in_process(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    os.environ["MUT_TOKEN"] = TOKEN
    code = main(args)
    out, err = capsys.readouterr()
    return {"exit": code, "stdout": out, "stderr": err}


@pytest.mark.clause()
@pytest.mark.parametrize("value", ["1e308", "1e9", "nan", "-1", "inf"])
def test_a_timeout_out_of_range_is_a_usage_error(
    target: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", "--target", target, "--token-env", "MUT_TOKEN", f"--timeout={value}"]
    _one_line_usage_error(in_process(args, capsys), "--timeout")


@pytest.mark.clause()
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:99999",
        "http://127.0.0.1:port",
        "http://[::1",
        "http://[::1]:70000/",
        "http://127.0.0.1:0",
        "http://127.0.0.1:8080/x?y=1",
    ],
)
def test_a_malformed_url_is_a_usage_error(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", "--target", url, "--token-env", "MUT_TOKEN", "--timeout", "1"]
    _one_line_usage_error(in_process(args, capsys), "URL")


@pytest.mark.clause()
def test_token_files_that_are_no_regular_file_or_too_large_are_refused_at_once(
    target: str, tmp_path: Path
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # nobody ever writes to it: reading it whole would hang forever
    big = tmp_path / "big"
    with big.open("wb") as f:  # 1 GiB, sparse: reading it whole would cost 2 GB
        f.truncate(1 << 30)
    over = tmp_path / "over"
    over.write_text(TOKEN + "\n" + "x" * 70000)
    cases = {
        str(tmp_path): "directory",
        str(fifo): "FIFO",
        "/dev/zero": "device",
        str(big): "larger than 64 KiB",
        str(over): "larger than 64 KiB",
    }
    for path, why in cases.items():
        r = memspec(["run", "--target", target, "--token-file", path, "--timeout", "1"])
        _one_line_usage_error(r, why)
        assert r["peak_mb"] is not None and r["peak_mb"] < 150, (path, r["peak_mb"])


@pytest.mark.clause("MEM-WIRE.8")
def test_a_closed_stdout_ends_the_run_quietly_with_its_exit_code(target: str) -> None:
    r = memspec(_quick(target, "--token-env", "MUT_TOKEN"), close_stdout=True)
    assert r["code"] == 1 and r["exit"] == 1, r  # NOT CONFORMANT, as with a reader
    assert "internal error" not in r["stderr"] and "Traceback" not in r["stderr"], r["stderr"]
    assert "BrokenPipe" not in r["stderr"] and "Exception ignored" not in r["stderr"]


@pytest.mark.clause("MEM-WIRE.8")
def test_a_terminal_that_cannot_encode_the_marks_gets_ascii(target: str) -> None:
    r = memspec(_quick(target, "--token-env", "MUT_TOKEN"), env={"PYTHONIOENCODING": "ascii"})
    assert r["exit"] == 1, r["stderr"][-600:]
    assert "internal error" not in r["stderr"] and "Traceback" not in r["stderr"]
    assert "NOT CONFORMANT" in r["stdout"]
    r["stdout"].encode("ascii")  # every mark fell back to ASCII
