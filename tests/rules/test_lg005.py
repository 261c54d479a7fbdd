"""LG005 path-escapes-root: a path in a list or annotation escapes the dataset root.

Its rules' own examples (``src/labelguard/rules/lg005.py``), audited on real files;
``python tests/code_markers.py LG005`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG005")
def test_lg005_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
