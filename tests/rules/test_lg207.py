"""LG207 mask-layout-unexpected: unexpected mask layout: several channels, or a wider dtype than needed.

Its rules' own examples (``src/labelguard/rules/lg207.py``), audited on real files;
``python tests/code_markers.py LG207`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG207")
def test_lg207_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
