"""The still-encoded image that datasets hand to decode-aware transforms."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EncodedImage:
    """Encoded image bytes plus what errors should call them.

    A dataset passes this instead of a decoded image to a transform whose
    class has ``decode_aware = True``; the transform reads the header, plans
    its crop and decodes only what it needs.

    Attributes:
        data: the file's bytes (JPEG, PNG, ...).
        name: e.g. ``"shard-00001.rec record 17"`` or a file path.
    """

    data: bytes
    name: str = ""

    def __repr__(self) -> str:  # never dump the bytes
        return f"EncodedImage(<{len(self.data)} bytes>, name={self.name!r})"
