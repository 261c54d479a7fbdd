"""LG303 duplicate-annotation: duplicate boxes or rows in one annotation.

Its rules' own examples (``src/labelguard/rules/lg303.py``), audited on real files;
``python tests/code_markers.py LG303`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG303")
def test_lg303_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
