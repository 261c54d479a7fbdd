"""LG205 mask-empty: a mask contains only background or ignore values.

Its rules' own examples (``src/labelguard/rules/lg205.py``), audited on real files;
``python tests/code_markers.py LG205`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG205")
def test_lg205_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
