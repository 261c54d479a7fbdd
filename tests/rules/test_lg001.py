"""LG001 file-unreadable: a file cannot be read, decoded or parsed.

Its rules' own examples (``src/labelguard/rules/lg001.py``), audited on real files;
``python tests/code_markers.py LG001`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG001")
def test_lg001_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
