"""Text bound for a terminal: control characters escaped, symbols the encoding lacks spelled out.

Column names, group values, file names and texts printed by the command line
come from the user's files.  An escape sequence among them (``ESC ] 0 ;``
sets the window title, ``ESC [ 2 J`` clears the screen) must reach the
terminal as visible text, never as a command; and a console whose encoding
has no ``≥`` (cp1252, ASCII) must still get every line.
"""

from __future__ import annotations

import re

__all__ = ["escape_controls", "encodable"]

# C0 controls but tab and newline, DEL, the C1 controls, and the Unicode line
# and paragraph separators and bidirectional overrides (they reorder what
# follows them on the line)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

# our own symbols, spelled in ASCII where the encoding lacks them
_ASCII = str.maketrans({"≥": ">=", "≤": "<=", "…": "...", "—": "-", "–": "-", "×": "x",
                        "→": "->", "α": "alpha", "ρ": "rho", "τ": "tau"})


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every control character but tab and newline written as ``\\xNN``."""
    return _CONTROLS.sub(_escape, text)


def encodable(text: str, encoding: str | None) -> str:
    """``text`` as it can be written in ``encoding``: our symbols in ASCII, others escaped.

    Text the encoding holds comes back unchanged.
    """
    enc = encoding or "utf-8"
    try:
        text.encode(enc)
        return text
    except (UnicodeEncodeError, LookupError):
        pass
    text = text.translate(_ASCII)
    try:
        return text.encode(enc, "backslashreplace").decode(enc)
    except LookupError:
        return text.encode("ascii", "backslashreplace").decode("ascii")
