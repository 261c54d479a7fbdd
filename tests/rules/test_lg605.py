"""LG605 tokenizer-larger-than-embedding: tokenizer and model disagree: the tokenizer's vocabulary (with added tokens) is larger than the embedding, or special token ids fall outside it.

Its rules' own examples (``src/labelguard/rules/lg605.py``), audited on real files;
``python tests/code_markers.py LG605`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG605")
def test_lg605_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
