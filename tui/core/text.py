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
import math
import re
import unicodedata
from functools import lru_cache
from json.scanner import make_scanner
from typing import Any, cast

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


#: The most objects and lists, and commas, an answer may hold (counted in its text, strings
#: included: an overcount). What a body's bytes parse into is bounded by them: 60 MB of `{},`
#: parsed into 1.7 GB; a real answer of 10,000 sessions holds about 60,000 objects.
MAX_CONTAINERS = 2_000_000
MAX_COMMAS = 8_000_000


class Refused(ValueError):
    """JSON that parses but is refused, said in words fit for users (no server text in them)."""


class TooMany(Refused):
    """JSON whose values would take far more memory than its bytes (see MAX_CONTAINERS)."""


def loads(text: str | bytes) -> Any:
    """Parse server JSON: non-finite numbers become None, lone surrogates U+FFFD. JSON nested
    deeper than the parser's recursion allows raises ValueError, as any other bad JSON (the
    parser's RecursionError is no ValueError: callers would let it through as a crash), and so
    do a number of more digits than Python converts and JSON of more values than
    MAX_CONTAINERS / MAX_COMMAS (TooMany): Refused, each, saying why."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8", errors="replace")
    if len(text) > MAX_CONTAINERS:  # (counted only where they could be that many)
        containers = text.count("{") + text.count("[")
        if containers > MAX_CONTAINERS or text.count(",") > MAX_COMMAS:
            raise TooMany(
                f"the answer holds more than {MAX_CONTAINERS:,} objects and lists or "
                f"{MAX_COMMAS:,} values; refused"
            )
    try:
        try:
            # the decoder's scanner straight away: a text that is one value and nothing else
            # (what a server sends); anything else (white space around it, more after it, no
            # value) is read by decode(), which says why it is not JSON as json does
            data, end = _SCAN(text, 0)
            if end != len(text):
                data = _DECODER.decode(text)
        except StopIteration:
            data = _DECODER.decode(text)
        if "\\" in text and _SURROGATE_ESCAPE.search(text):  # (most texts hold no escape)
            data = _fix(data)
    except RecursionError:
        raise Refused("JSON nested too deeply") from None
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # (sys.get_int_max_str_digits)
            raise Refused("JSON with a number too long to read") from None
        raise
    return data


def _no_constant(_name: str) -> None:
    return None


#: One decoder for every parse (json.loads with an argument builds a new one each call)
_DECODER = json.JSONDecoder(parse_constant=_no_constant)
#: Its scanner (what its decode() calls after skipping white space; json.scanner's, in C)
_SCAN = make_scanner(cast(Any, _DECODER))  # (typeshed types its argument as a scanner)


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


#: What ends a line, wherever a person reads one: `\r\n`, `\n`, a lone `\r` (which a terminal
#: would use to write over the start of the line), and the Unicode line and paragraph separators
_LINE_BREAK = re.compile("\r\n|[\n\r\u2028\u2029\x0b\x0c\x85]")


def lines_of(text: str | None) -> list[str]:
    """Untrusted text as the lines a person must see to decide on it (a command to approve, a
    question): every line break kept as a line (trailing blank lines dropped), nothing else
    read (each line goes through `literal` where it is shown)."""
    if not text:
        return []
    lines = _LINE_BREAK.split(text)
    while len(lines) > 1 and not lines[-1].strip():
        lines.pop()
    return lines


def first_line(text: str | None) -> str:
    """Untrusted text for a one-line cell: its first line that says something, and how many
    lines more there are, never hidden (`echo cleaning (+1 line)`)."""
    lines = [line for line in lines_of(text) if line.strip()]
    if not lines:
        return ""
    more = len(lines) - 1
    return lines[0].strip() + (f" (+{more} line{'s' if more != 1 else ''})" if more else "")


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
    """JSON with readable non-ASCII text and every control or invisible character escaped.

    `indent=2` alone (what `status --json` prints) is written by `_indented`, byte for byte
    what `json.dumps` writes, in a fraction of the time: the standard library indents with its
    pure-Python encoder (its C encoder has no indentation), which a large fleet's status
    waits on."""
    if kw.keys() == {"indent"} and kw["indent"] == 2:
        out = _indented(value)
    else:
        out = json.dumps(value, ensure_ascii=False, **kw)
    return _JSON_UNSAFE.sub(_json_escape, out)


_encode_str = json.encoder.encode_basestring  # the C function where the accelerator exists


def _number(v: int | float) -> str:
    """A number as json.dumps writes it (allow_nan: NaN, Infinity, -Infinity)."""
    if isinstance(v, int):
        return int.__repr__(v)
    if v != v:
        return "NaN"
    if v in (math.inf, -math.inf):
        return "Infinity" if v > 0 else "-Infinity"
    return float.__repr__(v)


def _indented(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, indent=2)`, the same text, made faster: one
    function call per container, not a generator step per token. Anything but JSON's own types
    (str, int, float, bool, None, dict with str keys, list, tuple) goes to json.dumps for its
    error or its conversion, exactly as the standard library would treat it."""
    out: list[str] = []
    put = out.append
    esc = _encode_str
    words = {None: "null", True: "true", False: "false"}

    def walk(o: Any, pad: str) -> None:
        if isinstance(o, dict):
            if not o:
                put("{}")
                return
            inner = pad + "  "
            sep = "{\n" + inner
            for k, v in o.items():
                if type(k) is not str:
                    raise _Fallback
                t = type(v)
                if t is str:
                    put(sep + esc(k) + ": " + esc(v))
                elif v is None or t is bool:
                    put(sep + esc(k) + ": " + words[v])
                elif t is int or t is float:
                    put(sep + esc(k) + ": " + _number(v))
                else:
                    put(sep + esc(k) + ": ")
                    walk(v, inner)
                sep = ",\n" + inner
            put("\n" + pad + "}")
        elif isinstance(o, list | tuple):
            if not o:
                put("[]")
                return
            inner = pad + "  "
            sep = "[\n" + inner
            for v in o:
                if type(v) is str:
                    put(sep + esc(v))
                else:
                    put(sep)
                    walk(v, inner)
                sep = ",\n" + inner
            put("\n" + pad + "]")
        elif isinstance(o, str):
            put(esc(o))
        elif o is None or o is True or o is False:
            put(words[o])
        elif isinstance(o, int | float):
            put(_number(o))
        else:
            raise _Fallback

    try:
        walk(value, "")
    except (_Fallback, RecursionError):
        # keys to convert, objects to refuse, a cycle: the standard library's own answer
        return json.dumps(value, ensure_ascii=False, indent=2)
    return "".join(out)


class _Fallback(Exception):
    """A value `_indented` leaves to json.dumps."""


def plain(text: str, limit: int | None = None) -> str:
    """The text for a notification (OSC 9, notify-send): controls and invisible characters
    removed, not escaped; cut to `limit` characters, a summary's `(+N lines)` kept."""
    out = UNSAFE.sub(" ", text)
    if limit is None or len(out) <= limit:
        return out
    return keep_count(out, limit) or out[:limit]


MORE_LINES = re.compile(r" \(\+[\d,]+ lines?\)$")
"""How `first_line` ends a summary of several lines."""


def keep_count(text: str, limit: int) -> str | None:
    """`text` (longer than `limit`) cut to `limit` characters with an ellipsis, keeping the
    `(+N lines)` a summary of several lines ends with (the hidden lines are what a person must
    not miss: `echo cle… (+1 line)`); None when it has none, or `limit` leaves no room."""
    more = MORE_LINES.search(text)
    if more is None or limit - len(more.group(0)) < 6:
        return None
    return text[: limit - len(more.group(0)) - 1] + "…" + more.group(0)
