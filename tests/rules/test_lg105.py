"""LG105 class-name-variants: class names that differ only by case, whitespace or punctuation.

Its rules' own examples (``src/labelguard/rules/lg105.py``), audited on real files;
``python tests/code_markers.py LG105`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG105")
def test_lg105_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
