"""The targets judged, each on one fixed, named configuration, with what makes a figure untrustworthy.

Every target compares the same row: the decode-aware pipeline a user gets
from the defaults (``make_loader(ds, batch_size, workers=N)`` with no kind,
over shards from the default conversion) on the first format timed
(RecordIO unless ``--formats`` says otherwise), never "the best row of this
run", which changed from run to run. A verdict is the ratio of the two rows'
medians (the table's); it carries a warning when either row's rounds spread
by more than :data:`~.busy.NOISE_LIMIT` of their median, when other processes took more than
:data:`~.busy.BUSY_LIMIT` of the CPUs while they were timed, or when the
rounds' own paired ratios fall on both sides of the minimum (a close call
that a rerun may decide the other way).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .busy import BUSY_LIMIT, NOISE_LIMIT
from .harness import Result
from .targets import TARGETS, decode_aware_row, decode_limit_row


@dataclasses.dataclass
class Verdict:
    key: str
    label: str
    minimum: float
    row: str | None = None
    against: str | None = None
    ratio: float | None = None
    rounds: list[float] = dataclasses.field(default_factory=list)
    why_not: str = ""
    warnings: list[str] = dataclasses.field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.ratio is None:
            return "NOT JUDGED"
        return "MET" if self.ratio >= self.minimum else "MISSED"

    def line(self) -> str:
        if self.ratio is None:
            return f"  NOT JUDGED {self.label}: {self.why_not}"
        text = f"  {self.verdict:<6} {self.label}: {self.ratio:.2f}x (target >= {self.minimum}x)"
        return text + (f"  ! {'; '.join(self.short)}" if self.warnings else "")

    @property
    def short(self) -> list[str]:
        """The warnings as the headline says them (the JSON keeps them whole)."""
        out = []
        if any(": busy:" in w for w in self.warnings):
            out.append("busy machine")
        out += [f"noisy row {w.split(': noisy:')[0]!r}" for w in self.warnings if ": noisy:" in w]
        out += [w for w in self.warnings if w.startswith("close:")]
        return out

    def to_json(self) -> dict[str, Any]:
        return {"target": self.key, "label": self.label, "minimum": self.minimum, "verdict": self.verdict,
                "row": self.row, "against": self.against, "ratio": self.ratio, "round_ratios": self.rounds,
                "not_judged_because": self.why_not or None, "warnings": self.warnings}


def judged_source(results: list[Result], formats: tuple[str, ...]) -> str:
    """The source the targets are judged on: the first of ``formats`` (the
    plain, default conversion) that has a decode-aware training row, else the image folder."""
    names = {r.name for r in results}
    return next((fmt for fmt in formats if decode_aware_row(fmt) in names), "ImageFolder")


def is_noisy(r: Result) -> bool:
    """The rounds' relative spread, (fastest - slowest) / median, is over :data:`~.busy.NOISE_LIMIT`."""
    return r.spread is not None and r.spread > NOISE_LIMIT


def row_warnings(r: Result) -> list[str]:
    """Why one row's figure may not be trusted (empty when it may)."""
    out = []
    if is_noisy(r):
        out.append(f"noisy: rounds spread {r.spread:.0%} of the median (over {NOISE_LIMIT:.0%})")
    if r.busy is not None and r.busy > BUSY_LIMIT:
        out.append(f"busy: other processes used {r.busy:.0%} of the CPUs (over {BUSY_LIMIT:.0%})")
    return out


def judge(results: list[Result], formats: tuple[str, ...], missing: dict[str, str] | None = None,
          *, full: bool = True) -> list[Verdict]:
    """Every target of :data:`~.targets.TARGETS`, judged on the defaults' row (see the module docstring).
    ``full=False`` (the default grid) says of a row it leaves out that ``--full`` times it."""
    missing = missing or {}
    source = judged_source(results, formats)
    rows = {(r.group, r.name): r for r in results}
    baseline = {g: next((r.name for r in results if r.group == g and r.baseline is None), None) for g in ("train", "eval")}
    pairs = {
        "train_vs_torchvision": ("train", baseline["train"], ""),
        "eval_vs_torchvision": ("eval", baseline["eval"], ""),
        "train_vs_dali_cpu": ("train", f"DALI CPU {source}", missing.get("DALI", "")),
        "decode_limit": ("train", decode_limit_row(source), ""),
    }
    out = []
    for t in TARGETS:
        group, against, absent = pairs[t.key]
        label, base = t.label, rows.get((group, against or ""))
        if base is not None and "stand-in" in str(getattr(base, "label", base.name)):  # say what was timed
            label = label.replace("the torchvision (apex) recipe", "the PIL stand-in for torchvision's recipe")
            label = label.replace("the torchvision recipe", "the PIL stand-in for torchvision's recipe")
        v = Verdict(t.key, label, t.minimum, decode_aware_row(source), against)
        num = rows.get((group, v.row)) if v.row is not None else None
        den = rows.get((group, against or ""))
        if num is None or den is None or not num.rates or not den.rates or den.median <= 0:
            gone = v.row if num is None or not num.rates else against
            v.why_not = f"DALI {absent}" if absent else f"{gone or 'its baseline'} was not timed in this run"
            if not absent and not full and (group, gone or "") not in rows:
                v.why_not = f"{gone!r} is not in the default grid (`fastdata bench --full` times it)"
            out.append(v)
            continue
        v.ratio = num.median / den.median
        v.rounds = [a / b for a, b in zip(num.rates, den.rates) if b > 0]
        for r in (num, den):
            v.warnings += [f"{r.name}: {w}" for w in row_warnings(r)]
        if v.rounds and min(v.rounds) < v.minimum <= max(v.rounds):
            v.warnings.append(f"close: the rounds' ratios {min(v.rounds):.2f}-{max(v.rounds):.2f}x straddle {v.minimum}x")
        out.append(v)
    return out


def run_warnings(results: list[Result]) -> list[str]:
    """Run-level warnings: a busy machine, noisy rows."""
    out = []
    share = machine_busy(results)
    if share is not None and share > BUSY_LIMIT:
        out.append(
            f"WARNING: the machine was busy: other processes used {share:.0%} of this process's "
            f"CPUs while rows were timed (over {BUSY_LIMIT:.0%}); ratios measured now can be off by more than the "
            "targets' margins: rerun on an idle machine"
        )
    noisy = [r.name for r in results if is_noisy(r)]
    if noisy:
        out.append(f"WARNING: {len(noisy)} row(s) spread by more than {NOISE_LIMIT:.0%} of their median between rounds "
                   "(marked ! in the table and the chart): more --rounds, or a quieter machine")
    return out


def machine_busy(results: list[Result]) -> float | None:
    """Other processes' share of our CPUs over every timed round of the run, weighted by
    the rounds' lengths (:func:`.busy.weighted`; rows built without windows: their mean)."""
    from .busy import weighted

    shares, seconds = [], []
    for r in results:
        if len(r.seconds) == len(r.others):
            shares += r.others
            seconds += r.seconds
        elif r.others:  # a hand-built row: its rounds count as a second each
            shares += r.others
            seconds += [1.0] * len(r.others)
    return weighted(shares, seconds)


def headline(results: list[Result], formats: tuple[str, ...], missing: dict[str, str] | None = None,
             *, full: bool = True) -> list[str]:
    """The targets as lines, then the run's warnings."""
    source = judged_source(results, formats)
    lines = [f"targets (ratios from this run; judged on fastdata {source} with the defaults):"]
    lines += [v.line() for v in judge(results, formats, missing, full=full)]
    return lines + run_warnings(results)
