"""The COCO editor of ``labelguard fix``: category names and ids rewritten as JSON (2-space
indent when the original was indented)."""

from __future__ import annotations

import json

from labelguard.errors import CannotFix
from labelguard.layouts.formats import Planner, describe, lookup
from labelguard.readers.base import ReadError, parse_json


def _load(data: bytes) -> dict:
    try:
        doc = parse_json(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise CannotFix(f"not JSON: {exc}") from None
    except ReadError as exc:
        raise CannotFix(str(exc)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("categories"), list):
        raise CannotFix("not a COCO file (no categories list)")
    return doc


def _dump(doc: dict, original: bytes) -> bytes:
    indented = original.lstrip()[:2] in (b"{\n", b"{\r")
    return (json.dumps(doc, indent=2 if indented else None, ensure_ascii=False) + ("\n" if indented else "")).encode()


def rename(mapping: dict[str, str]) -> Planner:
    """The planner that renames the categories of ``mapping`` in a COCO file."""
    def plan(path: str, data: bytes):
        doc = _load(data)
        counts: dict[str, int] = {}
        for category in doc["categories"]:
            name = category.get("name") if isinstance(category, dict) else None
            key = lookup(mapping, name) if isinstance(name, str) else None
            if key is not None:
                counts[key] = counts.get(key, 0) + 1
                category["name"] = mapping[key]
        if not counts:
            return None, "no category name of the map occurs", {}
        return _dump(doc, data), describe(counts, mapping), {"renamed": counts}

    return plan


def remap(mapping: dict[int, int]) -> Planner:
    """The planner that changes category ids (and every annotation's ``category_id``) by ``mapping``."""
    def plan(path: str, data: bytes):
        doc = _load(data)
        counts: dict[int, int] = {}
        targets = {c.get("id") for c in doc["categories"] if isinstance(c, dict)}
        for category in doc["categories"]:
            if isinstance(category, dict) and category.get("id") in mapping:
                category["id"] = mapping[category["id"]]
        for annotation in doc.get("annotations") or []:
            if isinstance(annotation, dict) and annotation.get("category_id") in mapping:
                source = annotation["category_id"]
                counts[source] = counts.get(source, 0) + 1
                annotation["category_id"] = mapping[source]
        ids = [c.get("id") for c in doc["categories"] if isinstance(c, dict)]
        if len(ids) != len(set(ids)):
            raise CannotFix(f"the map would give two categories the same id (ids {ids})")
        if not counts and not (targets & set(mapping)):
            return None, "no category id of the map occurs", {}
        return _dump(doc, data), describe(counts, mapping, unit="annotations"), {"remapped": counts}

    return plan
