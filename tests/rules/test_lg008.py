"""LG008 image-truncated: an image or volume the dataset references is truncated or cannot be
decoded.

Its rules' own examples (``src/labelguard/rules/lg008.py``), audited on real files; the
checks of each format, the layouts, the modes and the setting's trust are in
``tests/test_image_integrity.py`` (``python tests/code_markers.py LG008`` lists them)."""

from rule_cases import examples_of, proves


@examples_of("LG008")
def test_lg008_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
