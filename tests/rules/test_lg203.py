"""LG203 color-mask: a colour mask where class-index masks are expected.

Its rules' own examples (``src/labelguard/rules/lg203.py``), audited on real files;
``python tests/code_markers.py LG203`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG203")
def test_lg203_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
