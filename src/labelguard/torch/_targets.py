"""Finding the target in a sample and checking its values with the core's rules.

A mask target is judged by the registered ``mask`` rules as the audit judges a mask file,
class ids as it judges a file's labels (:mod:`labelguard.rules._runtime`); this module only
decides what a target is (mask or class ids, which loss it feeds) and turns tensors into
arrays.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch

from labelguard.rules.lg206 import tensor_geometry_fits, tensor_sizes_differ
from labelguard.rules.lg204 import cast_from_nan
from labelguard.core.rules import screened
from labelguard.rules._runtime import binary_target_findings, box_findings, id_findings, tensor_findings
from labelguard.rules.lg501 import one_hot_ignore_present
from labelguard.rules.lg505 import target_holds_no_numbers, target_not_float_for_bce, target_not_int64_for_loss
from labelguard.rules.lg509 import input_non_finite, input_outside_range
from labelguard.core.findings import Finding, Severity, with_hint
from labelguard.core.spec import LabelSpec
from labelguard.core.text import clipped, shorten, show_name
from labelguard.errors import UsageError
from labelguard.torch._tensors import all_finite, invalid_targets
from labelguard.torch._errors import SampleError

log = logging.getLogger("labelguard.torch")

TARGET_KEYS = ("label", "labels", "mask", "target", "targets", "y", "segmentation", "cls")
INPUT_KEYS = ("image", "images", "img", "input", "inputs", "x", "pixel_values", "input_ids")
# The class of one object in a list of annotation dicts (torchvision's CocoDetection returns
# COCO's own dicts, whose "segmentation" is a polygon, not a label).
OBJECT_CLASS_KEYS = ("category_id", "label", "labels", "class_id", "class", "target", "y")
# A sparse target is checked as the dense tensor it stands for up to this many elements
# (128 MiB as int64); past it, densifying would cost memory the sample does not hold.
SPARSE_DENSE_LIMIT = 1 << 24
_SPARSE_LAYOUTS = (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)
# Floating dtypes read as they are; the others (float16, bfloat16, the float8 kinds) are read
# as float32: numpy has no bfloat16 or float8, and the value rules compare with limits float16 cannot hold.
_READ_AS_IS = (torch.float32, torch.float64)

TargetSelector = Callable[[Any], Any] | str | int | None
# How a detection target's boxes may be written (guard(boxes=...)), torchvision's names: corners,
# a corner and the size (COCO's), the centre and the size; in pixels of the input, or with "n" in
# fractions of the image. "yolo": rows of (class, centre x, centre y, width, height) in fractions
# (or a dict's boxes as "cxcywhn").
BOX_LAYOUTS = ("xyxy", "xywh", "cxcywh", "xyxyn", "xywhn", "cxcywhn", "yolo")
# torchvision's tv_tensors.BoundingBoxes say their format: the ones checked.
_TV_FORMATS = {"XYXY": "xyxy", "XYWH": "xywh", "CXCYWH": "cxcywh"}
# Keys that mark a target dict as DETR's (its boxes normalised centre and size), and a sample
# as Ultralytics' (with "cls" and "bboxes": normalised centre and size).
_DETR_KEYS = ("orig_size", "size")
_ULTRALYTICS_KEYS = ("batch_idx", "im_file", "ori_shape")
# How far (in pixels) a box may pass its input's border before it counts as outside: the
# rounding of a resize or flip written in float.
BOX_TOLERANCE = 1.0


class LossMode(enum.Enum):
    """What the target feeds, which decides what is legal in it."""

    INDEX = "index"  # cross_entropy / nll_loss: class indices, ignore values skipped
    ONE_HOT = "one_hot"  # F.one_hot, Dice losses: class indices, ignore values NOT skipped
    BINARY = "binary"  # BCE losses: float targets in [0, 1]


class TargetProblem(UsageError):
    """No checkable target where the selector points (a missing key, a dict without labels, a
    sparse target too large to densify or malformed). The guard reports it as an LG505
    SampleError naming the sample; elsewhere (preflight) it is the UsageError it derives from."""


def select_target(sample: Any, target: TargetSelector) -> Any:
    """The target of ``sample``: by ``target`` (a key, an index or a function) or by default.

    The default is the last element of a tuple/list, or the first of :data:`TARGET_KEYS` in a
    dict. A target that is itself a dict (torchvision detection: boxes + labels) gives its
    labels the same way, and a list of annotation dicts (COCO's, as torchvision's
    CocoDetection returns them) the class of each object (:data:`OBJECT_CLASS_KEYS`).

    Raises:
        TargetProblem: no target where ``target`` points, or an object without a class.
    """
    return target_classes(selected_target(sample, target))


def selected_target(sample: Any, target: TargetSelector) -> Any:
    """The target of ``sample`` as the selector finds it (:func:`select_target`), before a
    detection target gives its class ids.

    Raises:
        TargetProblem: no target where ``target`` points.
    """
    if callable(target):
        found = target(sample)
    elif target is not None:
        try:
            found = sample[target]
        except (KeyError, IndexError, TypeError):
            raise TargetProblem(
                f"no target at {target!r} in a sample of type {type(sample).__name__}"
                + (f" with keys {shorten(sorted(map(str, sample)), 12)}" if isinstance(sample, Mapping) else "")
            ) from None
    else:
        found = _default_target(sample)
    return found


def target_classes(found: Any) -> Any:
    """The class ids of a selected target: a target dict's labels, the class of each annotation
    dict of a list, else the target itself.

    Raises:
        TargetProblem: a dict without labels, or an object without a class.
    """
    if isinstance(found, Mapping):
        found = _default_target(found)
    elif isinstance(found, (list, tuple)) and found and all(isinstance(o, Mapping) for o in found):
        found = _object_classes(found)
    return found


def _default_target(sample: Any) -> Any:
    if isinstance(sample, Mapping):
        for key in TARGET_KEYS:
            if key in sample:
                found = sample[key]
                if (key == "cls" and isinstance(found, (torch.Tensor, np.ndarray)) and found.ndim == 2
                        and found.shape[-1] == 1):
                    found = found.reshape(-1)  # Ultralytics keeps one class per row, as (n, 1)
                return found
        raise TargetProblem(
            f"no target in a sample dict with keys {shorten(sorted(map(str, sample)), 12)}: "
            f"expected one of {', '.join(TARGET_KEYS)}; pass target='<key>' or a function"
        )
    if isinstance(sample, (tuple, list)) and len(sample) >= 2:
        return sample[-1]
    raise TargetProblem(
        f"cannot tell the target in a sample of type {type(sample).__name__}: "
        "pass target=<key, index or function>"
    )


def _object_classes(objects: Sequence[Mapping]) -> torch.Tensor | list:
    """The class of each annotation dict, in order (one tensor when they are tensors)."""
    classes = []
    for position, annotation in enumerate(objects):
        key = next((k for k in OBJECT_CLASS_KEYS if k in annotation), None)
        if key is None:
            raise TargetProblem(
                f"object {position} of {len(objects)} in the target has no class: a dict with keys "
                f"{shorten(sorted(map(str, annotation)), 12)}, none of {', '.join(OBJECT_CLASS_KEYS)}; "
                "pass target=<function> returning the class ids"
            )
        classes.append(annotation[key])
    if all(isinstance(c, torch.Tensor) for c in classes):
        return torch.cat([c.detach().reshape(-1).cpu() for c in classes])
    return classes


@dataclass(frozen=True)
class DetectionBoxes:
    """The boxes of a detection target: ``values`` (n, 4) as written in ``layout`` ("xyxy",
    "xywh", "cxcywh"; None when the layout cannot be told: only non-finite values are judged),
    in fractions of the image when ``normalised``, else in the pixels of ``canvas`` (width,
    height: a tv_tensors box's own canvas) or of the sample's input; ``classes`` names each
    box's class for messages."""

    values: np.ndarray
    layout: str | None
    normalised: bool
    classes: list
    canvas: tuple[float, float] | None = None


def detection_boxes(sample: Any, selected: Any, layout: str | bool | None) -> DetectionBoxes | None:
    """The boxes of a detection sample, None when it has none or they are not checked.

    Found in a target dict's ``boxes`` (torchvision: corners in pixels, or the format a
    tv_tensors.BoundingBoxes states; DETR's dict, with ``orig_size``/``size``: normalised
    centre and size), an Ultralytics sample's ``bboxes`` (with ``cls`` and its own keys:
    normalised centre and size), a list of COCO annotation dicts' ``bbox`` (corner and size),
    or with ``layout="yolo"`` a target of rows (class, cx, cy, w, h). ``selected`` is the target
    the selector found, before its class ids were taken; ``layout`` is guard(boxes=): how the
    boxes are written (it also makes a sample's ``bboxes`` checked, as Albumentations keeps
    them), or False for no box check. Boxes whose layout cannot be told (every value in [0, 1]
    on an input of pixels, with none declared) are judged for NaN/Inf only. Boxes off the CPU
    are not read (that would wait for the device); rotated or other boxes of more than 4
    values are not checked: both are said once in the log.

    Raises:
        TargetProblem: boxes that are not numbers, or declared YOLO rows that are not (n, 5).
    """
    if layout is False:
        return None
    declared = layout if isinstance(layout, str) else None
    if declared == "yolo" and _rows_of_numbers(selected):
        rows = _box_array(selected, "rows of (class, centre x, centre y, width, height)", exact=5)
        if rows is None:
            return None
        return DetectionBoxes(rows[:, 1:5], "cxcywh", True, rows[:, 0].tolist())
    found = _boxes_in(sample, selected, declared)
    if found is None:
        return None
    values, written, normalised, classes = found
    canvas = None
    tv_format = getattr(getattr(values, "format", None), "name", None)
    if tv_format is not None and declared is None:
        if tv_format not in _TV_FORMATS:
            _warn_once(f"boxes {tv_format}", f"detection boxes in the {tv_format} format are not checked "
                       "(labelguard.torch checks XYXY, XYWH and CXCYWH boxes)")
            return None
        written, normalised = _TV_FORMATS[tv_format], False
        size = getattr(values, "canvas_size", None)
        canvas = (float(size[1]), float(size[0])) if isinstance(size, (tuple, list)) and len(size) == 2 else None
    array = _box_array(values, f"boxes ({written or 'layout unknown'})")
    if array is None:
        return None
    if isinstance(classes, (torch.Tensor, np.ndarray)):
        classes = classes.reshape(-1).tolist() if getattr(classes, "device", None) in (None, _CPU) else None
    if not isinstance(classes, list) or len(classes) != len(array):
        classes = [None] * len(array)
    if written is None and not normalised and len(array) and np.abs(array).max() <= 1.0:
        # Every value a fraction of the image, on an input of pixels, and no layout said: DETR's
        # centre and size or albumentations' corners; which one, nothing tells.
        return DetectionBoxes(array, None, True, classes, canvas)
    return DetectionBoxes(array, written or "xyxy", normalised, classes, canvas)


_CPU = torch.device("cpu")


def _boxes_in(sample: Any, selected: Any, declared: str | None) -> tuple[Any, str | None, bool, Any] | None:
    """(boxes as written, their layout or None when it cannot be told, normalised, classes)
    from the target dict, the Ultralytics (or declared) sample, or a COCO annotation list."""
    if isinstance(selected, Mapping) and "boxes" in selected:
        if declared is not None:
            return (selected["boxes"], *_declared(declared), _classes_in(selected))
        if any(key in selected for key in _DETR_KEYS):
            return selected["boxes"], "cxcywh", True, _classes_in(selected)
        return selected["boxes"], None, False, _classes_in(selected)
    if (isinstance(selected, (list, tuple)) and selected and all(isinstance(o, Mapping) for o in selected)
            and all("bbox" in o for o in selected)):
        written, normalised = _declared(declared) if declared is not None else ("xywh", False)
        classes = [next((o[k] for k in OBJECT_CLASS_KEYS if k in o), None) for o in selected]
        return [o["bbox"] for o in selected], written, normalised, classes
    if isinstance(sample, Mapping) and "bboxes" in sample and _class_vector(selected):
        if declared is not None:
            return (sample["bboxes"], *_declared(declared), _classes_in(sample))
        if "cls" in sample and any(key in sample for key in _ULTRALYTICS_KEYS):
            return sample["bboxes"], "cxcywh", True, _classes_in(sample)
    return None


def _declared(layout: str) -> tuple[str, bool]:
    """(layout, normalised) of a guard(boxes=) value: "xyxyn" -> ("xyxy", True), "yolo" ->
    ("cxcywh", True)."""
    if layout == "yolo":
        return "cxcywh", True
    return (layout[:-1], True) if layout.endswith("n") else (layout, False)


def _classes_in(holder: Mapping) -> Any:
    return next((holder[k] for k in TARGET_KEYS if k in holder), None)


def _class_vector(selected: Any) -> bool:
    """True for a target that can be a detection sample's classes: a vector (or (n, 1))."""
    shape = shape_of(selected)
    if shape is None:
        return isinstance(selected, (list, tuple))
    return len(shape) <= 1 or (len(shape) == 2 and shape[1] == 1)


def _rows_of_numbers(value: Any) -> bool:
    return isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim == 2


def _box_array(values: Any, what: str, exact: int = 4) -> np.ndarray | None:
    """``values`` as a float64 (n, ``exact``) array, None when they are not checked (off the
    CPU, or rotated boxes of more values: said once in the log).

    Raises:
        TargetProblem: values that are not numbers, of another shape, or declared YOLO rows
            of another width.
    """
    if isinstance(values, torch.Tensor):
        if values.device.type == "meta":
            raise TargetProblem(f"the target's {what} are a meta tensor: it holds no values to check")
        if values.device.type != "cpu":
            _warn_once(f"boxes on {values.device.type}", f"detection boxes on {values.device.type} are not "
                       "checked: reading them would wait for the device; check them where the dataset builds them")
            return None
        if values.is_nested or values.layout != torch.strided or values.is_complex():
            raise TargetProblem(f"the target's {what} are a {values.layout} tensor of {values.dtype}: expected "
                                f"a dense (n, {exact}) tensor of numbers")
        plain = values.detach()
        if plain.dtype in (torch.bfloat16, torch.float16) or plain.dtype.is_floating_point and plain.itemsize == 1:
            plain = plain.float()  # numpy has no bfloat16 or float8
        array = np.asarray(plain.numpy(), dtype=np.float64)
    else:
        try:
            array = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise TargetProblem(f"the target's {what} are not numbers") from None
    if array.size == 0:
        return array.reshape(0, exact)
    if array.ndim != 2:
        raise TargetProblem(f"the target's {what} have shape {tuple(array.shape)}: expected (n, {exact})")
    if array.shape[1] != exact:
        if exact == 5:
            raise TargetProblem(f"the target's {what} have shape {tuple(array.shape)}: expected (n, 5) "
                                "(a batch index in front? give each sample's rows)")
        _warn_once(f"boxes of {array.shape[1]}", f"detection boxes of {array.shape[1]} values (rotated or "
                   "other boxes) are not checked: labelguard.torch checks boxes of 4 values")
        return None
    return array


def input_size(image: Any) -> tuple[float, float] | None:
    """(width, height) of a sample's input image, from its shape (C, H, W), (H, W, C) or
    (H, W), or a PIL image's size; None when it has none of these shapes."""
    shape = shape_of(image)
    if shape is None:
        return None
    if len(shape) == 2:
        return float(shape[1]), float(shape[0])
    if len(shape) == 3:
        if shape[0] <= 4:
            return float(shape[2]), float(shape[1])
        if shape[-1] <= 4:
            return float(shape[1]), float(shape[0])
    return None


def box_problems(boxes: DetectionBoxes, image: Any, spec: LabelSpec) -> list[Finding]:
    """LG301 (degenerate boxes, or boxes outside the input image) and LG302 (normalised values
    outside [0, 1]) on a detection target's boxes, through the registered box rules."""
    values = boxes.values
    names = [f"class {c:g}" if isinstance(c, float) else f"class {c}" if c is not None else "box"
             for c in boxes.classes]
    if boxes.layout is None:  # the layout cannot be told: NaN/Inf is wrong in any of them
        bad = ~np.isfinite(values).all(axis=1)
        if not bad.any():
            return []
        return box_findings(None, spec, [n for n, b in zip(names, bad) if b], corners=values[bad])
    if boxes.layout == "cxcywh" and boxes.normalised:
        rows = values.tolist()
        return box_findings(None, spec, names, extents=[(w, h) for _, _, w, h in rows],
                            normalised=[tuple(row) for row in rows])
    if boxes.layout == "xywh":
        corners = np.concatenate([values[:, :2], values[:, :2] + values[:, 2:4]], axis=1)
    elif boxes.layout == "cxcywh":
        half = values[:, 2:4] / 2
        corners = np.concatenate([values[:, :2] - half, values[:, :2] + half], axis=1)
    else:
        corners = values
    size = (1.0, 1.0) if boxes.normalised else boxes.canvas or input_size(image)
    return box_findings(None, spec, names, corners=corners, image_size=size,
                        box_style="xywh" if boxes.layout == "xywh" else "corners",
                        tolerance=0.0 if boxes.normalised else BOX_TOLERANCE)


def input_name(sample: Any) -> str:
    """How messages name the input :func:`select_input` takes from ``sample``."""
    if isinstance(sample, Mapping):
        return next((f"{key!r}" for key in INPUT_KEYS if key in sample), "input")
    return "element 0"


def select_input(sample: Any) -> Any:
    """The model input of a sample or batch (first element, or a dict's image/input key)."""
    if isinstance(sample, Mapping):
        for key in INPUT_KEYS:
            if key in sample:
                return sample[key]
        return None
    if isinstance(sample, (tuple, list)) and len(sample) >= 2:
        return sample[0]
    return None


_warned_unchecked: set[str] = set()


def as_array(value: Any) -> np.ndarray | None:
    """A numpy view of a CPU target; None (logged once) when it cannot be read without a copy
    from an accelerator or is not numeric.

    A sparse or MKL-DNN tensor gives its dense values (:data:`SPARSE_DENSE_LIMIT`), a
    quantized one its real values, a half-precision or float8 one float32 (numpy has no
    bfloat16, and the value rules compare with limits float16 cannot hold), a complex32 one
    complex64: :func:`dtype_name` names what the target held.

    Raises:
        TargetProblem: a sparse target past :data:`SPARSE_DENSE_LIMIT` elements, or one whose
            indices do not fit its shape; a nested tensor (:func:`target_arrays` checks its
            components); a meta tensor, which holds no values; a tensor of a layout or dtype
            that cannot be read as numbers.
    """
    if isinstance(value, torch.Tensor):
        if value.device.type == "meta":
            shown = ", nested" if value.is_nested else f" {tuple(value.shape)}"
            raise TargetProblem(f"a target on the meta device ({dtype_name(value)}{shown}) holds no values to "
                                "check or to train on: return the tensor itself, not its meta copy")
        if value.device.type != "cpu":
            _warn_once(
                f"device-{value.device.type}",
                f"targets on {value.device} are not checked by the dataset guard (that would "
                "need a device sync): check them with labelguard.torch.checked(loss_fn)",
            )
            return None
        if value.is_nested:
            raise TargetProblem(f"a nested target ({value.layout}) of {value.size(0)} components: no array holds "
                                "it whole; check each component (guard() does)")
        value = value.detach()
        if value.layout in _SPARSE_LAYOUTS:
            value = _densified(value)
        if value.is_quantized:
            value = value.dequantize()
        try:
            return _numpy_of(value)
        except Exception as exc:  # the tensor's own code (a subclass) or a layout numpy cannot hold
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise TargetProblem(
                f"a target of dtype {dtype_name(value)} and layout {value.layout} that cannot be read as "
                f"numbers ({clipped(reason, 200)}): return a dense tensor of integers or floats"
            ) from None
    if isinstance(value, np.ndarray):
        return value.astype(np.float32) if value.dtype == np.float16 else value
    if isinstance(value, (bool, int, float, np.generic)):
        return np.asarray(value)
    if hasattr(value, "__array_interface__") or isinstance(value, (list, tuple)):
        try:
            array = np.asarray(value)
        except (TypeError, ValueError):
            array = None
        if array is not None and array.dtype.kind in "biuf":
            return array
    _warn_once(type(value).__name__, f"targets of type {type(value).__name__} are not checked")
    return None


def _numpy_of(value: torch.Tensor) -> np.ndarray:
    """The values of a dense CPU tensor as numpy holds them (see :func:`as_array`)."""
    if value.layout == getattr(torch, "_mkldnn", None):
        value = value.to_dense()
    value = value.resolve_conj().resolve_neg()
    if value.dtype == torch.complex32:
        value = value.to(torch.complex64)
    elif value.is_floating_point() and value.dtype not in _READ_AS_IS:
        value = value.float()
    return value.numpy()


def target_arrays(target: Any) -> list[tuple[str, Any, np.ndarray | None]]:
    """(how messages name it, the tensor, :func:`as_array` of it) for the target, or for
    each component of a nested (jagged) tensor: components differ in shape, so each one is
    an array of its own, checked by the same rules.

    Raises:
        TargetProblem: as :func:`as_array`, naming the component.
    """
    if not (isinstance(target, torch.Tensor) and target.is_nested) or target.device.type != "cpu":
        return [("", target, as_array(target))]
    components = target.unbind()
    parts = []
    for position, component in enumerate(components):
        named = f"nested target component {position} (of {len(components)}, counted from 0): "
        try:
            parts.append((named, component, as_array(component)))
        except TargetProblem as problem:
            raise TargetProblem(named + str(problem)) from None
    return parts


def _densified(value: torch.Tensor) -> torch.Tensor:
    """The dense tensor a sparse target stands for, when it is small enough to build and
    well formed (torch does not check a sparse tensor's indices unless asked, and densifying
    one whose indices lie outside its shape drops values or writes outside the result)."""
    described = f"a sparse target ({value.layout}) of shape {tuple(value.shape)}"
    if value.numel() > SPARSE_DENSE_LIMIT:
        raise TargetProblem(
            f"{described}: {value.numel()} elements, too many to check as dense (at most "
            f"{SPARSE_DENSE_LIMIT}); losses take dense targets, so densify it in the dataset, or pass "
            "target=<function> returning the part to check"
        )
    try:
        _check_sparse_invariants(value)
    except RuntimeError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TargetProblem(f"{described} is malformed: {reason}") from None
    return value.to_dense()


def _check_sparse_invariants(value: torch.Tensor) -> None:
    """RuntimeError when the indices of a sparse tensor do not fit its shape."""
    layout = value.layout
    if layout == torch.sparse_coo:
        torch.sparse_coo_tensor(value._indices(), value._values(), value.shape, check_invariants=True)
        return
    if layout in (torch.sparse_csr, torch.sparse_bsr):
        compressed, plain = value.crow_indices(), value.col_indices()
    else:
        compressed, plain = value.ccol_indices(), value.row_indices()
    torch.sparse_compressed_tensor(compressed, plain, value.values(), value.shape, layout=layout,
                                   check_invariants=True)


def dtype_name(value: Any) -> str | None:
    """The dtype of a tensor or array as messages name it ("bfloat16", "quint8", "int64")."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return None
    return str(dtype).removeprefix("torch.")


def _quantized(dtype: str) -> bool:
    """True for the name of a quantized dtype (qint8, quint8, qint32, quint4x2...)."""
    return dtype.startswith(("qint", "quint"))


def _warn_once(key: str, message: str) -> None:
    if key not in _warned_unchecked:
        _warned_unchecked.add(key)
        log.warning(message)


def shape_of(value: Any) -> tuple[int, ...] | None:
    """The shape of a tensor or array, (height, width) of a PIL image, else None (a nested
    tensor's components differ in shape: it has none)."""
    if isinstance(value, torch.Tensor) and value.is_nested:
        return None
    shape = getattr(value, "shape", None)
    if shape is not None:
        return tuple(int(s) for s in shape)
    size = getattr(value, "size", None)
    if hasattr(value, "mode") and isinstance(size, tuple) and len(size) == 2:  # PIL: (w, h)
        return (int(size[1]), int(size[0]))
    return None


@dataclass(frozen=True)
class TargetRules:
    """The checks a target gets: the spec, what the target feeds and whether that was declared."""

    spec: LabelSpec
    mode: LossMode | None = LossMode.INDEX  # None: a declared loss labelguard does not know (a custom Dice...)
    loss_name: str | None = None  # set when the loss was declared: enables the dtype checks

    def expected(self) -> str:
        if self.mode is LossMode.BINARY:
            return f"float values in [0, 1] ({self.loss_name or 'BCE'} target)"
        return self.spec.describe()

    def clearly_legal(self, array: np.ndarray) -> bool:
        """A cheap pre-screen: True when every value is a whole number inside the interval of
        the spec's legal values, so :meth:`check` has nothing to report. Anything else (values
        outside it, fractions, NaN) goes to :meth:`check`.

        Two or three passes over the array instead of the histogram, which matters for the
        float masks many datasets return (a 512x512 float32 mask: ~0.1 ms instead of ~2 ms).
        """
        legal = self.spec.legal_values()
        if (self.mode is not LossMode.INDEX or self.loss_name is not None or legal is None
                or array.size == 0 or array.dtype.kind not in "biuf"):
            return False
        if not screened("mask" if array.ndim >= 2 else "annotation"):
            return False  # a registered rule of its scope judges more than the values: every target gets the rules
        low, high = array.min(), array.max()
        if not (low >= legal.start and high < legal.stop):
            return False
        return array.dtype.kind != "f" or bool(np.array_equal(array, np.floor(array)))

    def check(self, display: str | None, array: np.ndarray, dtype: str | None = None) -> list[Finding]:
        """Every finding about one target array (errors first); ``dtype`` names the target's
        own dtype when the array had to take another (bfloat16, quantized: see as_array)."""
        dtype = dtype or str(array.dtype)
        if array.dtype.kind not in "biuf":
            return [target_holds_no_numbers(display, dtype)]
        if self.mode is LossMode.BINARY:
            return _binary_findings(display, array, self.loss_name or "BCE loss", dtype)
        findings = self._dtype_findings(display, array, dtype)
        cast, array = self._cast_non_finite(display, array, dtype)
        findings.extend(cast)
        values: np.ndarray | None
        if array.ndim >= 2:
            found, values, _ = tensor_findings(display, array, self.spec)
        else:
            found, values = id_findings(display, array, self.spec, dtype, distinct=self.mode is LossMode.ONE_HOT)
        findings.extend(found)
        if self.mode is LossMode.ONE_HOT and values is not None:
            present = [v for v in values.tolist() if self.spec.is_ignored(v)]
            if present:
                findings.insert(0, one_hot_ignore_present(display, present, self.loss_name))
        # A NaN says more than the dtype it arrived in: it is named first among the errors.
        return sorted(findings, key=lambda f: (-f.severity, not _names_non_finite(f)))

    def _cast_non_finite(self, display: str | None, array: np.ndarray,
                         dtype: str) -> tuple[list[Finding], np.ndarray]:
        """LG204 for the values NaN and +-Inf become when cast to a signed integer (.long():
        -9223372036854775808), and the array with them set to a legal value, so that the
        value rules do not also call them a class to remap."""
        if array.dtype.kind != "i" or array.dtype.itemsize < 4 or array.size == 0:
            return [], array
        lowest = np.iinfo(array.dtype).min
        if array.min() != lowest:
            return [], array
        cast = array == lowest
        count = int(np.count_nonzero(cast))
        legal = self.spec.legal_values()
        stand_in = next(iter(legal), 0) if legal is not None else 0
        return [cast_from_nan(display, count, lowest, dtype)], np.where(cast, stand_in, array)

    def _dtype_findings(self, display: str | None, array: np.ndarray, dtype: str) -> list[Finding]:
        if self.loss_name is None or dtype == "int64":
            return []
        return [target_not_int64_for_loss(display, dtype, self.loss_name, quantized=_quantized(dtype),
                                          floating=array.dtype.kind == "f")]


def _names_non_finite(finding: Finding) -> bool:
    data = finding.data
    return bool(data.get("non_finite") or data.get("non_finite_pixels"))




def _binary_findings(display: str | None, array: np.ndarray, loss: str, dtype: str) -> list[Finding]:
    if array.dtype.kind != "f" or _quantized(dtype):
        return [target_not_float_for_bce(display, dtype, loss)]
    return binary_target_findings(display, array, loss)


def geometry_finding(display: str | None, image: Any, target: Any, spec: LabelSpec) -> Finding | None:
    """LG206 when a mask's spatial size matches neither end of its image's shape, or breaks the
    size relation the spec declares (a scale factor; ``sizes="any"``: never)."""
    if spec.sizes_vary:
        return None
    image_shape, mask_shape = shape_of(image), shape_of(target)
    if image_shape is None or mask_shape is None or len(mask_shape) < 2 or len(image_shape) < 2:
        return None
    target_shape = mask_shape  # as the target holds it, before a leading channel of 1 is dropped
    if len(mask_shape) > 2 and mask_shape[0] == 1:
        mask_shape = mask_shape[1:]
    if tensor_geometry_fits(image_shape, mask_shape, spec):
        return None
    return tensor_sizes_differ(display, image_shape, target_shape, spec)


def input_finding(display: str | None, value: Any, name: str,
                  input_range: tuple[float, float] | None = None) -> Finding | None:
    """LG509 when a sample's input holds NaN/Inf, or values outside ``input_range``.

    Costs one sum on a clean float input (NaN and Inf poison it) and a min and a max when a
    range is declared; a tensor off the CPU is not read (that would need a device sync). A
    nested tensor's components are checked one by one, the first bad one named."""
    if isinstance(value, torch.Tensor) and value.is_nested and value.device.type == "cpu":
        components = value.unbind()
        for position, component in enumerate(components):
            part = f"{name}, nested component {position} (of {len(components)}, counted from 0)"
            found = input_finding(display, component, part, input_range)
            if found is not None:
                return found
        return None
    if isinstance(value, torch.Tensor):
        if value.device.type != "cpu" or value.layout != torch.strided or value.is_quantized:
            return None
        value = value.detach()
        if value.dtype in (torch.float16, torch.bfloat16):
            value = value.float()
        array = value.numpy() if value.dtype != torch.bool else None
    elif isinstance(value, np.ndarray) or hasattr(value, "__array_interface__"):
        array = np.asarray(value)
    else:
        return None
    if array is None or array.size == 0 or array.dtype.kind not in "iuf":
        return None
    dtype, shape = str(array.dtype), tuple(array.shape)
    # One pass over a float input: its sum is finite unless some value is not (integers always are).
    if array.dtype.kind == "f" and not np.isfinite(array.sum(dtype=np.float64 if array.itemsize < 4 else None)):
        finite = np.isfinite(array)
        bad = int(array.size - np.count_nonzero(finite))
        if bad:
            nan = int(np.count_nonzero(np.isnan(array)))
            return input_non_finite(display, name, dtype, shape, nan=nan, non_finite=bad, numel=int(array.size))
    if input_range is None:
        return None
    low, high = input_range
    smallest, largest = array.min(), array.max()
    if smallest >= low and largest <= high:
        return None
    outside = int(np.count_nonzero((array < low) | (array > high)))
    return input_outside_range(display, name, dtype, shape, smallest=float(smallest), largest=float(largest),
                               outside=outside, numel=int(array.size), expected=input_range)


def errors_of(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity >= Severity.ERROR]


def sample_error(
    finding: Finding,
    *,
    where: str,
    index: int | None,
    source: str | None,
    expected: str,
) -> SampleError:
    """The SampleError for an error finding, with the message format of the docs."""
    place = f" ({show_name(source)})" if source else ""
    message = with_hint(f"{finding.code} {where}{place}: {finding.message.rstrip('.')}.", finding.hint)
    return SampleError(
        message,
        code=finding.code,
        index=index,
        source=source,
        values=finding_values(finding),
        expected=expected,
    )


def finding_values(finding: Finding) -> list | None:
    """The offending values a finding names: mask values, class ids, non-integer examples (NaN
    for non-finite ones) or the wrong dtype."""
    data = finding.data
    if "values" in data:
        return list(data["values"])
    if "ids" in data:
        return list(data["ids"])
    if "dtype" in data:
        return [data["dtype"]]
    if "examples" in data or "non_finite" in data or "non_finite_pixels" in data:
        examples = list(data.get("examples", []))
        if data.get("non_finite") or data.get("non_finite_pixels"):
            examples.append(float("nan"))
        return examples
    return None


def tensor_target_ok(target: torch.Tensor, spec: LabelSpec) -> bool:
    """True when every value of ``target`` is legal under ``spec`` (its
    :meth:`~labelguard.core.spec.LabelSpec.legal_values`: an interval and a few other values):
    one reduction and one sync wherever the tensor lives."""
    legal = spec.legal_values()
    if legal is None:
        return all_finite(target)
    return not bool(invalid_targets(target, legal).any())
