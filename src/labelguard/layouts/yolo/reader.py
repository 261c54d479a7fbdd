"""YOLO label files and the files that declare a YOLO dataset.

Label files (Ultralytics and darknet): one object per row, ``class x_center y_center width
height`` for detection, ``class x1 y1 x2 y2 ...`` (at least three points) for segmentation,
``class x y w h`` followed by ``kpt_shape`` keypoint values for pose; coordinates are
fractions of the image. An empty file is an image without objects.

Dataset files: Ultralytics ``data.yaml`` (``path``, ``train``/``val``/``test``, ``nc``,
``names`` as a list or an ``{id: name}`` mapping, ``kpt_shape``), darknet ``obj.data``
(``classes = N``, ``train = ...``, ``names = ...``) and ``obj.names`` (one name per line).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple


from labelguard.core.text import clipped, plural, spans
from labelguard.readers.base import MAX_NESTING, ReadError, read_bytes, read_class_names, read_text

SPLITS = ("train", "val", "test")
_INT64 = 2 ** 63


class YoloLabels(NamedTuple):
    """The usable rows of one label file and what is wrong with the others.

    Attributes:
        ids: the class id of each usable row.
        lines: the 1-based line number of each usable row.
        values: each usable row's numbers after the class id.
        kinds: "box", "polygon" or "pose" per usable row.
        problems: (line number, what is wrong) for rows that cannot be read.
    """

    ids: list[int]
    lines: list[int]
    values: list[tuple[float, ...]]
    kinds: list[str]
    problems: list[tuple[int, str]]


def read_labels(data: bytes, keypoint_values: int | None = None) -> YoloLabels:
    """Parse a label file's bytes; ReadError when the file as a whole is not label text.

    Args:
        data: the file's bytes.
        keypoint_values: ``kpt_shape[0] * kpt_shape[1]`` of a pose dataset, else None.
    """
    if b"\x00" in data:
        raise ReadError("binary content (NUL bytes), not a YOLO label text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReadError(f"not UTF-8 text (byte {exc.start}): not a YOLO label file") from None
    ids: list[int] = []
    lines: list[int] = []
    values: list[tuple[float, ...]] = []
    kinds: list[str] = []
    problems: list[tuple[int, str]] = []
    pose = 4 + keypoint_values if keypoint_values else None
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        head = parts[0]
        # More digits than an int64 holds stand for any value past it: int() refuses past 4,300.
        class_id = _INT64 if len(head) > 20 and head.lstrip("+-").isdecimal() else read_class_id(head)
        if class_id is None:
            problems.append((number, f"the class id {clipped(head)!r} is not an integer"))
            continue
        if not -_INT64 <= class_id < _INT64:
            problems.append((number, f"the class id {clipped(head)} is beyond the 64-bit integer range: no class"))
            continue
        try:
            numbers = tuple(map(float, parts[1:]))
        except ValueError:
            bad = next(p for p in parts[1:] if not is_number(p))
            problems.append((number, f"{clipped(bad)!r} is not a number"))
            continue
        count = len(numbers)
        if count == 4:
            kind = "box"
        elif pose is not None and count == pose:
            kind = "pose"
        elif count >= 6 and count % 2 == 0 and pose is None:
            kind = "polygon"
        else:
            problems.append((number, _shape_problem(len(parts), pose)))
            continue
        if not all(map(math.isfinite, numbers)):
            problems.append((number, f"holds a value that is not finite: {clipped(' '.join(parts[1:]))}"))
            continue
        ids.append(class_id)
        lines.append(number)
        values.append(numbers)
        kinds.append(kind)
    return YoloLabels(ids, lines, values, kinds, problems)


def read_class_id(text: str) -> int | None:
    """The class id a YOLO loader reads from ``text``: an integer, or a float that is one."""
    try:
        return int(text)
    except ValueError:
        return _integral(text)


def _integral(text: str) -> int | None:
    """``"2.0"`` -> 2 (loaders parse the class column as float); None for anything else."""
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) and value.is_integer() else None


def is_number(text: str) -> bool:
    """True when a YOLO loader reads ``text`` as a number (``.5``, ``+1``, ``1e-3`` included)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _shape_problem(count: int, pose: int | None) -> str:
    if pose is not None:
        return (f"has {plural(count, 'value')}; rows of this pose dataset have {pose + 1} "
                f"(class x_center y_center width height and the keypoints of kpt_shape)")
    return (f"has {plural(count, 'value')}; a detection row has 5 (class x_center y_center width height), "
            "a segmentation row 1 + an even number >= 6 (class x1 y1 x2 y2 x3 y3 ...)")


