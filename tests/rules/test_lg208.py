"""LG208 labels-one-based: labels look 1-based: no value 0 anywhere while the spec expects background 0.

Its rules' own examples (``src/labelguard/rules/lg208.py``), audited on real files;
``python tests/code_markers.py LG208`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG208")
def test_lg208_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
