"""partial_json: what a streamed JSON answer says so far, never more than the whole says."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentscript.runtime.partial_json import partial_json

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def is_prefix_of(part: Any, whole: Any) -> bool:
    """`part` is what a cut-short text of `whole` may say: fewer entries, shorter strings."""
    if isinstance(whole, dict):
        return isinstance(part, dict) and all(
            key in whole and is_prefix_of(value, whole[key]) for key, value in part.items()
        )
    if isinstance(whole, list):
        return (
            isinstance(part, list)
            and len(part) <= len(whole)
            and all(is_prefix_of(p, w) for p, w in zip(part, whole, strict=False))
        )
    if isinstance(whole, str):
        return isinstance(part, str) and whole.startswith(part)
    return part == whole


def test_fields_appear_as_they_arrive() -> None:
    assert partial_json('{"label": "bil') == {"label": "bil"}
    assert partial_json('{"label": "billing", "urg') == {"label": "billing"}
    assert partial_json('{"label": "billing", "urgent": tr') == {"label": "billing"}
    assert partial_json('{"items": [1, 2') == {"items": [1]}
    assert partial_json('{"items": [1, 2]') == {"items": [1, 2]}
    assert partial_json("") is None
    assert partial_json('{"a": "x\\') == {}


@given(values, st.data())
def test_every_cut_of_an_answer_reads_as_a_prefix_of_it(value: Any, data: st.DataObject) -> None:
    text = json.dumps(value)
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    part = partial_json(text[:cut])
    assert part is None or is_prefix_of(part, value)
    # Whole, an object or a list reads as itself; a bare number may still go on.
    assert partial_json(text) == value or not isinstance(value, dict | list)
