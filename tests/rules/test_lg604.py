"""LG604 label-outside-head: a sequence label id is outside the model's labels (num_labels, the dataset's ClassLabel) other than the ignore index (-100).

Its rules' own examples (``src/labelguard/rules/lg604.py``), audited on real files;
``python tests/code_markers.py LG604`` lists its other tests."""

from rule_cases import examples_of, proves


@examples_of("LG604")
def test_lg604_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
