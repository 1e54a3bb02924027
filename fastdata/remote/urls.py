"""What counts as a URL, how names join onto one, and how secrets are kept
out of every message that names one."""

from __future__ import annotations

import hashlib
import os
import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://")
# Query parameters that carry a credential (pre-signed S3/GCS URLs, SAS tokens...).
_SECRET_PARAM = re.compile(r"(sig|signature|token|key|secret|credential|password|auth|sas)", re.I)
# Environment variables whose values are credentials of the fsspec backends.
_SECRET_ENV = re.compile(r"(SECRET|TOKEN|PASSWORD|CREDENTIAL|ACCESS_KEY)", re.I)
_MIN_SECRET = 6  # shorter values are not worth masking (and would mask ordinary words)
MASK = "***"
#: Protocols fastdata reads but never writes (plain HTTP has no upload, listing or delete).
READ_ONLY = ("http", "https")


def is_url(path: object) -> bool:
    """True for ``proto://...`` strings (``s3://``, ``gs://``, ``http(s)://``...),
    False for local paths, path objects and lists."""
    return isinstance(path, str) and _SCHEME.match(path) is not None


def protocol(url: str) -> str:
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else "file"


def join(url: str, name: str) -> str:
    """``url`` + ``/`` + ``name`` (``name`` relative, with ``/`` separators)."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/") + "/" + name.lstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, parts.fragment))


def cache_key(url: str) -> str:
    """A directory name for ``url``: readable tail + hash of the URL without
    its credentials (so a refreshed signature keeps the same cache)."""
    parts = urlsplit(url.rstrip("/"))
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    canonical = f"{parts.scheme.lower()}://{host}{parts.path}"
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:16]
    tail = re.sub(r"[^A-Za-z0-9._-]+", "_", (host + parts.path).strip("/"))[-40:].strip("_.") or "root"
    return f"{tail}-{digest}"


def scrub_url(url: str) -> str:
    """``url`` without user info and with credential-like query values masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def scrub(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with every URL scrubbed (see :func:`scrub_url`) and every known
    secret -- ``secrets`` plus credential-like environment variables -- masked."""
    text = re.sub(r"[A-Za-z][A-Za-z0-9+.\-]+://[^\s'\"<>]+", lambda m: scrub_url(m.group(0)), text)
    values = [v for k, v in os.environ.items() if _SECRET_ENV.search(k)]
    for value in sorted({*values, *secrets}, key=len, reverse=True):
        if value and len(value) >= _MIN_SECRET:
            text = text.replace(value, MASK)
    return text
