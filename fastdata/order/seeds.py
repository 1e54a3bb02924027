"""Every seed fastdata uses, derived here and nowhere else (the converter's,
which must import without numpy, in :mod:`.conversion`).

Each stream is a pure function of ``(seed, epoch, rank, index)`` (or the part
of it that matters) plus a constant naming its purpose, so two purposes never
share a stream and reruns repeat. Changing a function here changes users'
sample order or augmentation: the tests pin them.
"""

from __future__ import annotations

from typing import cast

import numpy as np

_M64 = (1 << 64) - 1
_M63 = (1 << 63) - 1
_M32 = (1 << 32) - 1

# purpose words: one per stream
_SAMPLE = 0x5A3D
_WORKER = 0x77E1
_UNSEEDED = 0x1D
_ORDER = 0x0DE7
_ROTATION = 0x0FF5
_WINDOW = 0x3A1D
_PROCESS = 0x5EED
_MAIN_PROCESS = -1  # a worker id no DataLoader worker has


def mix(*words: int) -> int:
    """Chained splitmix64: a cheap, well-mixed 64-bit key from several integers.

    (SeedSequence mixes as well but costs ~10 us a call, which is paid per
    sample on the per-sample seeding path.)
    """
    x = 0x6A09E667F3BCC909
    for w in words:
        x = (x ^ (w & _M64)) + 0x9E3779B97F4A7C15 & _M64
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & _M64
        x = (x ^ (x >> 27)) * 0x94D049BB133111EB & _M64
        x ^= x >> 31
    return x


def sample_generator(seed: int, epoch: int, index: int) -> np.random.Generator:
    """The augmentation stream of sample ``index`` in ``epoch``; same inputs, same stream.

    Philox is counter-based: the key comes from (seed, epoch) and the sample
    index sits in the counter's high words, so streams of different samples
    never overlap.
    """
    return np.random.Generator(np.random.Philox(counter=[0, 0, index & _M64, _SAMPLE], key=mix(seed, epoch)))


class SampleStreams:
    """One generator that is set to :func:`sample_generator` streams in turn.

    ``at(seed, epoch, index)`` returns the same generator object each time,
    its Philox state set to what ``sample_generator(seed, epoch, index)``
    starts with, so its draws are the same bit for bit; making a new Philox
    and Generator per sample costs several times more. The catch: a caller
    that keeps the generator sees it change at the next ``at`` -- for code
    that draws and lets go (the loader threads' batch planning,
    :mod:`fastdata.loading.batched`), one per thread.
    """

    def __init__(self) -> None:
        bits = np.random.Philox(counter=[0, 0, 0, _SAMPLE], key=0)
        self._bits, self.generator = bits, np.random.Generator(bits)
        self._start = bits.state  # a fresh stream: empty buffer, no pending 32-bit half
        self._counter, self._key = self._start["state"]["counter"], self._start["state"]["key"]
        self._mixed: tuple[int, int, int] | None = None  # (seed, epoch, mix(seed, epoch)) last used

    def at(self, seed: int, epoch: int, index: int) -> np.random.Generator:
        word = index & _M64
        if word >> 63:  # NumPy takes such a counter word through a float: let it
            bits = cast(np.random.Philox, sample_generator(seed, epoch, index).bit_generator)  # a Philox: see there
            self._bits.state = bits.state
            return self.generator
        if self._mixed is None or self._mixed[0] != seed or self._mixed[1] != epoch:
            self._mixed = (seed, epoch, mix(seed, epoch))
        self._key[0] = self._mixed[2]
        self._counter[2] = word
        self._bits.state = self._start
        return self.generator


def worker_generator(seed: int, epoch: int, rank: int, worker: int) -> np.random.Generator:
    """The stream of one DataLoader worker of one rank in one epoch."""
    return np.random.Generator(np.random.Philox(key=mix(seed, epoch, rank, worker, _WORKER)))


def main_generator(seed: int) -> np.random.Generator:
    """The main process's stream after ``seed_everything(seed)``."""
    return worker_generator(seed, 0, 0, _MAIN_PROCESS)


def unseeded_generator(torch_seed: int) -> np.random.Generator:
    """The stream of a process nobody seeded, from ``torch.initial_seed()``
    (which PyTorch already makes distinct per DataLoader worker)."""
    return np.random.Generator(np.random.Philox(key=mix(torch_seed, _UNSEEDED)))


def process_seeds(seed: int, epoch: int, rank: int, worker: int) -> tuple[int, int, int]:
    """Seeds for a worker's ``random``, NumPy (32 bits) and torch (63 bits) global streams."""
    words = np.random.SeedSequence([seed & _M64, epoch & _M64, rank & _M64, worker & _M64, _PROCESS])
    py, np_word, torch_word = (int(w) for w in words.generate_state(3, np.uint64))
    return py, np_word & _M32, torch_word & _M63


def global_seeds(seed: int) -> tuple[int, int, int]:
    """``seed`` as ``random``, NumPy (32 bits) and torch (63 bits) take it (``seed_everything``);
    the torch one also seeds a DataLoader's base seeds in ``make_loader``."""
    return seed, seed & _M32, seed & _M63


def epoch_permutation(length: int, seed: int, epoch: int) -> np.ndarray:
    """The permutation of ``range(length)`` an epoch reads blocks in (int64).

    Built from Philox's raw output, whose stream NumPy keeps stable across
    versions, and a stable argsort -- not ``Generator.permutation``, whose
    algorithm NumPy may change.
    """
    key = np.random.SeedSequence([seed & _M64, epoch & _M64, _ORDER]).generate_state(2, np.uint64)
    draws = np.random.Philox(key=int(key[0]) | (int(key[1]) << 64)).random_raw(length)
    return np.argsort(draws, kind="stable").astype(np.int64, copy=False)


def rotation(seed: int, epoch: int, bound: int) -> int:
    """Where in its first block an epoch's sequence starts: ``0 <= r < bound``."""
    if bound <= 1:
        return 0
    return int(np.random.Philox(key=mix(seed, epoch, _ROTATION)).random_raw()) % bound


def window_draws(length: int, seed: int, epoch: int) -> np.ndarray:
    """Sort keys that shuffle an epoch's first ``length`` positions within their windows."""
    # the 0 stood for the rank when each rank shuffled its own part: one rank's orders stay as they were
    return np.random.Philox(key=mix(seed, epoch, 0, _WINDOW)).random_raw(length)


def pipeline_seed(seed: int, rank: int) -> int:
    """The seed of one rank's DALI pipeline (ranks augment differently)."""
    return seed + rank


# The converter's streams (conversion_generator, conversion_order) are in .conversion,
# which imports without numpy so that a small conversion does not pay for it.
from .conversion import conversion_generator, conversion_order  # noqa: E402,F401 -- re-exported, after the rest (above)
