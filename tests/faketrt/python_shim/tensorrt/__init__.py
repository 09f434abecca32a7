"""`import tensorrt` for the real TensorRT Python bindings (package `tensorrt_bindings`, from the
tensorrt_cu13_bindings wheel), where TensorRT's meta-package cannot be installed (its library
package fetches the real libraries at install time from an index out of reach here): this module
replaces itself with the bindings package, so `tensorrt.__version__`, `tensorrt.Logger` and
`tensorrt.plugin` are the bindings' own."""

import sys

import tensorrt_bindings

sys.modules[__name__] = tensorrt_bindings
