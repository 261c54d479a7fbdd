"""Records: what readers make of a file, and what the rules read.

A :class:`MaskRecord` is a mask as stored (the array, its container, mode, palette and the
shapes stored beside it). A :class:`MaskSample` is that record as the rules see it: the label
plane with colours decoded, its value histogram, the colour information, the values a lossy
fringe explains, and the geometry of the paired image. An :class:`AnnotationRecord` is one
annotation file's objects (class name or id, box, place in the file) with the image it names
(:class:`ImageReference`), or, for a file that names many images (a COCO file, a CSV table),
its :class:`ImageTable` and each object's row in it; a file that declares its own classes
(COCO ``categories``) carries them as a :class:`ClassTable`, an ImageFolder class folder is
a :class:`ClassFolder`. :class:`ObjectRecord` is one object. All are plain data: the core
builds no record and reads no file.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np


@dataclass(frozen=True)
class VolumeGeometry:
    """Where a volume's voxels lie in space, as ITK and SimpleITK (and so nnU-Net's readers)
    read its header, in their LPS convention; a header that two families of readers read
    apart also carries nibabel's reading.

    Attributes:
        spacing: the voxel size along each spatial axis of the stored array, in mm.
        origin: the position of the first voxel's centre, in mm (x, y, z).
        direction: the unit direction of each array axis, the 3x3 matrix's rows flattened.
        source: the part of the header this reading comes from ("sform", "qform", "no
            transform (sform and qform codes 0)"), for a message to say.
        nibabel: where nibabel (MONAI's and TorchIO's reader) places the voxels (its best
            affine, in LPS), when that differs from this reading; None when it is the same.
    """

    spacing: tuple[float, ...]
    origin: tuple[float, ...]
    direction: tuple[float, ...]
    source: str = ""
    nibabel: VolumeGeometry | None = None


@dataclass
class MaskRecord:
    """A mask as stored.

    Attributes:
        array: the label array as stored: (H, W), (D, H, W) / (H, W, D), or (H, W, C) for colour.
        container: the format found in the bytes (png, jpeg, tiff, npy, zip (npz), hdf5, nifti...).
        declared: the format the file name claims.
        mode: the Pillow mode or the array dtype.
        palette: the RGB palette of a palette (P) image, flattened, when there is one.
        image_shape: the shape of the image stored in the same file (npz/HDF5 ``image``).
        key: the array key used in an NPZ/HDF5 file.
        image_key: the key of the image stored beside it, when there is one.
        remark: how the label was read when the report should say so (through an HDF5
            external link...): the report counts the files under each remark.
        geometry: where the voxels lie in space, for a volume whose header says it (NIfTI).
    """

    array: np.ndarray
    container: str
    declared: str | None
    mode: str
    palette: tuple[int, ...] | None = None
    image_shape: tuple[int, ...] | None = None
    key: str | None = None
    image_key: str | None = None
    remark: str | None = None
    geometry: VolumeGeometry | None = None

    @property
    def lossy(self) -> bool:
        return self.container == "jpeg"

    @property
    def renamed(self) -> bool:
        """True when the bytes are of another format than the name says."""
        return self.declared is not None and self.declared != self.container and not (
            self.declared == "gzip" and self.container == "nifti"
        )


@dataclass
class InstanceEvidence:
    """One mask's values read as instance ids: what says they number objects, not classes.

    Attributes:
        dtype: the stored dtype.
        ids / lowest / highest: how many non-zero values, the smallest and the largest.
        one_region: ids that are one connected region each; split_ids: ids of two or more
            regions, the first few with their region count and each region's first pixel
            (``split_places``: (id, regions, ((row, column) or (slice, row, column), ...))).
        has_zero: 0 occurs; background: 0, or else the commonest value; background_pixels,
            pixels: its pixels and the mask's.
        recognised: the signals together read the mask as instance ids.
    """

    dtype: str
    ids: int
    highest: int
    lowest: int
    one_region: int
    split_ids: int = 0
    split_places: tuple = ()
    has_zero: bool = True
    background: int = 0
    background_pixels: int = 0
    pixels: int = 0
    recognised: bool = False


@dataclass
class MaskSample:
    """One mask as the per-file rules see it.

    Attributes:
        display: the file as shown in findings; None for an array the guard checks that came
            from no file.
        record: the mask as stored.
        color_container: True when the stored array is an image's colour channels (H, W, C).
        labels: the label values to check (colours decoded), or None when nothing can be checked.
        unusable: why the labels cannot be checked (a single number, an empty array...).
        values / counts: the histogram of the whole-number labels.
        non_integer / non_finite / fraction_examples: float labels that are not whole numbers.
        beyond_int64 / beyond_examples: whole-number float labels too large for any integer
            label type (1e300), kept out of the histogram instead of wrapping around.
        channels: the colour channels of a colour-stored mask; alpha: the first of LA/PA is used;
            grey: the channels were identical and the first one is used.
        colors / color_count: a colour mask read without a colour map: the most frequent
            colours ("r,g,b" -> pixels) and how many there are.
        color_map: the map colours were decoded through; unmapped: the colours it lacks.
        looks_like_image: the plane is a photograph, not a label map (many values, and most
            neighbouring pixels differ); image_evidence: the numbers that say so.
        fringe_values / fringe_pixels / main_values: values that a lossy fringe explains (JPEG
            storage, or thin stray lines along class edges), kept out of class statistics.
        paired_display / paired_shape: the paired image file as shown, and its shape once read.
        paired_geometry: the paired volumes as shown, each with where its voxels lie in space
            (the paired image first, then the other channels of its case), for volumes whose
            header says it.
        paired_problem: what makes the paired image not whole (truncated, undecodable), as
            :func:`labelguard.readers.integrity.image_problem` says it; None when it is whole
            or was not checked.
        damaged_channels: the other channels of the paired image's case (nnU-Net's
            ``case_0001``...) that are not whole, each as shown with its problem.
        instances: what the mask's values say about being instance ids (:class:`InstanceEvidence`),
            for a mask of many ids or where instances are declared; None otherwise, and for a
            tensor of the guard.
    """

    display: str | None
    record: MaskRecord
    color_container: bool = False
    labels: np.ndarray | None = None
    unusable: str | None = None
    values: np.ndarray | None = None
    counts: np.ndarray | None = None
    non_integer: int = 0
    non_finite: int = 0
    fraction_examples: list = field(default_factory=list)
    beyond_int64: int = 0
    beyond_examples: list = field(default_factory=list)
    channels: int = 0
    alpha: bool = False
    grey: bool = False
    colors: dict[str, int] | None = None
    color_count: int = 0
    color_map: Any = None
    unmapped: dict[tuple[int, int, int], int] | None = None
    looks_like_image: bool = False
    image_evidence: dict[str, Any] = field(default_factory=dict)
    fringe_values: tuple[int, ...] = ()
    fringe_pixels: int = 0
    main_values: tuple[int, ...] = ()
    paired_display: str | None = None
    paired_shape: tuple[int, ...] | None = None
    paired_geometry: tuple[tuple[str, VolumeGeometry], ...] = ()
    paired_problem: str | None = None
    damaged_channels: tuple[tuple[str, str], ...] = ()
    instances: InstanceEvidence | None = None

    @property
    def stored_shape(self) -> tuple[int, ...]:
        """The mask's geometry: colour channels of an image do not count."""
        shape = tuple(self.record.array.shape)
        return shape[:2] if self.color_container else shape


