"""LG206 image-label-geometry-mismatch: image and mask/label geometry differ (size, shape, number of slices).

Its rules' own examples (``src/labelguard/rules/lg206.py``), audited on real files;
``python tests/code_markers.py LG206`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG206")
def test_lg206_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
