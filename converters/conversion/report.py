"""What the converter tells people: a progress bar while it runs, a summary at the end."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections import Counter
from typing import Any, TextIO

from ..output.record import ShardRecord
from ..planning.layout import Plan
from ..units import format_bytes

SHOW_IGNORED = 10  # ignored files listed by name in the summary; the rest are counted


def _seconds(seconds: float) -> str:
    """A run's length with two significant figures below 10 s: a small folder takes 0.05 s, not "0.0 s"."""
    return f"{seconds:#.2g} s" if seconds < 9.95 else f"{seconds:.0f} s"  # 9.96 would print "10."


class Progress:
    """A tqdm bar on stderr with images/s and MB/s; silent when ``enabled`` is
    False or stderr is not a terminal. Call it as ``progress(images, nbytes)``."""

    def __init__(self, total: int, *, enabled: bool = True, stream: TextIO | None = None, unit: str = "img") -> None:
        stream = stream or sys.stderr
        self.images = 0
        self.bytes = 0
        self.started = time.perf_counter()
        self._bar = None
        if enabled and total and stream.isatty():
            import tqdm

            tqdm.tqdm.monitor_interval = 0  # no monitor thread: workers are forked from this process
            self._bar = tqdm.tqdm(total=total, unit=unit, file=stream, dynamic_ncols=True, smoothing=0.1)

    def __call__(self, images: int, nbytes: int) -> None:
        self.images += images
        self.bytes += nbytes
        if self._bar is not None:
            if self.bytes:
                rate = self.bytes / max(time.perf_counter() - self.started, 1e-9) / 1e6
                self._bar.set_postfix_str(f"{rate:.1f} MB/s", refresh=False)
            self._bar.update(images)

    @property
    def shown(self) -> bool:
        """Whether a bar is drawn (else nobody needs to report progress)."""
        return self._bar is not None

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@dataclasses.dataclass
class Summary:
    """Totals over every finished shard of a plan (all nodes, all runs)."""

    format: str
    out: str
    images: int = 0
    shards: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    normalised_images: int = 0
    restart_markers: bool = False
    restart_marked: int = 0
    normalised: Counter = dataclasses.field(default_factory=Counter)
    per_class: dict[str, int] = dataclasses.field(default_factory=dict)
    per_split: dict[str, int] = dataclasses.field(default_factory=dict)
    skipped: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    ignored: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    @classmethod
    def from_records(cls, out: str, plan: Plan, records: dict[str, ShardRecord]) -> Summary:
        s = cls(format=plan.options.format, out=out, skipped=_by_url(plan, plan.skipped),
                ignored=_by_url(plan, plan.ignored), restart_markers=plan.options.restart_markers)
        done = [(shard, r) for shard in plan.shards if (r := records.get(shard.key)) is not None]
        total = ShardRecord.joined([r for _, r in done], None)  # the same sums as a shard's pieces
        s.images, s.bytes_in, s.bytes_out = total.written, total.bytes_in, total.bytes_out
        s.normalised_images, s.restart_marked = total.normalised_images, total.restart_marked
        s.normalised.update(total.normalised)
        s.skipped += _by_url(plan, total.skipped)
        s.shards = sum(r.info is not None for _, r in done)
        for shard, r in done:
            if shard.split:
                s.per_split[shard.split] = s.per_split.get(shard.split, 0) + r.written
        s.per_class = {name: total.per_label.get(i, 0) for i, name in enumerate(plan.classes)}
        return s

    def converter_extra(self, plan: Plan, split: str) -> dict[str, Any]:
        """The manifest's ``extra["converter"]``: options and what was normalised (deterministic: no times)."""
        return {
            "tool": "fastdata convert",
            "split": split or None,
            "source": plan.source,
            "options": dataclasses.asdict(plan.options),
            "normalised": dict(sorted(self.normalised.items())),
            "skipped": len(self.skipped),
        }

    def lines(self, *, seconds: float, this_run: Summary | None = None) -> list[str]:
        """The summary; ``this_run`` (the shards this run wrote) adds its images and speed
        (images written, as in the first line: skipped files are not counted)."""
        out = [
            (
                f"fastdata convert: {self.images} images -> {self.out} ({self.format}), {self.shards} shard(s), "
                f"{format_bytes(self.bytes_out)} (source {format_bytes(self.bytes_in)})"
            )
        ]
        if this_run is not None:
            rate = this_run.images / seconds if seconds > 0 else 0.0
            mbs = this_run.bytes_in / seconds / 1e6 if seconds > 0 else 0.0
            out.append(f"  this run: {this_run.images} images in {_seconds(seconds)} ({rate:.1f} images/s, "
                       f"{mbs:.1f} MB/s)")
        if self.per_split:
            out.append("  splits: " + ", ".join(f"{k} {v}" for k, v in self.per_split.items()))
        if self.per_class:
            shown = list(self.per_class.items())
            text = ", ".join(f"{k} {v}" for k, v in shown[:20])
            out.append(f"  per class: {text}" + (f", ... ({len(shown)} classes)" if len(shown) > 20 else ""))
        if self.normalised_images:
            reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.normalised.items()))
            marked = ", then given restart markers" if self.restart_markers else ""
            out.append(f"  normalised: {self.normalised_images} image(s) re-encoded as RGB JPEG ({reasons}){marked}")
        elif self.restart_markers:
            out.append("  normalised: none (no image needed re-encoding)")
        else:
            out.append("  normalised: none (every image stored byte for byte)")
        if self.restart_markers:
            kept = self.images - self.restart_marked - self.normalised_images
            out.append(
                f"  restart markers: {self.restart_marked} JPEG(s) rewritten losslessly (same pixels)"
                + (f"; {self.normalised_images} re-encoded (above)" if self.normalised_images else "")
                + (f"; {kept} stored as they are (not baseline JPEGs)" if kept > 0 else "")
            )
        if self.ignored:
            kinds = Counter(reason.split(" (")[0] if not reason.startswith("extension") else "other extensions" for _, reason in self.ignored)
            out.append(f"  ignored: {len(self.ignored)} file(s) by rule (" + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) + ")")
            out += [f"    {path}: {reason}" for path, reason in self.ignored[:SHOW_IGNORED]]
            if len(self.ignored) > SHOW_IGNORED:
                out.append(f"    ... and {len(self.ignored) - SHOW_IGNORED} more")
        out.append(f"  skipped: {len(self.skipped)} file(s)")
        return out

    def skipped_lines(self) -> list[str]:
        return [f"  {path}: {reason}" for path, reason in self.skipped]


def _by_url(plan: Plan, entries: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``(path, reason)`` entries, each file of a source copied from a URL named
    by its object's URL: the local copy is fastdata's and goes once converted."""
    url = plan.source.get("url")
    if not url:
        return list(entries)
    prefix = os.path.join(plan.source["root"], "")
    return [(f"{url}/{path[len(prefix):].replace(os.sep, '/')}" if path.startswith(prefix) else path, why)
            for path, why in entries]
