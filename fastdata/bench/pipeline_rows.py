"""The "train" and "eval" groups: the baseline recipe, fastdata's defaults over
the image folder and each source's shards, and DALI's CPU pipeline; ``--full``
adds the same PIL transforms through fastdata, the pytorch/examples recipe, the
other kind of workers and the decode limit."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import torch

from .. import ImageFolder, Workers, make_loader, open_dataset
from ..loading import fast_collate
from ..transforms import Compose, RandomHorizontalFlip, RandomResizedCrop, ResizedCenterCrop
from . import baselines
from .harness import Variant
from .peers import has_dali
from .settings import Settings
from .steady import SteadyRow, expect, steady
from .targets import decode_aware_row, decode_limit_row


@dataclasses.dataclass(frozen=True)
class _Group:
    """One group's settings and how its rows build loaders: the settings, training or evaluation."""

    s: Settings
    train: bool

    @property
    def name(self) -> str:
        return "train" if self.train else "eval"

    def pil(self, normalize: bool) -> Any:
        """The baseline recipe's PIL transforms."""
        return (baselines.train_transforms if self.train else baselines.eval_transforms)(normalize)

    def aware(self) -> Any:
        """fastdata's decode-aware transforms for this group."""
        if self.train:
            return Compose([RandomResizedCrop(224), RandomHorizontalFlip()])
        return ResizedCenterCrop(256, 224)

    def torch_loader(self, ds: Any, collate: Any) -> SteadyRow:
        s = self.s
        return SteadyRow(**steady(lambda: torch.utils.data.DataLoader(
            ds, batch_size=s.batch_size, shuffle=self.train, num_workers=s.workers, collate_fn=collate,
            drop_last=False, persistent_workers=s.workers > 0), s.pass_images, s.pass_seconds), **expect(s, "torch"))

    def fast(self, ds: Any, workers: Any = None) -> SteadyRow:
        # the defaults a user gets: make_loader(ds, batch_size, workers=N), no kind (auto)
        s = self.s
        chosen = workers if isinstance(workers, Workers) else self.defaults(ds)[0]
        return SteadyRow(**steady(lambda: make_loader(ds, s.batch_size, train=self.train, workers=workers or s.workers,
                                                      seed=s.seed, rank=0, world_size=1), s.pass_images, s.pass_seconds),
                         **expect(s, chosen.kind if chosen.count() else "threads"))

    def defaults(self, ds: Any) -> tuple[Workers, str]:
        """The workers make_loader picks for ``ds``, and the row's note saying so."""
        s = self.s
        chosen, _ = Workers.of(s.workers).resolve(ds, "sample")
        kind = chosen.kind if chosen.count() else "main process"
        return chosen, f"defaults: make_loader(ds, {s.batch_size}, workers={s.workers}) -> {kind}"


def pipelines(s: Settings, *, train: bool) -> list[Variant]:
    """The group's rows, the baseline recipe first."""
    g = _Group(s, train)
    base = baselines.recipe_name()
    folder_aware = ImageFolder(s.src, transform=g.aware())
    rows = [Variant(base, g.name, **g.torch_loader(baselines.folder_dataset(s.src, g.pil(False)), fast_collate),
                    note=baselines.recipe_note(train))]
    if s.full:
        rows += [
            Variant(baselines.recipe_name(normalize=True), g.name,
                    **g.torch_loader(baselines.folder_dataset(s.src, g.pil(True)), None), baseline=base,
                    note=baselines.recipe_note(train, normalize=True)),
            Variant("fastdata ImageFolder, same PIL transforms", g.name,
                    **g.fast(ImageFolder(s.src, transform=g.pil(False))), baseline=base),
        ]
    rows.append(Variant(decode_aware_row("ImageFolder"), g.name, **g.fast(folder_aware), baseline=base,
                        note=g.defaults(folder_aware)[1]))
    for fmt, path in s.shards.items():
        if s.full:
            rows.append(Variant(f"fastdata {fmt}, same PIL transforms", g.name,
                                **g.fast(open_dataset(path, transform=g.pil(False))), baseline=base))
        ds = open_dataset(path, transform=g.aware())
        rows.append(Variant(decode_aware_row(fmt), g.name, **g.fast(ds), baseline=base, note=g.defaults(ds)[1]))
    if s.full and s.shards:
        rows += _other_workers(g, base)
    if train and s.full:
        rows.append(_decode_limit(g, base, folder_aware))
    if s.dali and has_dali() and (train or s.full):
        rows += _dali(g, base)
    return rows


def _other_workers(g: _Group, base: str) -> list[Variant]:
    """The other kind of workers beside the defaults' choice, on the first format."""
    s = g.s
    fmt, path = next(iter(s.shards.items()))
    chosen, _ = g.defaults(open_dataset(path, transform=g.aware()))
    if not chosen.count():
        return []
    other: Literal["processes", "threads"] = "processes" if chosen.kind == "threads" else "threads"
    return [Variant(f"{decode_aware_row(fmt)}, worker {other}", g.name,
                    **g.fast(open_dataset(path, transform=g.aware()), Workers(s.workers, kind=other)),
                    baseline=base, note=f"Workers({s.workers}, kind={other!r})")]


def _decode_limit(g: _Group, base: str, folder_aware: Any) -> Variant:
    """The decode-limit target: one source is enough (the first format, else the folder)."""
    s = g.s
    source, path = next(iter(s.shards.items()), ("ImageFolder", ""))
    chosen, _ = g.defaults(open_dataset(path, transform=g.aware()) if path else folder_aware)
    full = baselines.FullDecode()
    ds = open_dataset(path, transform=full) if path else ImageFolder(s.src, transform=full)
    return Variant(decode_limit_row(source), g.name, **g.fast(ds, chosen), baseline=base,
                   note=f"the same loader (worker {chosen.kind}) decoding whole images and nothing else")


def _dali(g: _Group, base: str) -> list[Variant]:
    """The default grid: DALI on the first format, training (the target's row); --full: every source, eval too."""
    from ..dali import DALILoader

    s = g.s
    rows = []
    for fmt, path in list(s.shards.items())[: None if s.full else 1]:
        def dali(path: str = path) -> DALILoader:
            return DALILoader(path, s.batch_size, train=g.train, device="cpu", device_id=None,
                              num_threads=s.workers, seed=s.seed)

        run = steady(dali, s.pass_images, s.pass_seconds)
        rows.append(Variant(f"DALI CPU {fmt}", g.name, **run, **expect(s, "dali"), baseline=base,
                            note=f"{s.workers} threads, the same shards"))
    return rows
