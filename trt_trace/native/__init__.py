"""The compiled tracer library seen from Python: loading it (`_library`: once, also when `import torch`
runs the start-up hook from inside the load) and each of its torch.ops.trt_trace ops with types (`ops`).
Above schema/ only; importing this package imports no torch (the ops do at their first call)."""
