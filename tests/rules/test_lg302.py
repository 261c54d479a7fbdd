"""LG302 yolo-coordinates-not-normalised: YOLO coordinates are not normalised to [0, 1].

Its rules' own examples (``src/labelguard/rules/lg302.py``), audited on real files;
``python tests/code_markers.py LG302`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG302")
def test_lg302_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
