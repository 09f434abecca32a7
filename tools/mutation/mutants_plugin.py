"""mutants.py's pytest plugin (`-p mutants_plugin`, from the copy of the installed package's folder).
In every run: Hypothesis derandomized and without its example database, so that each mutant meets
the examples the recording run met. In the recording run (TRT_MUTANTS_LINES set): the running test
named for line_recorder (here and, through TRT_MUTANTS_TEST, in the child processes it starts), and
each test's duration written to durations.tsv (mutants.py runs the fastest first)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import line_recorder
import pytest


def pytest_configure(config: pytest.Config) -> None:
    try:
        from hypothesis import settings
    except ImportError:
        pass
    else:  # tests' own @settings keep what they set
        settings.register_profile("trt_mutants", derandomize=True, database=None)
        settings.load_profile("trt_mutants")


def test_id(item: pytest.Item) -> str:
    """The test's id with its file's absolute path (the mutant runs start pytest elsewhere)."""
    _, _, rest = item.nodeid.partition("::")
    return f"{item.path}::{rest}" if rest else str(item.path)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Iterator[None]:
    rec = line_recorder.recorder
    if rec is None:
        return (yield)
    name = test_id(item)
    rec.test = name
    os.environ[line_recorder.TEST_ENV] = name
    t0 = time.monotonic()
    try:
        return (yield)
    finally:
        rec.test = ""
        os.environ.pop(line_recorder.TEST_ENV, None)
        with open(os.path.join(rec.folder, "durations.tsv"), "a") as f:
            f.write(f"{time.monotonic() - t0:.3f}\t{name}\n")
