"""Trace writers: each turns drained record batches into one output format, streamed."""

from .chrome_json import ChromeJsonWriter

__all__ = ["ChromeJsonWriter"]
