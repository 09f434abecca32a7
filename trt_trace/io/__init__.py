"""Trace files in and out: the format registry (formats.py), the track book both writers and the readers
place calls by (tracks.py), the writers (writers/), the readers (readers/), Perfetto's protos and the
writing verbs' output files. Above native/ (the writers format through its ops) and schema/.

Importing this package imports its readers and writers, whose modules register the formats (the
reader's module registers its format, the writer's module adds its writer): any use of formats.py
then finds all of trt_trace's own formats. Other profilers' captures register from trt_trace/captures,
a layer above, which `import trt_trace` imports.
"""

from . import readers, writers  # noqa: F401  (their modules register the formats: see above)