def read_label_file(path: str, keypoint_values: int | None = None) -> YoloLabels:
    """:func:`read_labels` of the file at ``path``; ReadError with the OS reason when unreadable."""
    return read_labels(read_bytes(path, "label file"), keypoint_values)


# ---- dataset files ----------------------------------------------------------------------

@dataclass
class DatasetFile:
    """What a data.yaml or obj.data declares.

    Attributes:
        names: class names in id order, when declared.
        nc: the declared number of classes, when declared.
        splits: split name -> the paths it names (image folders, list files), as written.
        root: the ``path`` key of data.yaml, as written.
        keypoint_shape: ``kpt_shape`` (keypoints, 2 or 3 values each) of a pose dataset.
        names_file: the names file obj.data points to, as written.
        problems: what is wrong with the declaration, for findings and notes.
    """

    names: list[str] | None = None
    nc: int | None = None
    splits: dict[str, list[str]] = field(default_factory=dict)
    root: str | None = None
    keypoint_shape: tuple[int, int] | None = None
    names_file: str | None = None
    problems: list[str] = field(default_factory=list)


def read_data_yaml(path: str) -> DatasetFile:
    """Parse an Ultralytics data.yaml; ReadError when it is not a YAML mapping."""
    import yaml  # only YOLO datasets pay for it at start-up

    text = read_text(path)
    try:
        content = load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ReadError(f"invalid YAML{where}: {problem}") from None
    if not isinstance(content, dict):
        raise ReadError(f"holds a YAML {type(content).__name__}, not a mapping with names/nc and splits")
    declared = DatasetFile()
    declared.names = _names(content.get("names"), declared.problems)
    nc = content.get("nc")
    if nc is not None:
        if isinstance(nc, int) and not isinstance(nc, bool) and nc > 0:
            declared.nc = nc
        else:
            declared.problems.append(f"nc: {clipped(repr(nc))} is not a positive integer")
    for split in SPLITS:
        value = content.get(split)
        if value is None:
            continue
        items = value if isinstance(value, list) else [value]
        paths = [str(item) for item in items if isinstance(item, (str, int, float)) and str(item)]
        if len(paths) != len(items):
            declared.problems.append(f"{split}: {clipped(repr(value))} is not a path or a list of paths")
        declared.splits[split] = paths
    if isinstance(content.get("path"), str) and content["path"]:
        declared.root = content["path"]
    shape = content.get("kpt_shape")
    if shape is not None:
        if (isinstance(shape, list) and len(shape) == 2 and all(isinstance(v, int) and v > 0 for v in shape)
                and shape[1] in (2, 3)):
            declared.keypoint_shape = (shape[0], shape[1])
        else:
            declared.problems.append(f"kpt_shape: {clipped(repr(shape))} is not [keypoints, 2 or 3]")
    return declared


# Nodes that aliases may add to a YAML document. A data.yaml repeats nothing; "billion laughs"
# nests aliases to aliases, ten of each per level, so that nine levels make a billion nodes.
ALIAS_EXPANSION = 100_000


