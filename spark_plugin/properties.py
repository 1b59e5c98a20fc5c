"""Reading ``spark-defaults.conf`` exactly as Spark does: UTF-8 text in ``java.util.Properties`` format.

Spark loads the file with ``Properties.load(Reader)`` and trims each value, so
the same rules apply here: ``#``/``!`` comment lines, a line ending in an odd
number of backslashes continues on the next (whose leading blanks are
dropped), the key ends at the first unescaped ``=``, ``:`` or blank, and
``\\t \\n \\r \\f \\uXXXX`` escapes. A file that is not UTF-8 text is an error
naming the file and the byte, not a traceback.
"""

from __future__ import annotations

import re
from pathlib import Path

from .errors import ConfigError

__all__ = ["load_properties", "parse_properties"]

_BLANK = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_LINES = re.compile(r"\r\n|\r|\n")


def load_properties(path) -> dict:
    """The properties of a ``spark-defaults.conf`` file, values trimmed as Spark trims them.

    Raises
    ------
    ConfigError
        If the file is missing, not UTF-8 text, or has a malformed ``\\u`` escape.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path} does not exist or is not a file; pass a spark-defaults.conf path.")
    raw = path.read_bytes()
    nul = raw.find(b"\0")
    if nul >= 0:
        raise ConfigError(f"{path} is not a text file (it has a NUL byte at offset {nul}); pass a "
                          "spark-defaults.conf file.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path} is not UTF-8 text (byte {e.start} is {raw[e.start]:#04x}); Spark reads "
                          "spark-defaults.conf as UTF-8. Save it as UTF-8.") from None
    try:
        return {key: value.strip() for key, value in parse_properties(text).items()}
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def parse_properties(text: str) -> dict:
    """Parse ``text`` with the rules of ``java.util.Properties.load(Reader)`` (values untrimmed)."""
    out = {}
    logical = ""  # the logical line being joined; "" at the start of one
    physical = _LINES.split(text)
    for number, raw in enumerate(physical, start=1):
        piece = raw.lstrip(_BLANK)
        if not logical and (not piece or piece[0] in "#!"):
            continue  # a blank or comment line (a continuation of an empty line starts afresh)
        logical += piece
        if _continues(logical) and number < len(physical):
            logical = logical[:-1]
            if not logical and number == len(physical) - 1 and not physical[-1] and not text.endswith("\r\n"):
                out[""] = ""  # Java's quirk: a lone backslash-newline (not CR LF) ending the text
            continue
        if _continues(logical):  # a backslash ending the text continues onto nothing
            logical = logical[:-1]
        _add(out, logical, number)
        logical = ""
    return out


def _add(out: dict, line: str, number: int) -> None:
    key, value = _split(line)
    out[_unescape(key, number)] = _unescape(value, number)


def _continues(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split(line: str) -> tuple[str, str]:
    """Key and value of a logical line: the key ends at the first unescaped '=', ':' or blank."""
    j, escaped = 0, False
    while j < len(line):
        c = line[j]
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in "=:" or c in _BLANK:
            break
        j += 1
    key, rest = line[:j], line[j:]
    rest = rest.lstrip(_BLANK)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANK)
    return key, rest


def _unescape(text: str, line_no: int) -> str:
    out, j = [], 0
    while j < len(text):
        c = text[j]
        j += 1
        if c != "\\" or j == len(text):
            if c != "\\":
                out.append(c)
            continue
        c = text[j]
        j += 1
        if c == "u":
            digits = text[j:j + 4]
            if len(digits) < 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise ConfigError(f"malformed \\uxxxx escape '\\u{digits}' near line {line_no}; write four hex "
                                  "digits, or \\\\u for a literal backslash-u.")
            out.append(chr(int(digits, 16)))
            j += 4
        else:
            out.append(_ESCAPES.get(c, c))
    return "".join(out)
