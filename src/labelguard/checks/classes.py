"""LG1xx: class labels given as names or integer ids (detection, classification).

Only the definitions live here; the format readers of detection and classification data
produce the records these codes are raised on.
"""

from labelguard.core.registry import define

UNKNOWN_CLASS = define(
    "LG101", "class-name-not-in-spec", "error",
    summary="a class name is not in the spec",
    why="""
The dataset looks the name up in its class list: a KeyError, or an index past the head of
the model that becomes "device-side assert triggered" in the loss. A stray annotation file
from another dataset is the classic cause.""",
    bad="<object><name>dgo</name></object>  with classes [cat, dog]",
    good="<object><name>dog</name></object>",
    fix="Rename the class (`labelguard fix rename --map dgo=dog`), add it to the spec, or remove the stray file.",
)

ID_TOO_LARGE = define(
    "LG102", "class-id-out-of-range", "error",
    summary="an integer class id is >= num_classes",
    why="""
cross_entropy / nll_loss index the logits with the id; an id >= num_classes is the
"t >= 0 && t < n_classes" device-side assert on a GPU and "Target N is out of bounds" on the CPU.""",
    bad="YOLO row '3 0.5 0.5 0.2 0.2' with nc: 3",
    good="YOLO row '2 0.5 0.5 0.2 0.2' with nc: 3",
    fix="Set num_classes to the real number of classes, or remap the ids to 0..num_classes-1.",
)

NEGATIVE_ID = define(
    "LG103", "class-id-negative", "error",
    summary="a negative class id that is not the ignore index",
    why="""
-1 is a common "unknown" marker, but losses only skip it when it is their ignore_index
(CrossEntropyLoss's default is -100); otherwise the same out-of-range assert fires.""",
    bad="label -1 with ignore_index=-100",
    good="label -1 with ignore_index=-1, or the sample dropped",
    fix="Declare the value as ignore index (`--ignore-index -1`) and pass it to the loss, or drop those samples.",
)

CLASS_UNUSED = define(
    "LG104", "class-never-seen", "warning",
    summary="a class of the spec never occurs in the data",
    why="""
Either the spec is wrong (one class too many: the head is larger than the data needs) or
data is missing (a split lacks a class, or a value was merged into another).""",
    bad="spec 0..4, found values [0, 2, 3, 4]  (1 never used)",
    good="spec 0..4, found values [0, 1, 2, 3, 4]",
    fix="Check the spec against the annotation protocol; remap the values if a class was renumbered.",
    scope="dataset",
)

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
)
