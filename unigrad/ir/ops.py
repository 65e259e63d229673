"""Ops: every op of tinyspec-v2, grouped as the spec groups them (plus REPLICATED and BUFFER_VIEW of v1).

COPY and CONTIGUOUS of the tensor level are spelled LOAD with a LoadArg (device, addrspace), as v2 says.
`GroupOp` holds the groups as frozensets for fast membership tests in rules and derived properties.
"""

from __future__ import annotations

from enum import Enum, auto


class Ops(Enum):
    # source ops: leaf nodes
    PARAM = auto()
    BUFFER = auto()
    BUFFER_VIEW = auto()
    CONST = auto()
    BINARY = auto()  # raw bytes: data in the main graph, machine code inside a PROGRAM
    # movement ops
    PERMUTE = auto()
    FLIP = auto()
    RESHAPE = auto()
    EXPAND = auto()
    PAD = auto()
    SHRINK = auto()
    INDEX = auto()
    STACK = auto()
    BITCAST = auto()
    REPLICATED = auto()
    # reduce ops
    REDUCE = auto()
    # call ops
    FUNCTION = auto()
    CALL = auto()
    TUPLE = auto()
    GETTUPLE = auto()
    # load / store ops
    LOAD = auto()
    STORE = auto()
    # ordering ops
    RANGE = auto()
    END = auto()
    AFTER = auto()
    GROUP = auto()
    SINK = auto()
    LINEAR = auto()
    # elementwise: unary
    RECIP = auto()
    TRUNC = auto()
    CAST = auto()
    # elementwise: binary
    ADD = auto()
    MUL = auto()
    MAX = auto()
    MOD = auto()
    IDIV = auto()
    CMPLT = auto()
    CMPNE = auto()
    XOR = auto()
    OR = auto()
    AND = auto()
    SHR = auto()
    SHL = auto()
    # elementwise: ternary
    WHERE = auto()
    # decomposed elementwise ops (defined by the spec in terms of the primitives)
    NEG = auto()
    SUB = auto()
    DIV = auto()
    CMPGT = auto()
    CMPGE = auto()
    CMPLE = auto()
    CMPEQ = auto()
    NOT = auto()
    EXP2 = auto()
    LOG2 = auto()
    SIN = auto()
    SQRT = auto()
    POW = auto()
    MULACC = auto()
    THREEFRY = auto()
    # marker ops
    CONTIGUOUS = auto()
    CONTIGUOUSBACKWARD = auto()
    DETACH = auto()
    # codegen ops
    BARRIER = auto()
    INS = auto()
    GETADDR = auto()
    SPECIAL = auto()
    IF = auto()
    ENDIF = auto()
    WMMA = auto()
    CUSTOM = auto()
    ATOMICADD = auto()
    CUSTOMFUNCTION = auto()
    PROGRAM = auto()
    SOURCE = auto()

    def __repr__(self) -> str:
        return f"Ops.{self.name}"

    # identity hash in C: Enum's default hashes the name in Python, and ops are hashed on every node build
    __hash__ = object.__hash__


class GroupOp:
    Source = frozenset({Ops.PARAM, Ops.BUFFER, Ops.BUFFER_VIEW, Ops.CONST, Ops.BINARY})
    Movement = frozenset(
        {Ops.PERMUTE, Ops.FLIP, Ops.RESHAPE, Ops.EXPAND, Ops.PAD, Ops.SHRINK, Ops.INDEX, Ops.STACK, Ops.BITCAST}
        | {Ops.REPLICATED}
    )
    # the movement ops of a view of one buffer: element i of the view is an element of the buffer (or padding)
    View = frozenset({Ops.PERMUTE, Ops.FLIP, Ops.RESHAPE, Ops.EXPAND, Ops.PAD, Ops.SHRINK})
    Reduce = frozenset({Ops.REDUCE})
    Call = frozenset({Ops.FUNCTION, Ops.CALL, Ops.TUPLE, Ops.GETTUPLE})
    Load = frozenset({Ops.LOAD})
    Store = frozenset({Ops.STORE})
    Ordering = frozenset({Ops.RANGE, Ops.END, Ops.AFTER, Ops.GROUP, Ops.SINK, Ops.LINEAR})
    Unary = frozenset({Ops.RECIP, Ops.TRUNC, Ops.CAST})
    Binary = frozenset(
        {Ops.ADD, Ops.MUL, Ops.MAX, Ops.MOD, Ops.IDIV, Ops.CMPLT, Ops.CMPNE, Ops.XOR, Ops.OR, Ops.AND, Ops.SHR, Ops.SHL}
    )
    Ternary = frozenset({Ops.WHERE})
    Decomposed = frozenset(
        {Ops.NEG, Ops.SUB, Ops.DIV, Ops.CMPGT, Ops.CMPGE, Ops.CMPLE, Ops.CMPEQ, Ops.NOT, Ops.EXP2, Ops.LOG2}
        | {Ops.SIN, Ops.SQRT, Ops.POW, Ops.MULACC, Ops.THREEFRY}
    )
    # functions that decompose into many ALU ops (polynomials, rounds): costly to recompute, never folded
    Transcendental = frozenset({Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT, Ops.POW, Ops.THREEFRY})
    Marker = frozenset({Ops.CONTIGUOUS, Ops.CONTIGUOUSBACKWARD, Ops.DETACH})
    Codegen = frozenset(
        {Ops.BARRIER, Ops.INS, Ops.GETADDR, Ops.SPECIAL, Ops.IF, Ops.ENDIF, Ops.WMMA, Ops.CUSTOM, Ops.ATOMICADD}
        | {Ops.CUSTOMFUNCTION, Ops.PROGRAM, Ops.SOURCE, Ops.BINARY}
    )

    # derived groups used by passes
    DecomposedUnary = frozenset({Ops.NEG, Ops.NOT, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT})
    DecomposedBinary = frozenset({Ops.SUB, Ops.DIV, Ops.CMPGT, Ops.CMPGE, Ops.CMPLE, Ops.CMPEQ, Ops.POW})
    ALU = Unary | Binary | Ternary | Decomposed
    Elementwise = ALU
    Commutative = frozenset({Ops.ADD, Ops.MUL, Ops.MAX, Ops.CMPNE, Ops.XOR, Ops.OR, Ops.AND, Ops.CMPEQ})
    Comparison = frozenset({Ops.CMPLT, Ops.CMPNE, Ops.CMPGT, Ops.CMPGE, Ops.CMPLE, Ops.CMPEQ})
    Associative = frozenset({Ops.ADD, Ops.MUL, Ops.MAX, Ops.XOR, Ops.OR, Ops.AND})
    All = frozenset(Ops)


# the primitive ops a Transcendental decomposes into (isel), about: a body's size in C counts each as this many
TRANSCENDENTAL_OPS = 32
