"""The program the README's commands run as `python serve.py` (and `train.py`, the same program under
torchrun): tests/test_readme.py copies it into the directory the commands run in under both names. A
user's program would run a Torch-TensorRT model; this one calls the demo's six stand-in TensorRT
engines (trt_trace.standin.model.demo_specs) a few times, eagerly, and ignores its arguments
(`--port 8000`): the README's commands are what is tested, not the call path (tests/test_call_paths.py)."""

import os
import sys

import torch

from trt_trace import standin
from trt_trace.standin import model

engines = [(spec, standin.make_engine(**{f: getattr(spec, f) for f in spec.field_names()}))
           for spec in model.demo_specs(6)]
for _ in range(int(os.environ.get("README_CALLS", "10"))):
    for spec, engine in engines:
        outputs = torch.ops.tensorrt.execute_engine([torch.randn(8, 64) for _ in range(spec.num_inputs)], engine)
print(f"{os.path.basename(sys.argv[0])}: served {len(engines)} engines")
