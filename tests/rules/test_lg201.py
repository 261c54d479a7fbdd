"""LG201 mask-value-outside-spec: a mask value is outside the spec (>= num_classes and not the ignore index).

Its rules' own examples (``src/labelguard/rules/lg201.py``), audited on real files;
``python tests/code_markers.py LG201`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG201")
def test_lg201_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
