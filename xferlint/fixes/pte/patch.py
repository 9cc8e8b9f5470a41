"""Edit a `.pte` in place, at the instruction level, without re-serializing it.

A fix only ever (1) makes an instruction (or the method's output list) read one EValue
instead of another and (2) removes instructions. Both can be done on the flatbuffer bytes
as they are, so everything else in the file (constant and delegate segments, their
alignment, the extended header, fields xferlint does not read) stays byte-identical:

- an operand is a 32-bit value index stored in an `args` vector (or a `MoveCall` /
  `JumpFalseCall` field, or `ExecutionPlan.outputs`): it is overwritten;
- a chain's `instructions` is a vector of offsets to instruction tables: removing entries
  shifts the remaining offsets down (each is relative to its own slot, so it is adjusted by
  the distance it moved) and shortens the vector; `stacktrace`, when present, is parallel
  and edited the same way; every `JumpFalseCall.destination_instruction` of the chain is
  renumbered to the instruction that now has its old target's place.

Positions are found with the vtable slots the fast reader uses (`program.py`), walking the
tables with the struct stand-ins of `tables.py` where the installed schema is the pinned
one, else with the generated reader classes.
"""

import bisect
import struct
from typing import Any, Iterable, Optional, Sequence

from xferlint.errors import FixError
from xferlint.frontends.pte import program as pp
from xferlint.frontends.pte.layouts import Fields
from xferlint.frontends.pte import tables
from xferlint.frontends.pte.schema import generated, pinned

_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")

# vtable slots (4 + 2 * field index in program.fbs)
_PLAN_OUTPUTS, _PLAN_CHAINS = 12, 14
_CHAIN_OUTPUTS, _CHAIN_INSTRUCTIONS, _CHAIN_STACKTRACE = 6, 8, 10


