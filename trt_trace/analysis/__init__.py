"""Reading traces back: one module per verb or report (trace_summary, diff with diff_plot and
mann_whitney, merge with perfetto_view for `-o x.pftrace`, trace_slice, export, layers_report, plot).
Above captures/ (a capture is read as a trace is), io/ and schema/;
beside runtime/, which it never imports: a reading verb never starts a session."""
