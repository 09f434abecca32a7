"""The output file of a verb that writes one (merge, slice, export): checked before any work, in one line
each (an input given as the output, a suffix that names another format, a directory), and put in place
at the end without ever renaming over something that is not a plain file (`export t.json /dev/full`
writes into the device and reports its error; a rename would have replaced the device node)."""

from __future__ import annotations

import io
import os
import shutil
import stat


def output_problem(output: str, inputs: list[str], suffixes: tuple[str, ...], writes: str) -> str | None:
    """None, or the one line why `output` must not be written: it is one of `inputs`, or its suffix is not
    one of `suffixes` (the formats this verb writes, e.g. ('.parquet',)); a name with no suffix is taken."""
    for path in inputs:
        try:
            if os.path.exists(output) and os.path.exists(path) and os.path.samefile(path, output):
                return f"{output} is an input; give another output file"
        except OSError:
            continue
    suffix = os.path.splitext(os.path.basename(output))[1].lower()
    if suffix and suffix not in suffixes and is_plain_or_new(output):
        names = " or ".join(f"*{s}" for s in suffixes)
        return f"{output}: this writes {writes}, not {suffix[1:]}; name the output {names}"
    return None


def is_plain_or_new(path: str) -> bool:
    """Whether `path` is a regular file or does not exist (a device, a pipe: written into, never replaced)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return True


def put_in_place(tmp: str, output: str) -> None:
    """Moves the finished `tmp` to `output`: a rename where output is a plain file or new, else its bytes
    written into output (a device or a pipe), then tmp removed. OSError where that fails (tmp removed)."""
    if is_plain_or_new(output):
        os.replace(tmp, output)
        return
    try:
        with open(tmp, "rb") as src, open(output, "wb") as dst:
            shutil.copyfileobj(src, dst)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def save_figure(fig: object, path: str) -> None:
    """A matplotlib figure into `path`, in the format its suffix names (PNG without one): drawn in memory,
    then written by Python, so that a write that fails (a full disk) raises OSError; matplotlib's own file
    writing lets such an error pass. ValueError for a suffix matplotlib has no format for."""
    suffix = os.path.splitext(os.path.basename(path))[1][1:].lower()
    data = io.BytesIO()
    fig.savefig(data, format=suffix or None)  # type: ignore[attr-defined]
    with open(path, "wb") as f:
        f.write(data.getbuffer())
