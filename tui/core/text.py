"""One sanitising path for text from the server: what is parsed, printed, dumped or notified.

- `loads()` parses JSON from the server: `NaN`/`Infinity` become null, and lone surrogates
  (`"\\ud800"`, valid JSON but no text: printing it raises UnicodeEncodeError) become U+FFFD, at
  parse time, so nothing downstream ever holds one.
- `visible()` makes a string safe for a terminal: C0/C1 controls, bidi overrides and isolates,
  and zero-width characters are shown as `\\xNN` / `\\uNNNN`, so a title can neither drive the
  terminal nor reorder or hide what is printed around it (`H\\u202egnp.exe`).
- `dumps()` is `json.dumps` that keeps non-ASCII text readable but escapes those same characters,
  so JSON output is valid, parseable, and carries no raw control for a terminal to act on.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: DEL and C1 controls, bidi embeddings, overrides, isolates and marks, zero-width and invisible
#: formatting characters, BOM, lone surrogates, the interlinear annotation and object
#: replacement controls.
_INVISIBLE = (
    "\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
    "\ufff9-\ufffb\ud800-\udfff"
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


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible(text: str) -> str:
    """The text for a terminal line: newlines and tabs as spaces, every other control or
    invisible character shown as an escape."""
    text = text.replace("\n", " ").replace("\t", " ")
    return UNSAFE.sub(_escape, text)


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
