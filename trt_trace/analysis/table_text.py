"""Text, CSV and name cells shared by the reading verbs' tables (`summary`, `layers`).

A name cell is the name as a terminal shows it: control characters (a newline, a tab, ESC) escaped
visibly (`\\n`, `\\x1b`), so one row stays one line and nothing is obeyed; wide East Asian characters
take two columns, combining marks none. Columns are padded by that width, so a table of Japanese or
Chinese engine names stays aligned. A name wider than the name column wraps onto lines of its own
(the other cells stay on the row's first line), so every name is shown whole and no column moves."""

from __future__ import annotations

import csv
import io
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


def escaped(name: str) -> str:
    """The name with every character a terminal would not print as itself escaped (`\\n`, `\\t`, `\\x1b`,
    `\\u200b`), as Python writes it in a string literal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def char_width(c: str) -> int:
    if unicodedata.combining(c):
        return 0
    return 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1


def width(text: str) -> int:
    """The columns `text` takes on a terminal (wide East Asian characters: two; combining marks: none)."""
    return sum(char_width(c) for c in text)


def pad_right(text: str, w: int) -> str:
    return text + " " * max(0, w - width(text))


def pad_left(text: str, w: int) -> str:
    return " " * max(0, w - width(text)) + text


def wrapped(text: str, w: int) -> list[str]:
    """`text` in pieces of at most `w` columns (a wide character never split; w < 2 is taken as 2)."""
    w = max(2, w)
    out, line, used = [], "", 0
    for c in text:
        cw = char_width(c)
        if used + cw > w and line:
            out.append(line)
            line, used = "", 0
        line += c
        used += cw
    return [*out, line] if line or not out else out


def cut_middle(text: str, w: int) -> str:
    """`text` cut to `w` columns in its middle (`…` where it was cut), whole where it fits."""
    if width(text) <= w:
        return text
    keep = max(w - 1, 2)
    head, tail = keep - keep // 2, keep // 2
    front, used = "", 0
    for c in text:
        if used + char_width(c) > head:
            break
        front += c
        used += char_width(c)
    back, used = "", 0
    for c in reversed(text):
        if used + char_width(c) > tail:
            break
        back = c + back
        used += char_width(c)
    return front + "…" + back


@dataclass(frozen=True)
class Column:
    """One column of a text table: its header and the cell of a row (a dict), right-aligned at least
    `min_width` wide (wider where a header or a cell needs it, with a space before it)."""

    key: str
    header: str
    cell: Callable[[dict[str, Any]], str]
    min_width: int = 9


def text_table(name_header: str, names: Sequence[str], rows: Sequence[dict[str, Any]], columns: Sequence[Column],
               max_name_width: int = 0, indent: str = "") -> list[str]:
    """The lines of a table: a left-aligned name column (names escaped; wrapped beyond
    `max_name_width` columns, 0: never) and right-aligned `columns`."""
    shown = [escaped(n) for n in names]
    name_w = max([width(name_header), *(width(n) for n in shown)])
    if max_name_width > 0:
        name_w = max(width(name_header), min(name_w, max_name_width))
    cells = [[c.cell(r) for c in columns] for r in rows]
    widths = [max(c.min_width, width(c.header) + 2, *(width(cs[k]) + 2 for cs in cells))
              for k, c in enumerate(columns)]
    lines = [indent + pad_right(name_header, name_w) + "".join(pad_left(c.header, w) for c, w in zip(
        columns, widths, strict=True))]
    for name, cs in zip(shown, cells, strict=True):
        pieces = wrapped(name, name_w) if width(name) > name_w else [name]
        lines.append(indent + pad_right(pieces[0], name_w) + "".join(pad_left(s, w) for s, w in zip(
            cs, widths, strict=True)))
        lines.extend(indent + piece for piece in pieces[1:])
    return lines


def csv_text(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """CSV as `nsys stats --format csv` gives it: a header row, then one row per line; None is an empty
    cell, text is quoted where it needs to be (a comma, a quote, a newline in a name)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    for row in rows:
        w.writerow(["" if v is None else v for v in row])
    return out.getvalue()


def left_out_line(n: int, what: str, top: int) -> str:
    """The line under a table cut by --top: how many rows it does not show."""
    return f"({n} more {what}{'s' if n != 1 else ''} not shown: --top {top})"