class Patcher:
    """Mutable bytes of a program plus the positions of what fixes edit."""

    def __init__(self, data: bytes, program: pp.PteProgram) -> None:
        self.buf = bytearray(data)
        self.program = program
        # positions are read in the program as it was: edits shift nothing they look up
        self.original = original = bytes(data[: program.container.program_size])
        self.root = (tables if pinned() else generated().Program).Program.GetRootAs(original, 0)
        self._starts: dict[tuple[int, int], int] = {}  # (plan, chain) -> its instructions' first slot
        # the tables' fields as the fast reader reads them (`layouts.Fields`)
        self._instr = Fields(original, ((pp._IN_TYPE, "B", 0), (pp._IN_ARGS, "I", None)))
        self._fields: dict[tuple[int, str], Fields] = {}  # (vtable slot, struct code) -> its reader

    # -- positions --------------------------------------------------------------------
    def _plan(self, plan_index: int) -> Any:
        return self.root.ExecutionPlan(plan_index)

    def _chain(self, plan_index: int, chain: int) -> Any:
        return self._plan(plan_index).Chains(chain)

    @staticmethod
    def _vector(table: Any, slot: int) -> Optional[int]:
        """Position of the first element of a vector field (None when absent)."""
        tab = table._tab
        offset = tab.Offset(slot)
        return tab.Vector(offset) if offset else None

    def _call(self, plan_index: int, chain: int, k: int) -> tuple[int, int]:
        """(union type, position of the call table) of instruction `k`, read off the bytes
        as the generated `Chain.Instructions(k).InstrArgs()` finds them: a fix rewires one
        instruction per copy it removes, and a walk from the root through the generated
        classes per instruction was a tenth of a large program's fix trial."""
        key = (plan_index, chain)
        start = self._starts.get(key)
        if start is None:
            start = self._starts[key] = self._vector(self._chain(plan_index, chain), _CHAIN_INSTRUCTIONS)
        slot = start + 4 * k
        ins = slot + _U32.unpack_from(self.original, slot)[0]
        (kind, args), offsets = self._instr.at(ins)
        if args is None:
            raise FixError(f"instruction {k} has no arguments")
        return kind, ins + offsets[1] + args

    def _field_at(self, table: int, slot: int, code: str) -> tuple[Any, Optional[int]]:
        """(the value of a table's field, its position; None when absent, the value then its
        default: None for an offset, 0 for a number)."""
        reader = self._fields.get((slot, code))
        if reader is None:
            reader = self._fields[slot, code] = Fields(self.original, ((slot, code, None if code == "I" else 0),))
        (value,), (offset,) = reader.at(table)
        return value, (table + offset if offset else None)

    def _read_i32(self, pos: int) -> int:
        return _I32.unpack_from(self.buf, pos)[0]

    def _write_i32(self, pos: int, value: int) -> None:
        _I32.pack_into(self.buf, pos, value)

    # -- edits ------------------------------------------------------------------------
    def rewire_args(self, plan_index: int, chain: int, k: int, positions: Iterable[int], old: int, new: int) -> None:
        """Replace value `old` by `new` at the given argument positions of a call."""
        kind, call = self._call(plan_index, chain, k)
        if kind not in (pp.KERNEL, pp.DELEGATE):
            raise FixError(f"instruction {k} is not a call")
        args, at = self._field_at(call, pp._CALL_ARGS, "I")
        if args is None:
            raise FixError(f"instruction {k} has no argument list")
        start = at + args + 4  # past the vector's length
        for j in positions:
            pos = start + 4 * j
            if self._read_i32(pos) != old:
                raise FixError(f"instruction {k} argument {j} is not value {old}")
            self._write_i32(pos, new)

    def rewire_field(self, plan_index: int, chain: int, k: int, slot: int, old: int, new: int) -> None:
        """Replace `old` by `new` in a MoveCall / JumpFalseCall field (which must be stored)."""
        _, call = self._call(plan_index, chain, k)
        _, pos = self._field_at(call, slot, "i")
        if pos is None or self._read_i32(pos) != old:
            raise FixError(f"instruction {k} does not store value {old} where it can be rewritten in place")
        self._write_i32(pos, new)

    def rewire_outputs(self, plan_index: int, rewires: Sequence[tuple[int, int]]) -> None:
        """Apply `(old, new)` replacements of returned values in order, as one after another
        would (a replacement also applies to what an earlier one wrote), to the plan's and
        its chains' outputs, in one pass over them: a fix may return the first of thousands
        of copies instead of each of the others."""
        final: dict[int, int] = {}  # value -> what the replacements from here on make of it
        for old, new in reversed(rewires):
            final[old] = final.get(new, new)
        plan = self._plan(plan_index)
        vectors = [(self._vector(plan, _PLAN_OUTPUTS), plan.OutputsLength())]
        for c in range(plan.ChainsLength()):
            chain = plan.Chains(c)
            vectors.append((self._vector(chain, _CHAIN_OUTPUTS), chain.OutputsLength()))
        for start, length in vectors:
            for j in range(length):
                value = self._read_i32(start + 4 * j)
                if final.get(value, value) != value:
                    self._write_i32(start + 4 * j, final[value])

    def remove_instructions(self, plan_index: int, chain: int, removed: set[int]) -> None:
        """Delete instructions from a chain and renumber its jumps."""
        if not removed:
            return
        c = self._chain(plan_index, chain)
        n = c.InstructionsLength()
        if any(not 0 <= k < n for k in removed):
            raise FixError("an instruction to remove is not in the chain")
        # renumber the jumps first, while the instructions are where they were; the decoded
        # program says which instructions are jumps (the accessors only locate those)
        before = sorted(removed)
        decoded = self.program.plans[plan_index].chains[chain].instructions
        for k, ins in enumerate(decoded):
            if k in removed or ins.kind != pp.JUMP_FALSE:
                continue
            _, call = self._call(plan_index, chain, k)
            dest, pos = self._field_at(call, pp._JF_DEST, "i")  # absent: 0, the default
            shift = bisect.bisect_left(before, dest)
            if shift:
                self._write_i32(pos, dest - shift)
        self._drop_vector_entries(self._vector(c, _CHAIN_INSTRUCTIONS), n, removed)
        stack = self._vector(c, _CHAIN_STACKTRACE)
        if stack is not None and c.StacktraceLength() == n:
            self._drop_vector_entries(stack, n, removed)

    def _drop_vector_entries(self, start: int, n: int, removed: set[int]) -> None:
        """Remove entries of a vector of offsets (to tables) in place."""
        targets = [start + 4 * i + _U32.unpack_from(self.buf, start + 4 * i)[0] for i in range(n)]
        kept = [t for i, t in enumerate(targets) if i not in removed]
        for j, target in enumerate(kept):
            _U32.pack_into(self.buf, start + 4 * j, target - (start + 4 * j))
        for j in range(len(kept), n):  # the freed tail: no longer part of the vector
            _U32.pack_into(self.buf, start + 4 * j, 0)
        _U32.pack_into(self.buf, start - 4, len(kept))

    def data(self) -> bytes:
        return bytes(self.buf)
