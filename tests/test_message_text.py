"""One wording policy for counts and lists (labelguard.core.text)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from labelguard.core.text import did_you_mean, noun, plural, shorten, show_name, verb


def test_plurals():
    assert [plural(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]
    assert plural(2, "class") == "2 classes" and plural(3, "box") == "3 boxes"
    assert plural(2, "entry") == "2 entries" and plural(2, "key") == "2 keys"
    assert plural(4, "class value") == "4 class values" and noun(1, "class value") == "class value"
    assert [verb(n, "is") for n in (1, 2)] == ["is", "are"]
    assert [verb(n, "occurs") for n in (1, 3)] == ["occurs", "occur"]
    assert [verb(2, word) for word in ("applies", "matches", "fixes", "passes", "uses", "shares")] == [
        "apply", "match", "fix", "pass", "use", "share"]
    assert [verb(2, word) for word in ("lies", "dies")] == ["lie", "die"]


def test_did_you_mean():
    assert did_you_mean(["dog"]) == "; did you mean 'dog'?"
    assert did_you_mean(["dog", "dog "]) == "; did you mean 'dog' or 'dog '?"
    assert did_you_mean([]) == ""


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


def test_a_quoted_name_escapes_its_own_quotes_and_backslashes():
    # Unescaped, the name "a'b " (quoted for its blank) and the name "'a'b '" (bare) both showed as 'a'b '.
    assert show_name("a'b ") == "'a\\'b '" and show_name("'dog '") == "'\\'dog \\''"
    assert show_name("a\\ ") == "'a\\\\ '" and show_name("a\x1b ") == "'a\\x1b '"
    assert show_name("it's") == "it's"  # plain, bare: it does not start as a quoted name does
    names = ["a'b ", "'a'b '", "'a'b ", "a\\'b ", "a\\", "'", "a\x1b", "a\\x1b", " '"]
    assert len({show_name(name) for name in names}) == len(names)


def test_byte_sizes_read_as_people_read_them():
    from labelguard.core.text import byte_size

    assert [byte_size(n) for n in (0, 1, 1023, 1024, 8 << 20, 4 << 30, 80 * 10**12)] == [
        "0 bytes", "1 byte", "1,023 bytes", "1.0 KiB", "8.0 MiB", "4.0 GiB", "72.8 TiB"]
    assert byte_size(8 * 10**30) == "about 10^30 bytes"  # a declared shape past a float's range
    assert byte_size(10**400) == "about 10^400 bytes"


def test_quoted_file_content_is_clipped_with_its_length():
    from labelguard.core.text import clipped

    assert clipped("dog") == "dog"
    assert clipped("9" * 5000, 10) == "9999999... (5,000 characters)"
    assert len(clipped("x" * 100_000_000)) < 100
