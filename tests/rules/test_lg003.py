"""LG003 listed-file-missing: a file named by a list or annotation does not exist.

Its rules' own examples (``src/labelguard/rules/lg003.py``), audited on real files;
``python tests/code_markers.py LG003`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG003")
def test_lg003_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
