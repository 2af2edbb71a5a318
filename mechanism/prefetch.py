"""A cache hint for compiled kernels: fetch an array element's cache line before a loop needs it (changes no value)."""

from __future__ import annotations

from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

# LLVM names the intrinsic by its pointer type: opaque pointers ("p0") from LLVM 15 on, i8* before.
_PREFETCH = "llvm.prefetch.p0" if llvm.llvm_version_info >= (15,) else "llvm.prefetch.p0i8"


@intrinsic
def prefetch(typingctx: Any, arr: Any, offset: Any) -> Any:  # pragma: no cover - compiled
    """prefetch(arr, i): fetch the cache line of arr's i-th element in memory order (C order) for a write; arr must be
    C-contiguous and i within it (a hint: it never faults, and changes no value)."""
    sig = types.void(arr, offset)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            _PREFETCH)
        ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), i8p)
        # write, high temporal locality (keep in every cache level), data cache
        builder.call(fn, [ptr, ir.Constant(i32, 1), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen
