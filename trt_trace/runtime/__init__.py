"""Recording: the settings table (config.py), the session (session.py: settings -> writer + drainer, start
and stop, the module API), the native JSON writer thread's control (native_trace.py), the Python drainer
(drainer.py), the flight recorder's window (flight.py), the process's exits, signals and fork
(process_hooks.py), the metrics endpoint's control (metrics.py). Above io/ (a session picks its writer
from the format registry), native/ and schema/; beside analysis/, which it never imports."""
