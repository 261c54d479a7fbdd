"""One wording policy for counts and lists (labelguard.core.text)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from labelguard.core.text import noun, plural, shorten, show_name, verb


def test_plurals():
    assert [plural(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]
    assert plural(2, "class") == "2 classes" and plural(3, "box") == "3 boxes"
    assert plural(2, "entry") == "2 entries" and plural(2, "key") == "2 keys"
    assert plural(4, "class value") == "4 class values" and noun(1, "class value") == "class value"
    assert [verb(n, "is") for n in (1, 2)] == ["is", "are"]
    assert [verb(n, "occurs") for n in (1, 3)] == ["occurs", "occur"]


def test_shorten():
    assert shorten(["a", "b", "c"]) == "a, b, c"
    assert shorten(range(10), 3) == "0, 1, 2 and 7 more"
    assert shorten([3, 4, 5], 2, what="value") == "3, 4 and 1 more value"
    assert shorten(["x y", "z"], 1, repr, sep="; ", what="row") == "'x y'; and 1 more row"
    assert shorten(["a", "b"], 2, total=50) == "a, b and 48 more"
    assert shorten([], 3) == ""


@given(st.lists(st.integers(), max_size=40), st.integers(min_value=1, max_value=10))
def test_shorten_lists_at_most_limit_items_and_counts_the_rest(items, limit):
    text = shorten(items, limit, lambda v: f"<{v}>")
    assert text.count("<") == min(limit, len(items))
    rest = len(items) - limit
    assert text.endswith(f" and {rest} more") if rest > 0 else "more" not in text


def test_names_with_blanks_show_their_quotes():
    assert show_name("dog") == "dog" and show_name("hot dog") == "hot dog"
    assert show_name("dog ") == "'dog '" and show_name(" 1") == "' 1'"
    assert show_name("") == "''" and show_name("a\tb") == "'a\\tb'"
