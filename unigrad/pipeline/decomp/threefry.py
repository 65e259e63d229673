"""THREEFRY: the Threefry-2x32 counter-based generator with 20 rounds (Salmon et al., SC'11; Random123's
threefry2x32_20), in uint32 adds, shifts, ORs and XORs.

Convention: THREEFRY(x, key) takes a uint64 counter x and a uint64 key and has dtype uint64. The two 32-bit
halves of each uint64 are the 2x32 words, the low half first: counter (x0, x1) = (x & 0xffffffff, x >> 32),
key (k0, k1) likewise, and the output words (y0, y1) come back as y0 | y1 << 32.

The algorithm: key schedule ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA); x0 += ks0, x1 += ks1; then 20 rounds of
add-rotate-xor (x0 += x1; x1 = rotl(x1, R[i % 8]) ^ x0) with the key injected after every 4th round
(injection s: x0 += ks[s % 3], x1 += ks[(s+1) % 3] + s). All arithmetic is modulo 2^32.
"""

from __future__ import annotations

from unigrad.dtype import dtypes
from unigrad.ir.uop import UOp
from unigrad.pipeline.decomp.numerics import add_const, shl, shr

ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)  # Random123's R_32x2: round i rotates left by ROTATIONS[i % 8]
PARITY = 0x1BD11BDA  # the key schedule's parity constant (Skein's C240 for 32-bit words)
ROUNDS = 20
MASK32 = 0xFFFFFFFF


def rotl32(v: UOp, r: int) -> UOp:
    return shl(v, r) | shr(v, 32 - r)


def words(v: UOp) -> tuple[UOp, UOp]:
    """(low, high) 32-bit words of a uint64."""
    return (v & MASK32).cast(dtypes.uint32), shr(v, 32).cast(dtypes.uint32)


def threefry(u: UOp) -> UOp:
    x, key = u.src
    if x.dtype is not dtypes.uint64 or key.dtype is not dtypes.uint64:
        raise TypeError(f"THREEFRY: expected a uint64 counter and key, found {x.dtype} and {key.dtype}")
    x0, x1 = words(x)
    k0, k1 = words(key)
    ks = (k0, k1, (k0 ^ k1) ^ PARITY)
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for i in range(ROUNDS):
        x0 = x0 + x1
        x1 = rotl32(x1, ROTATIONS[i % 8]) ^ x0
        if i % 4 == 3:
            s = (i + 1) // 4
            x0 = x0 + ks[s % 3]
            x1 = add_const(x1 + ks[(s + 1) % 3], s)
    return x0.cast(dtypes.uint64) | shl(x1.cast(dtypes.uint64), 32)
