"""LG602 sequence-longer-than-positions: a sequence is longer than the model's positions (max_position_embeddings, less the padding offset of RoBERTa-style models).

Its rules' own examples (``src/labelguard/rules/lg602.py``), audited on real files;
``python tests/code_markers.py LG602`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG602")
def test_lg602_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
