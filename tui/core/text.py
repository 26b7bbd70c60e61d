"""One sanitising path for text from the server: what is parsed, printed, dumped or notified.

- `loads()` parses JSON from the server: `NaN`/`Infinity` become null, and lone surrogates
  (`"\\ud800"`, valid JSON but no text: printing it raises UnicodeEncodeError) become U+FFFD, at
  parse time, so nothing downstream ever holds one.
- `literal()` makes a string safe to show on one line, as characters, for the dashboard and
  the CLI alike: C0/C1 controls, bidi overrides and isolates, zero-width and other invisible
  characters are shown (as control pictures, `␛`, or as escapes, `\\x1b`), so a title can
  neither drive the terminal nor reorder or hide what is shown around it (`H\\u202egnp.exe`).
- `dumps()` is `json.dumps` that keeps non-ASCII text readable but escapes those same characters,
  so JSON output is valid, parseable, and carries no raw control for a terminal to act on.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from typing import Any

#: DEL and C1 controls, bidi embeddings, overrides, isolates and marks, zero-width and invisible
#: formatting characters, BOM, lone surrogates, the interlinear annotation and object
#: replacement controls.
_INVISIBLE = (
    "\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff"
)
#: Those and the C0 controls (tab and newline included: one record is one line)
UNSAFE = re.compile(f"[\x00-\x1f{_INVISIBLE}]")
#: Without C0 controls, which json.dumps escapes inside strings itself (and whose raw newlines
#: outside strings are its indentation)
_JSON_UNSAFE = re.compile(f"[{_INVISIBLE}]")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: A JSON text that may hold a surrogate escape: only those are walked again
_SURROGATE_ESCAPE = re.compile(r"\\[uU][dD][89a-fA-F]")


def loads(text: str | bytes) -> Any:
    """Parse server JSON: non-finite numbers become None, lone surrogates U+FFFD."""
    if isinstance(text, bytes | bytearray):
        text = text.decode("utf-8", errors="replace")
    data = _DECODER.decode(text)
    if _SURROGATE_ESCAPE.search(text):
        data = _fix(data)
    return data


def _no_constant(_name: str) -> None:
    return None


#: One decoder for every parse (json.loads with an argument builds a new one each call)
_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _fix(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_fix(v) for v in value]
    if isinstance(value, dict):
        return {_fix(k): _fix(v) for k, v in value.items()}
    return value


#: Shown as a space: what is shown is one line
_SPACE_LIKE = frozenset("\t\n\r\v\f")
#: Dropped: terminals and Rich disagree on the width of joined emoji
_DROP = frozenset("\u200c\u200d")
#: Shown, whatever the form: format characters (bidi, zero-width, BOM), surrogates, private use,
#: line and paragraph separators
_SHOWN_CATEGORIES = frozenset({"Cf", "Cs", "Co", "Zl", "Zp"})


@lru_cache(maxsize=8192)
def literal(text: str | None, *, escapes: bool = False) -> str:
    """Untrusted text (a title, an error) made safe to show on one line, *as characters*.

    Markup like `[bold]` stays literal text (the result is for `rich.text.Text(...)` /
    `textual.content.Content(...)` or a plain print, never for a markup parser). No control or
    invisible character is left to drive the terminal or to reorder or hide the line: tabs and
    newlines become spaces, joiners are dropped, and every other C0/C1 control, DEL, format
    character (bidi, zero-width), surrogate, private-use character or separator is shown in its
    place: for the dashboard as its control picture (`␛`, `␡`) or `�`; with `escapes` (the
    CLI's plain text, which is copied and searched) as an escape, `\\x1b`, `\\u202e`.
    """
    if not text:
        return ""
    if text.isprintable():  # no control, format, separator or private-use character
        return text
    out: list[str] = []
    for ch in text:
        code = ord(ch)
        if ch in _SPACE_LIKE:
            out.append(" ")
        elif ch in _DROP:
            continue
        elif code < 0x20 or 0x7F <= code < 0xA0 or unicodedata.category(ch) in _SHOWN_CATEGORIES:
            out.append(_escape(code) if escapes else _picture(code))
        else:
            out.append(ch)
    return "".join(out)


def _escape(code: int) -> str:
    return (
        f"\\x{code:02x}"
        if code < 0x100
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )


def _picture(code: int) -> str:
    """A C0 control's control picture (U+2400 + code), ␡ for DEL, else `�`."""
    return chr(0x2400 + code) if code < 0x20 else "␡" if code == 0x7F else "\ufffd"


def _json_escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def dumps(value: Any, **kw: Any) -> str:
    """JSON with readable non-ASCII text and every control or invisible character escaped."""
    return _JSON_UNSAFE.sub(_json_escape, json.dumps(value, ensure_ascii=False, **kw))


def plain(text: str, limit: int | None = None) -> str:
    """The text for a notification (OSC 9, notify-send): controls and invisible characters
    removed, not escaped."""
    out = UNSAFE.sub(" ", text)
    return out if limit is None else out[:limit]
