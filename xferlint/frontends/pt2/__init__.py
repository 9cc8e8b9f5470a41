"""The `.pt2` frontend, torch-free: the archive `torch.export.save` writes, opened with
`zipfile` and checked (`archive`), its `models/model.json` read into the same ProgramView
the graph frontend builds from an ExportedProgram (`view`).

Nothing in this package imports torch or unpickles anything (`data/sample_inputs/*.pt`
is never opened); `tests/pt2` asserts it.
"""
