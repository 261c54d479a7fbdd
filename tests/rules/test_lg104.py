"""LG104 class-never-seen: a class of the spec never occurs in the data.

Its rules' own examples (``src/labelguard/rules/lg104.py``), audited on real files;
``python tests/code_markers.py LG104`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG104")
def test_lg104_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
