"""Recording: the settings table (config.py), the session (session.py: settings -> the native writer, start
and stop, the module API), the native writer thread's control (native_trace.py: JSON and Perfetto sessions),
the flight recorder's control (flight.py: its window and dumps live on the native writer thread), the
process's exits, signals and fork (process_hooks.py), the metrics endpoint's control (metrics.py), on-demand
capture (on_demand.py: the armed process's side; capture_request.py: `trt-trace capture`'s), the
cudaProfilerApi range around sessions (profiler_range.py). Above io/ (a session picks its format from the
format registry), native/ and schema/; beside analysis/, which it never imports."""
