"""The `.pte` frontend, torch-free: ExecuTorch's generated flatbuffer reader loaded without
`executorch.exir` (`schema`), the file container and its validation (`container`), a plain
decoded program (`program`), the ProgramView built from it (`view`) and the ETRecord /
debug-handle source map (`debug`). Instruction-level fixes live in `xferlint.fixes.pte`.

Nothing in this package imports torch; `tests/pte` asserts it.
"""
