"""Reading text files so that a bad byte names its file: every data reader goes through here.

A ``UnicodeDecodeError`` says which byte is wrong but not in which file; in a
pipeline that reads dozens of files that is not enough to fix anything.
:func:`read_text` reads a whole file as UTF-8 and, on a bad byte, raises
:class:`TextDecodeError` naming the file, the line and the byte; readers that hand
the file to another library (pandas, ``json``) wrap its error with
:func:`decode_error`.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["TextDecodeError", "read_text", "decode_error"]


class TextDecodeError(ValueError):
    """A data file that is not valid UTF-8 (the message names the file, line and byte)."""


def decode_error(path: str | Path, exc: UnicodeDecodeError, data: bytes | None = None) -> TextDecodeError:
    """A :class:`TextDecodeError` naming ``path`` (and the line, when the raw ``data`` is at hand)."""
    where, at = "", ""
    if data is not None and isinstance(exc.object, (bytes, bytearray)) and len(exc.object) in (len(data), len(data) - 3):
        line = exc.object.count(b"\n", 0, exc.start) + 1  # exc.object: the bytes decoded (less a BOM)
        where, at = f", line {line}", f" at offset {exc.start + len(data) - len(exc.object)}"
    # (without the whole file's bytes, exc.start is an offset into some chunk: not reported)
    bad = exc.object[exc.start : exc.start + 1].hex() if isinstance(exc.object, (bytes, bytearray)) else "?"
    return TextDecodeError(f"{path}{where}: not UTF-8 text (byte 0x{bad}{at}: {exc.reason}); save the file as UTF-8")


def read_text(path: str | Path) -> str:
    """The file's text (UTF-8; a leading BOM is dropped); :class:`TextDecodeError` naming it on a bad byte."""
    path = Path(path)
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise decode_error(path, exc, data) from None
