"""The lowest layer: what a record and a trace are, for every layer above (no import from them, no torch).

    phases.py        THE PHASE LIST (csrc/common/phases.h's twin)
    records.py       the 40-byte record and the engine table's columns, in numpy
    trace_format.py  the names both formats share: flags, categories, tracks, the metadata event
    errors.py        TraceError      version.py   __version__
"""
