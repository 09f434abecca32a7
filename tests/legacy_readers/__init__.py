"""The readers as they were before trt_trace/io/readers: a test oracle (tests/test_readers_oracle.py)."""
