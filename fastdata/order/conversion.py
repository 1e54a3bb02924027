"""The converter's streams: the order a shuffled conversion writes samples in,
and the generator of its validation split.

Both are numpy's ``Generator(PCG64(SeedSequence([seed, purpose, index])))``,
pinned by the tests (changing them changes what users' conversions write).
A conversion of a small folder should not pay numpy's import (0.1-0.15 s,
more than writing 1,000 images), so below :data:`NUMPY_FROM` items the
permutation is drawn here in pure Python, draw for draw what numpy draws:
SeedSequence's hash, PCG64's XSL-RR step and output, the buffered 32-bit
draws and ``random_interval``'s masked rejection inside ``Generator.shuffle``.
Above it numpy draws (~1 us a draw here against ~20 ns there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

_M32 = (1 << 32) - 1
_M64 = (1 << 64) - 1
_M128 = (1 << 128) - 1

#: From this many items on, numpy draws the permutation (its import is paid back).
NUMPY_FROM = 100_000

# numpy's SeedSequence constants (bit_generator.pyx)
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_POOL = 4
# PCG64's 128-bit LCG multiplier (pcg64.h: PCG_DEFAULT_MULTIPLIER_HIGH, _LOW)
_PCG_MULT = (2549297995355413924 << 64) | 4865540595714422341


def _words(seed: int, purpose: int, index: int) -> list[int]:
    return [seed & _M32, purpose, index]


def conversion_generator(seed: int, purpose: int, index: int = 0) -> np.random.Generator:
    """A converter's stream for one purpose (sample order, validation split)
    and, where it draws per class, one class ``index``."""
    import numpy as np

    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(_words(seed, purpose, index))))


def conversion_order(seed: int, purpose: int, index: int, n: int) -> list[int]:
    """``conversion_generator(seed, purpose, index).permutation(n)`` as a list."""
    if n >= NUMPY_FROM:
        return conversion_generator(seed, purpose, index).permutation(n).tolist()
    return _Pcg64(_seed_sequence_state(_words(seed, purpose, index))).permutation(n)


def _entropy(words: list[int]) -> list[int]:
    out: list[int] = []
    for w in words:
        if w < 0:
            raise ValueError("SeedSequence entropy must be non-negative")
        if w == 0:
            out.append(0)
        while w:
            out.append(w & _M32)
            w >>= 32
    return out


def _seed_sequence_state(words: list[int]) -> tuple[int, int, int, int]:
    """``SeedSequence(words).generate_state(4, np.uint64)``."""
    entropy = _entropy(words)
    const = _INIT_A

    def hashmix(value: int) -> int:
        nonlocal const
        value ^= const
        const = const * _MULT_A & _M32
        value = value * const & _M32
        return value ^ (value >> 16)

    def mix(x: int, y: int) -> int:
        r = (_MIX_L * x - _MIX_R * y) & _M32
        return r ^ (r >> 16)

    pool = [hashmix(entropy[i] if i < len(entropy) else 0) for i in range(_POOL)]
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for src in range(_POOL, len(entropy)):
        for dst in range(_POOL):
            pool[dst] = mix(pool[dst], hashmix(entropy[src]))
    const = _INIT_B
    out32 = []
    for i in range(8):
        value = pool[i % _POOL] ^ const
        const = const * _MULT_B & _M32
        value = value * const & _M32
        out32.append(value ^ (value >> 16))
    a, b, c, d = ((out32[2 * k + 1] << 32) | out32[2 * k] for k in range(4))
    return a, b, c, d


class _Pcg64:
    """numpy's PCG64 bit generator (XSL-RR 128/64) and the draws ``Generator.shuffle`` makes of it."""

    def __init__(self, state: tuple[int, int, int, int]) -> None:
        initstate = (state[0] << 64) | state[1]
        initseq = (state[2] << 64) | state[3]
        self.inc = ((initseq << 1) | 1) & _M128
        self.state = self.inc  # pcg_setseq_128_srandom_r: step from 0, add initstate, step
        self.state = ((self.state + initstate) * _PCG_MULT + self.inc) & _M128
        self.spare: int | None = None  # the upper half of a 64-bit draw, kept for the next 32-bit one

    def next64(self) -> int:
        s = self.state = (self.state * _PCG_MULT + self.inc) & _M128
        x = ((s >> 64) ^ s) & _M64
        rot = s >> 122
        return ((x >> rot) | (x << (64 - rot))) & _M64

    def next32(self) -> int:
        if self.spare is not None:
            value, self.spare = self.spare, None
            return value
        value = self.next64()
        self.spare = value >> 32
        return value & _M32

    def interval(self, top: int) -> int:
        """``random_interval(top)``: uniform in ``[0, top]`` by masked rejection."""
        if top == 0:
            return 0
        mask = (1 << top.bit_length()) - 1
        if top <= _M32:
            while (value := self.next32() & mask) > top:
                pass
        else:
            while (value := self.next64() & mask) > top:
                pass
        return value

    def permutation(self, n: int) -> list[int]:
        order = list(range(n))
        for i in range(n - 1, 0, -1):
            j = self.interval(i)
            order[i], order[j] = order[j], order[i]
        return order
