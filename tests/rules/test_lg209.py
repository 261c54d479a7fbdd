"""LG209 binary-mask-scaled: binary masks stored as 0/255 (or another scale) where the spec is {0, 1}.

Its rules' own examples (``src/labelguard/rules/lg209.py``), audited on real files;
``python tests/code_markers.py LG209`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG209")
def test_lg209_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
