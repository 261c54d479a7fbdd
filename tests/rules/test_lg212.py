"""LG212 instance-mask-problem: instance-id masks where class ids are expected, an id on
separate objects, ids past the dtype, a background other than 0.

Its rules' own examples (``src/labelguard/rules/lg212.py``), audited on real files;
``python tests/code_markers.py LG212`` lists its other tests (``tests/test_instances.py``)."""

from rule_cases import examples_of, proves


@examples_of("LG212")
def test_lg212_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)
