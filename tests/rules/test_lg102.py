"""LG102 class-id-out-of-range: an integer class id is >= num_classes.

Its rules' own examples (``src/labelguard/rules/lg102.py``), audited on real files;
``python tests/code_markers.py LG102`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG102")
def test_lg102_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
