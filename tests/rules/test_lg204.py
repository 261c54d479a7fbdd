"""LG204 mask-values-not-integer: non-integer or non-finite mask values (2.5, NaN).

Its rules' own examples (``src/labelguard/rules/lg204.py``), audited on real files;
``python tests/code_markers.py LG204`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG204")
def test_lg204_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
