"""LG301 box-degenerate-or-outside: a box is degenerate (xmin >= xmax, ymin >= ymax) or lies outside the image.

Its rules' own examples (``src/labelguard/rules/lg301.py``), audited on real files;
``python tests/code_markers.py LG301`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG301")
def test_lg301_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
