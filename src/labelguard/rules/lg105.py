"""LG105 on the merged summary: class names of the annotations that differ only by case,
whitespace or punctuation.
"""

from __future__ import annotations

from labelguard.core.registry import FixExample, define
from labelguard.rules._examples import image, voc_xml
from labelguard.core.rules import Example, rule
from labelguard.core.spec import LabelSpec, normalise_name
from labelguard.core.summary import Summary
from labelguard.core.text import plural, show_name

CLASS_VARIANTS = define(
    "LG105", "class-name-variants", "warning",
    summary="class names that differ only by case, whitespace or punctuation",
    why="""
"dog" and "Dog " are different keys: one of them is unknown to the class list (KeyError),
or both get separate indices and the model learns two classes for one concept.""",
    bad="names found: 'dog' (812 objects), 'Dog ' (3 objects)",
    good="names found: 'dog' (815 objects)",
    fix="Rename the variants to one spelling (`labelguard fix rename --map \"Dog =dog\"`).",
    scope="dataset",
    fix_safety="unsafe", fix_command="labelguard fix rename",
    fix_examples=(FixExample(
        "VOC objects named 'dog' in one file and 'Dog ' in another -> `--map \"Dog =dog\"`",
        lambda: {"Annotations/a.xml": voc_xml([("dog", (1, 1, 9, 9))]), "JPEGImages/a.jpg": image(),
                 "Annotations/b.xml": voc_xml([("Dog ", (1, 1, 9, 9))], filename="b.jpg"), "JPEGImages/b.jpg": image()},
        "rename", {"mapping": {"Dog ": "dog"}},
        lambda: {"Annotations/b.xml": voc_xml([("dog", (1, 1, 9, 9))], filename="b.jpg")}),),
)


EXAMPLES = (
    Example(True, "VOC objects named 'dog' in one file and 'Dog ' in another",
            lambda: {"Annotations/a.xml": voc_xml([("dog", (1, 1, 9, 9))]), "JPEGImages/a.jpg": image(),
                     "Annotations/b.xml": voc_xml([("Dog ", (1, 1, 9, 9))], filename="b.jpg"),
                     "JPEGImages/b.jpg": image()}),
    Example(False, "VOC objects named 'dog' and 'cat'",
            lambda: {"Annotations/a.xml": voc_xml([("dog", (1, 1, 9, 9))]), "JPEGImages/a.jpg": image(),
                     "Annotations/b.xml": voc_xml([("cat", (1, 1, 9, 9))], filename="b.jpg"),
                     "JPEGImages/b.jpg": image()}),
)


@rule(CLASS_VARIANTS, "dataset", EXAMPLES)
def class_name_variants(summary: Summary, spec: LabelSpec):
    groups: dict[str, list[str]] = {}
    for name in sorted(summary.class_objects):
        groups.setdefault(normalise_name(name), []).append(name)
    findings = []
    for key, names in groups.items():
        if len(names) < 2:
            continue
        # Commonest first, ties by name: never the order the files' summaries were merged in.
        names.sort(key=lambda n: (-summary.class_objects[n], n))
        listing = ", ".join(f"{n!r} ({plural(summary.class_objects[n], 'object')})" for n in names)
        canonical = _spelling(key, names, spec)
        findings.append(CLASS_VARIANTS.finding(
            None,
            f"class names differ only by case, whitespace or punctuation: {listing}",
            hint="Rename them to one spelling: `labelguard fix rename --map \""
            + ",".join(f"{show_name(n)}={canonical}" for n in names if n != canonical) + "\"`.",
            names=names,
            canonical=canonical,
        ))
    return findings


def _spelling(key: str, names: list[str], spec: LabelSpec) -> str:
    """The name variants should become: the spec's spelling when it has one, else the
    commonest variant without blanks at its ends (``names`` are sorted commonest first)."""
    declared = [c for c in spec.classes or () if normalise_name(c) == key]
    if declared:
        return next((n for n in names if n in declared), declared[0])
    return min(names, key=lambda n: n != n.strip())