Box = tuple[float, float, float, float]

# A missing or mistyped id in an integer id column (COCO image and category ids).
NO_ID = -(2**63)
# How many places a problem group keeps (its count is always exact).
PROBLEM_PLACES_KEPT = 100


@dataclass
class Problem:
    """One kind of problem in a file, with every place it occurs (places capped at
    :data:`PROBLEM_PLACES_KEPT`, the count exact): a COCO bbox that is not 4 numbers...

    Attributes:
        what: the kind, as a phrase ("a bbox is not 4 numbers [x, y, width, height]").
        places: where it occurs ("annotations[3] (id 4)").
        details: per place, what is there ("annotations[3] (id 4) has bbox [1, 2] (2 values)").
        count: how many places, all of them.
        hint: what to do about this kind, when the record's ``problem_hint`` (the element
            types of the format) does not fit it: a polygon of odd length.
    """

    what: str
    places: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    count: int = 0
    hint: str = ""

    def add(self, place: str, detail: str) -> None:
        self.count += 1
        if len(self.places) < PROBLEM_PLACES_KEPT:
            self.places.append(place)
            self.details.append(detail)


@dataclass(frozen=True)
class ImageReference:
    """What an annotation says about its image, resolved by the layout that read it.

    Attributes:
        field: how the format names the reference (``<filename>``, ``file_name``, a CSV column).
        written: the reference as written, None when the annotation names no image.
        folder: the folder it was looked for in, as shown.
        found: the named file exists there.
        escapes: the reference leads outside that folder (``../``, an absolute path).
        paired: the image paired with the annotation by name, as shown, when there is one.
        expected: what an image of the annotation's own name would be called (``a.*``).
    """

    field: str
    written: str | None
    folder: str
    found: bool = False
    escapes: bool = False
    paired: str | None = None
    expected: str | None = None


