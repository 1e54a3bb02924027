"""What a run does with OUT: plan a new conversion, resume or join one, or replace one.

Only what fastdata wrote is ever replaced (see :func:`.state.wipe`); a
folder holding anything else is refused.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TextIO

from fastdata.errors import ConfigError, FastDataError
from fastdata.formats import registry

from ..output import state
from ..planning.layout import Plan, PlanOptions, make_plan
from ..planning.scan import ScanResult, SkippedFile, scan_folder, scan_list
from .request import ConvertRequest


def check_nesting(src: Path, out: Path) -> None:
    src_real, out_real = os.path.realpath(src), os.path.realpath(out)
    if out_real == src_real or out_real.startswith(src_real.rstrip(os.sep) + os.sep):
        raise ConfigError(
            f"{out}: the output directory is inside the source folder {src}; the shards would be scanned as "
            "images (or a class) by the next conversion. Choose an output directory outside SRC"
        )
    if src_real.startswith(out_real.rstrip(os.sep) + os.sep):
        raise ConfigError(f"{out}: the output directory contains the source folder {src}; choose another output directory")


def load_or_make_plan(req: ConvertRequest, out: Path, source: dict, stderr: TextIO) -> Plan | None:
    """The plan this run works on; None when, with several nodes, OUT already
    holds this very conversion finished by the others (nothing left to do).

    Raises:
        ConfigError: OUT must not be touched, or holds a conversion made with other settings.
    """
    found = state.survey(out)
    kind = found.kind
    if kind == state.FOREIGN:
        if found.problem:
            raise ConfigError(f"{found.problem}, {state.NOT_OURS}")
        raise ConfigError(_foreign(out, req.overwrite))
    if kind == state.FINISHED:
        if not req.overwrite:
            if req.num_nodes > 1:  # a node that starts after the others finished: fine if it is the same conversion
                _check_finished_same(found, req.options, source, out)
                return None
            nothing = " (nothing to resume)" if req.resume else ""
            raise ConfigError(
                f"{out} already holds a finished dataset{nothing}; choose another output directory or pass "
                "--overwrite to replace it"
            )
        state.wipe(out, found)
    elif kind == state.UNFINISHED:
        if req.overwrite:
            state.wipe(out)
        elif req.resume or req.num_nodes > 1:
            try:
                plan = Plan.load(out)
            except FileNotFoundError:  # the last node removed it after writing the manifests
                return load_or_make_plan(req, out, source, stderr)
            _check_same(plan, req.options, source, out)
            if req.resume:
                _warn_source_changes(req, plan, source, stderr)
            return plan
        else:
            raise ConfigError(
                f"{out} holds an unfinished conversion (interrupted?); run the same command with --resume to "
                "finish it, or with --overwrite to start over"
            )
    plan = _make_plan(req, source)
    out.mkdir(parents=True, exist_ok=True)
    if req.num_nodes > 1 and (out / ".fastdata-plan.json").exists():  # another node got there first
        theirs = Plan.load(out)
        _check_same(theirs, req.options, source, out)
        if theirs.fingerprint() != plan.fingerprint():
            raise ConfigError(f"{out}: another node planned a different conversion (did SRC change between scans?)")
        return theirs
    plan.save(out)
    return plan


def _foreign(out: Path, overwrite: bool) -> str:
    """Why OUT, which holds only files fastdata did not write, is refused, and what to do."""
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in out.iterdir())
    held = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    spare = next(out / n for n in ("shards", "fastdata-shards", "fastdata-out") if not (out / n).exists())
    todo = f"give a new or empty output directory (e.g. {spare}) or move those files out"
    if overwrite:
        return (
            f"{out}: nothing to overwrite: --overwrite replaces only a dataset fastdata wrote (the files its manifest "
            f"or plan lists), and this directory holds only files not written by fastdata ({held}), which it never "
            f"deletes and does not write shards among; {todo} (notes or checkpoints you add to a fastdata output "
            "later stay through --overwrite)"
        )
    return f"{out}: output directory is not empty and was not written by fastdata ({held}); {todo}"


def _check_finished_same(found: state.Survey, options: PlanOptions, source: dict, out: Path) -> None:
    for directory, manifest in found.manifests.items():
        converter = manifest.extra.get("converter") or {}
        saved = {"options": converter.get("options"), "source": converter.get("source")}
        if saved != {"options": dataclasses.asdict(options), "source": source}:
            raise ConfigError(
                f"{out} already holds a finished dataset ({directory / 'manifest.json'}) converted from another "
                "source or with other settings than this node's; give every node the same command, or another "
                "output directory"
            )


def _warn_source_changes(req: ConvertRequest, plan: Plan, source: dict, stderr: TextIO) -> None:
    """One warning line when SRC gained or lost image files since the plan was
    made: --resume keeps the plan, so they are not part of this conversion."""
    try:
        scan = _scan(req, source)
    except FastDataError as exc:
        print(f"fastdata convert: warning: could not rescan the source to look for changes ({exc})", file=stderr)
        return
    # by path relative to SRC: the same files whatever the spelling of SRC or the working directory
    planned = {it.rel for s in plan.shards for it in s.items}
    found = {it.rel for it in scan.items}
    new, removed = len(found - planned), len(planned - found)
    if new or removed:
        print(
            f"fastdata convert: warning: {source['root']} changed since this conversion was planned: {new} new and "
            f"{removed} removed image file(s) are ignored by --resume, which finishes the original plan; a fresh "
            "convert (--overwrite) picks them up",
            file=stderr,
        )


def _scan(req: ConvertRequest, source: dict) -> ScanResult:
    if req.src is not None:
        scan = scan_folder(req.src, extensions=req.extensions, allow_empty_classes=req.allow_empty_classes,
                           workers=req.run.workers)
    else:
        from fastdata.formats.lst import read_lst

        list_file = req.list_file
        if list_file is None:  # refused before: SRC or --list, one of them
            raise ConfigError("give either SRC (an image folder) or --list FILE")
        if not os.path.isfile(list_file):
            raise ConfigError(f"{list_file}: list file does not exist")
        entries = [(i, (lab,) if isinstance(lab, float) else tuple(lab), rel) for i, lab, rel in read_lst(list_file)]
        scan = scan_list(list_file, source["root"], entries)
    return scan


def _make_plan(req: ConvertRequest, source: dict) -> Plan:
    scan = _scan(req, source)
    fmt = req.options.format
    # a folder's labels are class indexes; only a list file can hold vectors (a read per item otherwise)
    if req.list_file is not None and not registry.get(fmt).label_vectors and any(
        not isinstance(it.label, int) for it in scan.items
    ):
        takes = [name for name in registry.names() if registry.get(name).label_vectors]
        raise ConfigError(
            f"{req.list_file}: has label vectors or fractional labels, but the {fmt} format holds one int label "
            f"per image; use --format {' or '.join(takes)}"
        )
    if scan.skipped and req.run.on_error == "raise":
        path, reason = scan.skipped[0]
        raise SkippedFile(path, reason)
    return make_plan(scan, req.options, source)


def _check_same(plan: Plan, options: PlanOptions, source: dict, out: Path) -> None:
    theirs, ours = dataclasses.asdict(plan.options), dataclasses.asdict(options)
    diffs = [_difference(k, theirs.get(k), ours[k]) for k in ours if theirs.get(k) != ours[k]]
    diffs += [f"source {k}: saved {plan.source.get(k)!r}, now {v!r}" for k, v in source.items() if plan.source.get(k) != v]
    if diffs:
        raise ConfigError(
            f"{out}: the unfinished conversion there was started with other settings ({'; '.join(diffs)}); "
            "resume with the original command, or pass --overwrite to start over"
        )


def _difference(key: str, saved: object, now: object) -> str:
    if key == "restart_markers":  # the one setting that has a default depending on the install
        said: dict[object, str] = {True: "with restart markers", False: "byte for byte (--passthrough)"}
        return (f"JPEGs were stored {said.get(saved, repr(saved))} and this run would store them {said[bool(now)]}: "
                f"pass {'--restart-markers' if saved else '--passthrough'} to resume")
    return f"{key}: saved {saved!r}, now {now!r}"
