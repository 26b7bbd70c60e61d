"""text.dumps(indent=2), which `status --json` and `report` print, is written by a faster
encoder than the standard library's: it must give the very same text for any value."""

from __future__ import annotations

import enum
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tui.core import text

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(), inner, max_size=4)
    ),
    max_leaves=30,
)


def stdlib(value: object) -> str:
    return text._JSON_UNSAFE.sub(text._json_escape, json.dumps(value, ensure_ascii=False, indent=2))


@given(values)
def test_indented_is_the_standard_librarys_text(value: object) -> None:
    assert text.dumps(value, indent=2) == stdlib(value)


class Colour(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@pytest.mark.parametrize(
    "value",
    [
        {1: "int key", None: "none key", 2.5: "float key", False: "bool key"},
        {Colour.RED: Colour.RED, "level": Level.HIGH},
        {"nested": [[], {}, [{}], {"a": []}], "nan": math.nan, "inf": -math.inf},
        "\u202e\x1b[31m\ud800",
    ],
)
def test_odd_keys_and_subclasses_read_as_the_standard_library_reads_them(value: object) -> None:
    assert text.dumps(value, indent=2) == stdlib(value)


def test_what_json_refuses_is_refused_the_same_way() -> None:
    with pytest.raises(TypeError):
        text.dumps({"a": object()}, indent=2)
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        text.dumps(loop, indent=2)