@dataclass
class ImageTable:
    """The images of a file that names many (a COCO file's ``images``, a table's path column),
    one row per image, with what the layout resolved about their files before the rules run.

    Attributes:
        field: how the format names an image file, in messages ("image file_name", "path").
        noun: what the named files are, in messages ("image file", "file").
        unit: what a row's place counts ("image": its index in ``images``; "line").
        place_format: how a row's place is written (``images[{}]``, ``line {}``).
        names: each row's file name as written ("" when it has none).
        places: each row's place (a table's first line naming the file); None: the row index.
        ids: each row's image id (COCO), string ids coded as negative numbers, :data:`NO_ID`
            for a missing or mistyped one; None when the format has no image ids.
        id_names: code -> the id as written, for string ids.
        widths / heights: each image's size (NaN when unknown); None when the format has none.
        folders: where the files were looked for, as shown; empty when they were not.
        root: the dataset root the names must stay inside, as shown.
        looked_for: how many named files were looked for (what "N of M" counts).
        missing: rows whose file does not exist under ``folders``.
        escaping: rows whose name leads outside ``root``.
    """

    # An attribute is named "field": to the type checker it hides dataclasses.field in this
    # class, so that one is named in full below.
    field: str
    noun: str
    unit: str
    place_format: str
    names: list[str]
    places: list[int] | None = None
    ids: np.ndarray | None = None
    id_names: dict[int, str] = dataclasses.field(default_factory=dict)
    widths: np.ndarray | None = None
    heights: np.ndarray | None = None
    folders: tuple[str, ...] = ()
    root: str | None = None
    looked_for: int = 0
    missing: list[int] = dataclasses.field(default_factory=list)
    escaping: list[int] = dataclasses.field(default_factory=list)

    def __len__(self) -> int:
        return len(self.names)

    def place(self, row: int) -> int:
        return self.places[row] if self.places is not None else row

    def where(self, row: int) -> str:
        """Row ``row``'s place as written in messages (``images[3]``, ``line 4``)."""
        return self.place_format.format(self.place(row))

    def id_text(self, code: int) -> str:
        """An image id as written in the file (a string id in quotes)."""
        return self.id_names.get(code) or str(code)

    def describe(self, row: int) -> str:
        """An image by its id and file name ("7 (000007.jpg)"), for rows of a table with ids."""
        if row < 0:
            return "(unknown)"
        name = self.names[row]
        head = self.id_text(int(self.ids[row])) if self.ids is not None else self.where(row)
        return head + (f" ({name})" if name else "")


@dataclass(frozen=True)
class ClassTable:
    """The classes a file declares itself (COCO ``categories``): its objects' labels are ids
    into this table, and category ids are not class indices.

    Attributes:
        names: id -> name, in file order.
        reference: the class names another file of the dataset declares, which this file's
            names must agree with (COCO: the training split of the same flavour), when the
            user gave no classes; None when this file is that file or there is none.
        reference_source: that file, as shown.
        discovered: the classes the dataset's discovery took from its files; a spec whose
            classes are these was not given by the user.
    """

    names: dict[int, str]
    reference: tuple[str, ...] | None = None
    reference_source: str | None = None
    discovered: tuple[str, ...] | None = None

    def user_classes(self, spec: Any) -> tuple[str, ...] | None:
        """The spec's classes when the user gave them (not taken from the dataset's files)."""
        classes = spec.classes
        if classes is None or tuple(classes) == self.discovered:
            return None
        return tuple(classes)


@dataclass(frozen=True)
class ClassFolder:
    """An ImageFolder class folder: its images all carry the folder's class.

    Attributes:
        name: the folder's name, the class.
        split: the split folder it sits in ("" without splits).
        index: the class index ImageFolder gives it (its place among the split's sorted
            class folders).
        classes: how many class folders the split has.
        images: how many image files it holds.
        extensions: the file extensions taken for images (torchvision's).
        unreadable: its image files that cannot be decoded, each as its path and what is
            wrong ("train/cat/a.jpg is empty (0 bytes)").
    """

    name: str
    split: str
    index: int
    classes: int
    images: int
    extensions: tuple[str, ...] = ()
    unreadable: tuple[str, ...] = ()


