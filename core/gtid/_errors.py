"""Errors of the GTID package.

Tree::

    ValueError
    └── GtidError              anything wrong with GTID text or values
        └── GtidParseError     malformed text; names the bad token and its offset
"""

from __future__ import annotations


class GtidError(ValueError):
    """A GTID, GTID set, uuid, tag or GNO that MySQL would reject."""


class GtidParseError(GtidError):
    """Malformed GTID (set) text: MySQL's ER_MALFORMED_GTID_SET_SPECIFICATION.

    Attributes:
        text: the whole text that was parsed.
        offset: 0-based character offset of the bad token in ``text``.
        token: the bad token (at most 40 characters of it), ``''`` at the end of the text.
        reason: what was expected there.
    """

    def __init__(self, text: str, offset: int, reason: str) -> None:
        self.text = text
        self.offset = offset
        self.token = _token_at(text, offset)
        self.reason = reason
        shown = repr(self.token) if self.token else "end of text"
        super().__init__(f"malformed GTID set: {reason} at offset {offset}, found {shown}")


def _token_at(text: str, offset: int) -> str:
    """Return the run of characters at ``offset`` up to the next separator or whitespace."""
    end = offset
    while end < len(text) and end - offset < 40 and text[end] not in ",: \t\n\r\f\v":
        end += 1
    if end == offset and offset < len(text):
        end += 1  # the separator itself is the bad token
    return text[offset:end]
