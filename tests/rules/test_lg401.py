"""LG401 class-imbalance-extreme: class frequency is extremely imbalanced.

Its rules' own examples (``src/labelguard/rules/lg401.py``), audited on real files;
``python tests/code_markers.py LG401`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG401")
def test_lg401_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
