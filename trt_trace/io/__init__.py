"""Trace files in and out: the format registry (formats.py), the track book both writers and the readers
place calls by (tracks.py), the writers (writers/), the readers (readers/), Perfetto's protos and the
writing verbs' output files. Above native/ (the writers format through its ops) and schema/."""
