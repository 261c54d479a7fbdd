"""LG603 token-type-past-table: a token_type_id is >= type_vocab_size.

Its rules' own examples (``src/labelguard/rules/lg603.py``), audited on real files;
``python tests/code_markers.py LG603`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG603")
def test_lg603_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
