"""LG601 token-id-past-embedding: a token id is >= the model's embedding rows (vocab_size).

Its rules' own examples (``src/labelguard/rules/lg601.py``), audited on real files;
``python tests/code_markers.py LG601`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG601")
def test_lg601_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
