"""Which file a dataset index came from, found on the common dataset classes by duck typing.

torchvision is not needed: ImageFolder/DatasetFolder keep ``samples``/``imgs`` as
(path, class) pairs, VOCSegmentation ``images``/``masks``, VOCDetection and Cityscapes
``targets``, CocoDetection ``ids`` (mmdetection ``img_ids``) with a ``coco`` index and a
``root``; SSD.pytorch's VOCDetection keeps ``ids`` of (root, name) with ``_annopath``
``'%s/Annotations/%s.xml'``; Swin-Unet's Synapse_dataset keeps ``sample_list`` names under
``data_dir``. Looked up only when a sample is bad, so it costs nothing on clean data.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Mapping
from typing import Any, Callable

# Attributes holding one path per sample, the label-side ones first.
_PATH_LISTS = ("masks", "targets", "samples", "imgs", "images", "files", "paths")
# Attributes holding one id per sample: a COCO image id, a name, or a (root, name) tuple that
# a path template of the dataset ("%s/Annotations/%s.xml") turns into the file.
_ID_LISTS = ("ids", "img_ids", "image_ids")
# Words in a template attribute's name, the label side first.
_TEMPLATE_WORDS = ("anno", "label", "mask", "target", "")
# Keys of dict samples that name their file (webdataset's __key__, common dataset dicts).
_SAMPLE_KEYS = ("label_path", "mask_path", "path", "file", "filename", "file_name", "__key__")
# Extensions Swin-Unet style datasets add to the names of their list files.
_LIST_SUFFIXES = (".npz", ".npy.h5", ".h5", ".npy", ".png")


def source_of(dataset: Any, index: int) -> str | None:
    """The file behind ``dataset[index]``, or None when the dataset does not say."""
    try:
        return _source_of(dataset, index)
    except (IndexError, KeyError, TypeError, AttributeError, ValueError):
        return None


def source_lookup(dataset: Any, source: Callable[[int], Any] | None = None) -> Callable[[int], str | None]:
    """``index -> file`` that never raises (naming a file must never stop training nor hide
    the error being reported): ``source`` when given, else a guarded dataset's own
    ``source``, else :func:`source_of` of ``dataset``."""
    if source is None and callable(getattr(dataset, "source", None)):
        source = dataset.source

    def lookup(index: int) -> str | None:
        try:
            found = source(index) if source is not None else source_of(dataset, index)
        except Exception:
            return None
        return os.fspath(found) if isinstance(found, (str, os.PathLike)) else None

    return lookup


def _source_of(dataset: Any, index: int) -> str | None:
    inner = getattr(dataset, "dataset", None)
    indices = getattr(dataset, "indices", None)
    if inner is not None and indices is not None:  # torch.utils.data.Subset
        return _source_of(inner, int(indices[index]))
    parts = getattr(dataset, "datasets", None)
    sizes = getattr(dataset, "cumulative_sizes", None)
    if parts is not None and sizes is not None:  # torch.utils.data.ConcatDataset
        part = bisect.bisect_right(sizes, index)
        offset = index - (sizes[part - 1] if part else 0)
        return _source_of(parts[part], offset)
    for name in _PATH_LISTS:
        entries = getattr(dataset, name, None)
        if isinstance(entries, (list, tuple)) and len(entries) > index:
            found = _as_path(entries[index])
            if found is not None:
                return found
    names = getattr(dataset, "sample_list", None)
    if isinstance(names, (list, tuple)) and len(names) > index:
        return _listed_file(dataset, str(names[index]).strip())
    for name in _ID_LISTS:
        ids = getattr(dataset, name, None)
        if isinstance(ids, (list, tuple)) and len(ids) > index:
            found = _identified_file(dataset, ids[index])
            if found is not None:
                return found
    return None


def _identified_file(dataset: Any, entry: Any) -> str | None:
    """The file of one entry of an id list: through the dataset's COCO index, its path
    template, as a path itself, or as a name under its root."""
    coco = getattr(dataset, "coco", None)
    if coco is not None and hasattr(coco, "loadImgs") and isinstance(entry, (int, str)):
        image = coco.loadImgs(entry)[0]
        return os.path.join(str(getattr(dataset, "root", "")), image["file_name"])
    parts = tuple(entry) if isinstance(entry, (list, tuple)) else (entry,)
    if not parts or not all(isinstance(p, (str, os.PathLike)) for p in parts):
        return None
    parts = tuple(os.fspath(p) for p in parts)
    template = _template(dataset, len(parts))
    if template is not None:
        return template % parts
    if len(parts) > 1:
        return os.path.join(*parts)
    return _as_path(parts[0]) or _listed_file(dataset, parts[0].strip())


def _template(dataset: Any, fields: int) -> str | None:
    """A path template attribute of the dataset with ``fields`` "%s" fields (SSD.pytorch's
    ``_annopath``), preferring the label side."""
    templates = [(name, value) for name, value in vars(dataset).items()
                 if isinstance(value, str) and value.count("%s") == fields and "%" not in value.replace("%s", "")]
    for word in _TEMPLATE_WORDS:
        for name, value in templates:
            if word in name.lower():
                return value
    return None


def _as_path(entry: Any) -> str | None:
    if isinstance(entry, (list, tuple)) and entry:
        entry = entry[0]  # ImageFolder (path, class); Cityscapes [paths per target type]
    if isinstance(entry, os.PathLike):
        return os.fspath(entry)
    if isinstance(entry, str) and (os.sep in entry or "/" in entry or "." in os.path.basename(entry)):
        return entry  # a file name, not a class name such as "dog"
    return None


def _listed_file(dataset: Any, name: str) -> str:
    folder = getattr(dataset, "data_dir", None) or getattr(dataset, "root", None)
    if not folder:
        return name
    base = os.path.join(os.fspath(folder), name)
    for suffix in ("", *_LIST_SUFFIXES):
        if os.path.isfile(base + suffix):
            return base + suffix
    return base


def source_in_sample(sample: Any) -> str | None:
    """A file name carried by a dict sample itself (iterable datasets, webdataset)."""
    if isinstance(sample, Mapping):
        for key in _SAMPLE_KEYS:
            value = sample.get(key)
            if isinstance(value, (str, os.PathLike)):
                return os.fspath(value)
    return None
