"""mutants.py's runner of one pytest run per mutant, without paying for the start-up each time: this
process imports what every run imports and no mutant can change (torch, numpy, pytest, Hypothesis:
never trt_trace nor a test module), then forks one child per request, which runs pytest.main in a
process group of its own and imports the package, with the mutant mutants.py just wrote, afresh.

Requests on stdin, one JSON line each: {"args": [pytest arguments], "timeout": seconds, "log": path}.
Answers on stdout, one JSON line each: {"rc": exit code, "timed_out": bool}. A run past its timeout
is killed with its whole process group (the programs its tests started too) and answered rc -9.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

# What conftest.py and the tests import at their top, trt_trace aside (each a few seconds on a busy
# machine; torch alone is most of a short run's time).
for name in ("numpy", "torch", "orjson", "pytest", "hypothesis", "_pytest.python", "_pytest.capture"):
    try:
        __import__(name)
    except ImportError:
        pass
assert "trt_trace" not in sys.modules, "the fork server must not import the package it runs mutants of"


def _run(args: list[str], log: str) -> None:
    """In the child: pytest on the given arguments, its output to `log`; never returns."""
    rc = 3
    try:
        os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_RDONLY)  # the requests' pipe is the server's alone
        os.dup2(null, 0)
        os.close(null)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        import pytest

        rc = int(pytest.main(args))
    except BaseException:  # noqa: BLE001 (anything that escapes pytest is a failed run)
        rc = 3
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)


def main() -> None:
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    for request in sys.stdin:
        req = json.loads(request)
        pid = os.fork()
        if pid == 0:
            _run(req["args"], req["log"])
        deadline = time.monotonic() + float(req["timeout"])
        timed_out = False
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                timed_out = True
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                _, status = os.waitpid(pid, 0)
                break
            time.sleep(0.05)
        rc = os.waitstatus_to_exitcode(status)
        answers.write(json.dumps({"rc": rc, "timed_out": timed_out}) + "\n")


if __name__ == "__main__":
    main()
