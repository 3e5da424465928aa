"""How the spool compresses what it seals: not at all, zlib or xz (both in the standard library).

A sealed segment and its columns file are written compressed whole at the seal
(:mod:`grstats.collector.spool`, :mod:`grstats.collector.columns`); the magic at the start of
each file names the codec, so that files of any codec, and those of a collector that did not
compress, read alike. The open segment is never compressed: each record must reach the disk
on its own. What each codec costs and saves is in ``docs/benchmarks.md`` ("The spool's
bytes"): a generated day's sealed segments are 21 times smaller with xz (LZMA preset 0), at
about 45 MB/s of one core, and 15 times with zlib (level 6), at about 95 MB/s.

xz is written with no check of its own (``CHECK_NONE``): the spool's CRC-32s cover what it
holds (each frame's, the columns file's).
"""

from __future__ import annotations

import enum
import lzma
import zlib
from typing import Protocol

#: zlib's level: 6, its default (level 9 saves under 1% more at 60% more CPU).
ZLIB_LEVEL = 6
#: xz's preset: 0, the fastest (presets 1 to 6 save under 1% on spool data, at 1.2 to 7
#: times the CPU).
XZ_PRESET = 0
#: What a failing decompression raises.
ERRORS = (zlib.error, lzma.LZMAError)


class Compression(enum.Enum):
    """How sealed segments and their columns files are stored."""

    #: As written (the format of every collector before compression).
    NONE = "none"
    #: zlib (deflate), level :data:`ZLIB_LEVEL`.
    ZLIB = "zlib"
    #: xz (LZMA), preset :data:`XZ_PRESET`: the fewest bytes, the default.
    XZ = "xz"


class Compressor(Protocol):
    """A stream compressor: ``compress`` pieces, then ``flush`` once."""

    def compress(self, data: bytes, /) -> bytes:
        """Return the compressed bytes ready so far for ``data``."""

    def flush(self) -> bytes:
        """Return the rest of the stream."""


def compressor(compression: Compression) -> Compressor:
    """Return a new stream compressor for ``compression`` (not NONE)."""
    if compression is Compression.ZLIB:
        return zlib.compressobj(ZLIB_LEVEL)
    if compression is Compression.XZ:
        return lzma.LZMACompressor(lzma.FORMAT_XZ, lzma.CHECK_NONE, XZ_PRESET)
    raise ValueError(f"compression: {compression!r} has no compressor")


def compress(compression: Compression, data: bytes) -> bytes:
    """Return ``data`` compressed whole with ``compression`` (not NONE)."""
    packer = compressor(compression)
    return packer.compress(data) + packer.flush()


def decompress(compression: Compression, data: bytes) -> bytes:
    """Return the one whole stream ``data`` decompressed with ``compression`` (not NONE).

    Raises:
        ValueError: the stream is corrupt, cut short or followed by other bytes.
    """
    plain, problem = decompress_prefix(compression, data)
    if problem is not None:
        raise ValueError(problem)
    return plain


def decompress_prefix(
    compression: Compression, data: bytes, step: int = 16 * 1024
) -> tuple[bytes, str | None]:
    """Return the one stream ``data`` decompressed, and None, or what came before a fault.

    Decompresses at most ``step`` bytes at a time, so that a stream damaged further on
    still gives what precedes the damage (to within ``step`` bytes), with the problem: the
    stream is damaged, cut short, or followed by other bytes.
    """
    pieces: list[bytes] = []
    name = compression.value
    try:
        if compression is Compression.ZLIB:
            inflate = zlib.decompressobj()
            pending = data
            while pending and not inflate.eof:
                pieces.append(inflate.decompress(pending, step))
                pending = inflate.unconsumed_tail
            pieces.append(inflate.flush())
            eof, unused = inflate.eof, inflate.unused_data
        else:
            unpacker = lzma.LZMADecompressor(lzma.FORMAT_XZ)
            pieces.append(unpacker.decompress(data, step))
            while not unpacker.eof and not unpacker.needs_input:
                pieces.append(unpacker.decompress(b"", step))
            eof, unused = unpacker.eof, unpacker.unused_data
    except ERRORS as exc:
        return b"".join(pieces), f"{name}: the compressed stream is damaged ({exc})"
    if not eof:
        return b"".join(pieces), f"{name}: the compressed stream is cut short"
    if unused:
        return b"".join(pieces), f"{name}: {len(unused)} bytes follow the compressed stream"
    return b"".join(pieces), None