@dataclass(frozen=True)
class DamagedImage:
    """An image or volume a dataset references that a loader cannot read whole: truncated,
    or (checked in full) not decodable.

    Attributes:
        display: the image file, as shown.
        problem: what is missing or wrong, as a sentence about the file ("ends after 12,345
            bytes without the JPEG end marker (FF D9) after its image data").
        place: where the annotation names it, when it names many (``images[3]``).
        unnamed: no annotation names it (a YOLO background image, an ImageFolder image): the
            record that checked it is not its label.
        unread: the file is there but could not be read at all (a folder, a named pipe, no
            permission, an I/O error): ``problem`` is the reader's reason, an LG001 finding,
            not LG008's.
    """

    display: str
    problem: str
    place: str | None = None
    unnamed: bool = False
    unread: bool = False


@dataclass(frozen=True)
class NamedFiles:
    """Other files an annotation file names (COCO panoptic PNGs), resolved by the layout.

    Attributes:
        noun: what they are ("panoptic PNG").
        folder: where they were looked for, as shown.
        total: how many are named.
        missing: the missing ones, each as its place and name (``annotations[0] 'a.png'``).
        escaping: those whose name leads outside the dataset (never looked at), the same way.
        root: the dataset root, as shown.
    """

    noun: str
    folder: str
    total: int
    missing: list[str]
    escaping: list[str] = field(default_factory=list)
    root: str = ""


@dataclass(frozen=True)
class ObjectRecord:
    """One annotated object: its class, its box and where the file holds it."""

    label: Any
    box: Box | None
    place: int
    unit: str


@dataclass(slots=True)
class AnnotationRecord:
    """One annotation file (a VOC XML, a YOLO label file, a COCO file, a CSV table, an
    ImageFolder class folder) as the annotation rules see it. Objects are held column by
    column (object ``i`` is ``labels[i]``, ``boxes[i]``, ``places[i]``): a file is read once
    and every rule walks the columns it needs. Columns are lists, or numpy arrays for formats
    whose files hold up to millions of objects (COCO): rules that read them accept both.

    Attributes:
        display: the file as shown in findings.
        format: the format read (``voc``, ``yolo``, ``coco``, ``csv``, ``folder``).
        unit: what a place counts (``object``, ``row``, ``line``, ``annotation``).
        labels: each object's class: a name (str), an integer id, or for a multi-label table
            row a tuple of names. With a :class:`ClassTable`, ids into that table.
        places: each object's 1-based place in the file (object index, line or row number);
            None when it is the position + 1.
        describe_place: how object ``i``'s place is written when ``unit place`` is not enough
            (COCO: ``annotations[3] (id 4)``); None for ``unit place``.
        labelled: per object, whether its class could be read (COCO: a category_id that is an
            integer, not a caption); None when all could.
        boxes: each object's box as corners (xmin, ymin, xmax, ymax) in the units of its
            image's size: a list (None for an object without one) or an (n, 4) array (NaN
            rows for objects without one); None when the format has no boxes.
        box_style: how the file writes a box, for messages: ``corners`` or ``xywh`` (COCO's
            [x, y, width, height]).
        border_tolerance: how far a box may pass the image's border (exporters' rounding).
        image_size: (width, height) the boxes must lie inside, None when unknown (or when
            another rule checks the range, as LG302 checks YOLO's normalised values).
        keys: what makes two objects duplicates: a list of one hashable per object (class +
            box, class + polygon...), or for a large file a tuple of 64-bit integer columns
            (views of the record's columns: image, class, box bits); None to use (label, box).
        compared: per object, whether the duplicate test compares it (None: all).
        normalised: per object, the values that must lie in [0, 1] (YOLO rows), or None.
        extents: per object, the size (width, height) a degenerate box test reads when the
            format stores sizes rather than corners (YOLO), or None.
        problems: (place, what is wrong) of objects that could not be read; place 0 for the
            file as a whole.
        problem_count: how many objects could not be read when ``problems`` keeps only the
            first of them (None: ``problems`` holds them all).
        problem_hint: the hint for those (and for ``problem_groups``).
        problem_groups: kinds of wrong elements with all their places (COCO's wrong JSON
            types), reported one finding per kind; None for a format without them.
        image: the image the annotation names, resolved; None when the format names none.
        images: the images of a file that names many, resolved; None for a file of one image.
        image_of: per object, its row in ``images``: -1 when the image id it names is not
            there, -2 when it names none.
        image_written: per object, the image id it names as written (coded as
            ``images.ids``), for messages.
        one_label_per_image: the format gives an image one label (a single-label table), so
            an image listed with two labels is a contradiction.
        classes: the classes the file declares itself (COCO ``categories``).
        mask_sizes: (object, height, width) of masks stored with their size (COCO RLE).
        small_polygons: polygons of fewer than 3 points.
        named_files: other files the file names (COCO panoptic PNGs), resolved.
        folder: the class folder an ImageFolder record is.
        damaged_images: the images the file references (or a class folder holds) that are
            truncated or cannot be decoded; None when its images were not checked.
    """

    display: str | None  # None for the class ids of a guard's target (no file)
    format: str
    unit: str = "object"
    labels: Any = field(default_factory=list)
    places: Any = None
    boxes: Any = None
    image_size: tuple[float, float] | None = None
    keys: Any = None
    normalised: list[tuple[float, ...]] | None = None
    extents: list[tuple[float, float] | None] | None = None
    problems: list[tuple[int, str]] = field(default_factory=list)
    problem_hint: str | None = None
    image: ImageReference | None = None
    describe_place: Callable[[int], str] | None = None
    labelled: np.ndarray | None = None
    box_style: str = "corners"
    border_tolerance: float = 0.0
    compared: np.ndarray | None = None
    problem_count: int | None = None
    problem_groups: Sequence[Problem] | None = None
    images: ImageTable | None = None
    image_of: Any = None
    image_written: np.ndarray | None = None
    one_label_per_image: bool = False
    classes: ClassTable | None = None
    mask_sizes: np.ndarray | None = None
    small_polygons: Problem | None = None
    named_files: NamedFiles | None = None
    folder: ClassFolder | None = None
    damaged_images: Sequence[DamagedImage] | None = None

    def place(self, index: int) -> int:
        """The 1-based place of object ``index`` (0-based)."""
        return int(self.places[index]) if self.places is not None else index + 1

    def where(self, index: int) -> str:
        """Object ``index``'s place as messages write it (``object 3``, ``annotations[2] (id 7)``)."""
        if self.describe_place is not None:
            return self.describe_place(index)
        return f"{self.unit} {self.place(index)}"

    def objects(self) -> list[ObjectRecord]:
        """The objects one by one."""
        boxes = self.boxes if self.boxes is not None else [None] * len(self.labels)
        return [ObjectRecord(label, None if box is None else tuple(box), self.place(i), self.unit)
                for i, (label, box) in enumerate(zip(self.labels, boxes))]


