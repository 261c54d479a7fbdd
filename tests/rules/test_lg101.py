"""LG101 class-name-not-in-spec: a class name is not in the spec.

Its rules' own examples (``src/labelguard/rules/lg101.py``), audited on real files;
``python tests/code_markers.py LG101`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG101")
def test_lg101_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
