"""Decompressing an HTTP body while it streams, never holding more than the cap.

httpx decompresses each network chunk whole, so a few hundred kilobytes of gzip can become
hundreds of megabytes in memory before a size check sees them (a gzip bomb). Here every
decompression step asks for at most the bytes still allowed, plus one to notice the excess, so
memory stays near the cap whatever the compression ratio. gzip and deflate (the encodings we
ask for) are understood; a body in any other encoding is refused.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator

ACCEPT_ENCODING = "gzip, deflate"


class BodyTooLarge(Exception):
    """The decompressed body passed the cap."""


class UnsupportedEncoding(Exception):
    """The server used a content-encoding we did not ask for."""


def decoded_chunks(
    raw: Iterable[bytes], content_encoding: str, cap: int, check: Callable[[], None]
) -> bytes:
    """The body of `raw` chunks decoded as `content_encoding` (comma-separated, applied in
    order), at most `cap` bytes; `check` runs between chunks (deadlines, interrupts)."""
    encodings = [part.strip().lower() for part in content_encoding.split(",") if part.strip()]
    stream: Iterator[bytes] = iter(raw)
    for encoding in encodings:
        if encoding == "identity":
            continue
        if encoding not in ("gzip", "x-gzip", "deflate"):
            raise UnsupportedEncoding(encoding)
        stream = _inflate(stream, encoding, cap)
    body = bytearray()
    for chunk in stream:
        body += chunk
        if len(body) > cap:
            raise BodyTooLarge()
        check()
    return bytes(body)


def _inflate(chunks: Iterator[bytes], encoding: str, cap: int) -> Iterator[bytes]:
    """Decompressed pieces of at most `cap + 1` bytes each, `cap + 1` in all before stopping."""
    # gzip has its header; deflate is zlib-wrapped as the RFC says, or raw as some servers send
    # (tried when the zlib header does not check, before anything was produced).
    wbits = 16 + zlib.MAX_WBITS if encoding != "deflate" else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    produced = 0
    seen_input = False
    for chunk in chunks:
        pending = chunk
        while pending:
            try:
                piece = inflater.decompress(pending, cap + 1 - produced)
            except zlib.error as problem:
                if encoding == "deflate" and not seen_input:
                    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                    seen_input = True
                    continue
                raise ValueError(f"the {encoding} body is corrupt ({problem})") from None
            seen_input = True
            produced += len(piece)
            if piece:
                yield piece
            if produced > cap:
                return
            pending = inflater.unconsumed_tail
    tail = inflater.flush()
    if tail:
        yield tail[: cap + 1 - produced]