@dataclass(frozen=True)
class EntryProblem:
    """An entry of a list or dataset file that names no file, or a file outside the root.

    Attributes:
        place: where it is written ("line 3", or the key of a dataset file: "test").
        entry: the entry as written.
        says: what is wrong with it, when that is not that it does not exist under the root
            (LG003) or points outside it (LG005).
        detail: what was looked for, said after that ("no Annotations/x.xml").
        data: the finding's data (``line`` or ``split``).
    """

    place: str
    entry: str
    says: str = ""
    detail: str = ""
    data: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class EntriesRecord:
    """A file that names other files (a file list, a data.yaml's splits, a saved dataset's
    state), as discovery resolved it: what the ``entries`` rules judge (LG003 names no file,
    LG005 leads outside the root, LG004 unclean lines of a list).

    Attributes:
        display: the file as shown in findings.
        root: the dataset root its names are resolved in, as shown.
        missing: the entries that name no file under the root.
        escaping: the entries that lead outside the root (never opened).
        hint: what to do about an entry that names no file (a list: regenerate it).
        escape_hint: what to do about one that leads outside.
        unclean: for a file list, its unclean lines: problem (``crlf``, ``whitespace``,
            ``blank``, ``comment``, ``duplicate``, ``bom``) -> line numbers.
        lines: the text of the lines ``unclean`` quotes, by line number.
    """

    display: str
    root: str
    missing: Sequence[EntryProblem] = ()
    escaping: Sequence[EntryProblem] = ()
    hint: str = ""
    escape_hint: str = ""
    unclean: Mapping[str, Sequence[int]] | None = None
    lines: Mapping[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class UnauditedLabels:
    """Files of one kind that can hold labels, under a dataset's root (or a PATH), that no
    dataset read: ``count`` of them, the first ``files`` as shown, and why."""

    kind: str
    reason: str
    count: int
    files: Sequence[str]


@dataclass(frozen=True)
class FileFacts:
    """What discovery found about a dataset's files as files, for the ``files`` rules: images
    and labels left without their pair (LG002) and label files no dataset read (LG007).

    Attributes:
        root: the dataset root (or the PATH) as shown.
        orphan_images: images with no label of a matching name (paths).
        orphan_labels: labels with no image of a matching name (paths).
        label_kind: what a label is called in messages (``mask``, ``label``, ``annotation``).
        unaudited: the groups of label files no dataset read.
    """

    root: str = ""
    orphan_images: Sequence[str] = ()
    orphan_labels: Sequence[str] = ()
    label_kind: str = "mask"
    unaudited: Sequence[UnauditedLabels] = ()
