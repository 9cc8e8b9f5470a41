"""The `.pte` side of xferlint, torch-free: ExecuTorch's generated flatbuffer reader loaded
without `executorch.exir` (`schema`), the file container and its validation (`container`),
a plain decoded program (`program`), the memory plan (`memory`), fixes applied at the
instruction level (`fix`) and the ETRecord / debug-handle map (`debug`).

Nothing in this package imports torch; `tests/pte` asserts it.
"""
