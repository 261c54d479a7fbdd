"""LG202 mask-stored-lossily: a mask is stored lossily (JPEG) or shows compression artifacts along edges.

Its rules' own examples (``src/labelguard/rules/lg202.py``), audited on real files;
``python tests/code_markers.py LG202`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG202")
def test_lg202_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
