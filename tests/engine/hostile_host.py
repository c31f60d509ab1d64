"""Engine hosts that misbehave, for tests/engine/test_engine_host.py (run as a script).

``python tests/engine/hostile_host.py MODE``: the reference host, except that on a call of
``tokenize`` it does what MODE says: ``hang`` (never answers), ``flood`` (an endless line),
``crash`` (exits), ``garbage`` (a line that is not JSON), ``two-lines`` (two answers),
``banner`` (a line before any call), ``grandchild`` (starts a sleeping grandchild, writes its pid
to the file named by ENGINE_TEST_PIDFILE, then hangs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from conformance.binding.functions import BY_NAME
from conformance.engine_host import answer


def main() -> int:
    mode = sys.argv[1]
    table: dict[str, object] = {n: f.call for n, f in BY_NAME.items()}
    out = sys.stdout.buffer
    if mode == "banner":
        out.write(b"engine ready\n")
        out.flush()
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        if msg.get("fn") == "tokenize":
            if mode == "hang":
                time.sleep(3600)
            if mode == "flood":
                while True:
                    out.write(b"x" * 65536)
            if mode == "crash":
                return 3
            if mode == "garbage":
                out.write(b"<html>oops</html>\n")
                out.flush()
                continue
            if mode == "two-lines":
                out.write(b'{"ok": []}\n{"ok": []}\n')
                out.flush()
                continue
            if mode == "grandchild":
                child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
                with open(os.environ["ENGINE_TEST_PIDFILE"], "w") as f:
                    f.write(str(child.pid))
                time.sleep(3600)
        out.write(json.dumps(answer(table, line)).encode() + b"\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
