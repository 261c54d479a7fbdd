"""LG213 sample-shape-differs: a mask's shape differs from the shape nearly all the others
of its dataset share.

Its rules' own examples (``src/labelguard/rules/lg213.py``), audited on real files;
``python tests/code_markers.py LG213`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG213")
def test_lg213_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