def load_yaml(text: str) -> Any:
    """The value of a one-document YAML text, as ``yaml.safe_load`` gives it; ReadError when it
    nests deeper than :data:`MAX_NESTING` (aliases counted as what they stand for), when its
    aliases expand it by more than :data:`ALIAS_EXPANSION` nodes, or when an alias holds itself.

    The nesting is measured on the token stream before the (recursive) composer runs; the
    expansion on the composed node graph, where an alias is the node it names, before
    anything is built."""
    import yaml

    opens, closes = _yaml_tokens()
    depth = 0
    for token in yaml.scan(text, Loader=_yaml_loader()):
        if isinstance(token, opens):
            depth += 1
            if depth > MAX_NESTING:
                raise ReadError(f"the YAML nests more than {MAX_NESTING} levels deep (line "
                                f"{token.start_mark.line + 1}): refused, no data.yaml nests so deep")
        elif isinstance(token, closes):
            depth -= 1
    loader = _yaml_loader()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_aliases(node)
        try:
            return loader.construct_document(node)
        except (ValueError, OverflowError) as exc:  # an integer past int()'s digit limit, a bad date
            raise ReadError(f"the YAML holds a value Python cannot build (line {node.start_mark.line + 1}): "
                            f"{clipped(str(exc), 120)}") from None
    finally:
        loader.dispose()


def _yaml_loader():
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml_tokens():
    import yaml

    opens = (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken, yaml.BlockSequenceStartToken,
             yaml.BlockMappingStartToken)
    closes = (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken, yaml.BlockEndToken)
    return opens, closes


def _check_aliases(root) -> None:
    """ReadError when the node graph under ``root`` holds a cycle, nests deeper than
    :data:`MAX_NESTING` or expands past :data:`ALIAS_EXPANSION` extra nodes; each node is
    visited once (post-order, without recursion)."""
    import yaml

    sizes: dict[int, tuple[int, int]] = {}  # node -> (nodes once expanded, nesting depth)
    open_nodes: set[int] = set()
    pending = [(root, False)]
    while pending:
        node, children_done = pending.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            children = _yaml_children(node, yaml)
            size = 1 + sum(sizes[id(child)][0] for child in children)
            depth = 1 + max((sizes[id(child)][1] for child in children), default=0) \
                if isinstance(node, yaml.CollectionNode) else 0
            sizes[key] = (size, depth)
            if depth > MAX_NESTING:
                raise ReadError(f"the YAML nests more than {MAX_NESTING} levels deep once its aliases are "
                                f"expanded (line {node.start_mark.line + 1}): refused")
            if size - len(sizes) > ALIAS_EXPANSION:
                raise ReadError(f"the YAML's aliases expand its {len(sizes):,} nodes into more than "
                                f"{size:,} (line {node.start_mark.line + 1}): refused, as a 'billion laughs' "
                                "document would exhaust memory; a data.yaml needs no aliases")
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise ReadError(f"the YAML holds an alias to a node that contains it (line "
                            f"{node.start_mark.line + 1}): a recursive structure, refused")
        open_nodes.add(key)
        pending.append((node, True))
        pending.extend((child, False) for child in _yaml_children(node, yaml))


def _yaml_children(node, yaml) -> list:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _names(value: Any, problems: list[str]) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, dict):
        try:
            keyed = {int(k): str(v) for k, v in value.items()}
        except (TypeError, ValueError):
            problems.append(f"names: the keys of {clipped(repr(value))} are not integer ids")
            return None
        if sorted(keyed) != list(range(len(keyed))):
            problems.append(f"names: the ids {spans(sorted(keyed))} are not 0..{len(keyed) - 1}")
            return None
        return [keyed[i] for i in range(len(keyed))]
    problems.append(f"names: {clipped(repr(value))} is neither a list nor an {{id: name}} mapping")
    return None


def read_darknet_data(path: str) -> DatasetFile:
    """Parse a darknet ``obj.data`` (``key = value`` lines); ReadError when unreadable."""
    lines = read_text(path).splitlines()
    declared = DatasetFile()
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        key, sep, value = (part.strip() for part in text.partition("="))
        if not sep:
            declared.problems.append(f"line {number} is not 'key = value': {clipped(repr(line))}")
            continue
        if key == "classes":
            try:
                declared.nc = int(value)
            except ValueError:
                declared.problems.append(f"line {number}: classes = {clipped(repr(value))} is not an integer")
        elif key == "names":
            declared.names_file = value
        elif key in ("train", "valid", "val", "test"):
            declared.splits[{"valid": "val"}.get(key, key)] = [value]
    return declared


def read_names(path: str) -> list[str]:
    """Class names from ``obj.names`` / ``classes.txt``: one per line, blank lines skipped."""
    return read_class_names(path)
