"""LG002 image-without-label: an image has no annotation/mask, or an annotation/mask has no image.

Its rules' own examples (``src/labelguard/rules/lg002.py``), audited on real files;
``python tests/code_markers.py LG002`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG002")
def test_lg002_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
