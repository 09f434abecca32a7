"""The `trt-trace` command. Its reading verbs (summary, diff, merge, slice, export, view) never
import torch (about 220 MB of memory and a second of start-up): this module imports the package
with its tracer left unloaded (see trt_trace/__init__.py), and the verbs that trace load it
themselves (`run` starts a program that does, `demo` loads it)."""

from __future__ import annotations

import os
import sys

READ_ONLY = "_TRT_TRACE_CLI_READ_ONLY"


def main() -> int:
    os.environ[READ_ONLY] = "1"
    try:
        from trt_trace.cli import main as cli_main
    finally:
        os.environ.pop(READ_ONLY, None)  # never inherited by the programs `run` starts
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
