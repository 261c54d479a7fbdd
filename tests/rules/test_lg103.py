"""LG103 class-id-negative: a negative class id that is not the ignore index.

Its rules' own examples (``src/labelguard/rules/lg103.py``), audited on real files;
``python tests/code_markers.py LG103`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG103")
def test_lg103_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
