"""The done record of one shard: what went into it, as the worker that wrote it counted.

The worker fills a :class:`ShardRecord` while it writes the shard; the main
process saves it as ``OUT/.fastdata-state/<shard key>.json`` once the
shard's files have their final names (:func:`.state.write_record`), and the
finish reads every shard's record back for the summary and the manifest.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from fastdata.formats.sample import ShardInfo


@dataclasses.dataclass
class ShardRecord:
    """What went into one shard.

    Attributes:
        info: what the manifest records of the shard; None when every image
            was skipped (the shard's files are then removed: DALI's mxnet
            index cannot hold an empty shard).
        written: images written.
        bytes_in: source bytes of the images written.
        bytes_out: bytes stored for them.
        normalised_images: images re-encoded as RGB JPEG; ``normalised``
            counts why, by reason (an image may have several).
        restart_marked: JPEGs rewritten losslessly with restart markers.
        per_label: images written, by class index (multi-label images are not counted).
        skipped: ``(path, reason)`` of each file that could not be converted, in plan order.
    """

    info: ShardInfo | None = None
    written: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    normalised_images: int = 0
    restart_marked: int = 0
    per_label: Counter[int] = dataclasses.field(default_factory=Counter)
    normalised: Counter[str] = dataclasses.field(default_factory=Counter)
    skipped: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The record as saved (``json.dumps`` it with ``sort_keys``)."""
        return {
            "info": dataclasses.asdict(self.info) if self.info is not None else None,
            "written": self.written,
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "normalised_images": self.normalised_images,
            "restart_marked": self.restart_marked,
            "per_label": {str(k): v for k, v in sorted(self.per_label.items())},
            "normalised": dict(sorted(self.normalised.items())),
            "skipped": [list(pair) for pair in self.skipped],
        }

    @classmethod
    def from_json(cls, doc: Any) -> ShardRecord:
        """The record :meth:`to_json` gave (after a trip through JSON).

        Raises:
            ValueError: ``doc`` is not a shard record (a torn or edited file).
        """
        try:
            info = doc["info"]
            return cls(
                info=ShardInfo(**info) if info is not None else None,
                written=doc["written"],
                bytes_in=doc["bytes_in"],
                bytes_out=doc["bytes_out"],
                normalised_images=doc["normalised_images"],
                restart_marked=doc.get("restart_marked", 0),  # records written before restart markers lack it
                per_label=Counter({int(k): v for k, v in doc["per_label"].items()}),
                normalised=Counter(doc["normalised"]),
                skipped=[(path, reason) for path, reason in doc["skipped"]],
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"not a shard record ({type(exc).__name__}: {exc})") from None

    @classmethod
    def joined(cls, pieces: list[ShardRecord], info: ShardInfo | None) -> ShardRecord:
        """The record of a shard written in pieces, from the pieces' records (in order) and the joined shard's ``info``."""
        record = cls(info=info)
        for piece in pieces:
            record.written += piece.written
            record.bytes_in += piece.bytes_in
            record.bytes_out += piece.bytes_out
            record.normalised_images += piece.normalised_images
            record.restart_marked += piece.restart_marked
            record.per_label.update(piece.per_label)
            record.normalised.update(piece.normalised)
            record.skipped += piece.skipped
        return record
