"""Pascal VOC audit throughput against the seed-style ElementTree loop.

Writes N generated VOC annotations (1-4 objects of 20 classes each, LabelImg/VOC-devkit
shape, ``Annotations/*.xml``; no images, as in the loop), then measures in this one run,
over a warm file cache, each the best of ``--repeat`` interleaved passes:

* the seed loop: the class-name checker of the VOC "device-side assert" write-up (``os.listdir``,
  ``ET.parse`` of every file opened in text mode, ``<object>/<name>`` against the allowed
  labels, the set of names found): names only, no box, no safety, no list or image check;
* ``labelguard.audit(DIR, spec, workers=1)`` and ``workers=2`` in this process: layout
  discovery, safe parsing (entity declarations and external entities refused), LG001 for
  malformed files and objects, LG101 with "did you mean", LG301 boxes degenerate or outside
  ``<size>``, LG303 duplicate objects, per-class object/image counts, the dataset checks and
  the report;
* for reference, ``labelguard audit DIR --workers 1`` as a subprocess (interpreter start-up
  and imports included, nothing subtracted).

The target: labelguard at one worker at least as fast as the seed loop (ratio >= 1.0).

With ``--devkit`` the folder is a whole VOC devkit folder: ``JPEGImages/`` with one image
per annotation (empty files: the audit pairs images by name and never opens them) and
``ImageSets/Main`` train/val/test lists of every id (the test list naming images only), so
that discovery's pairing and split-list reading are measured with the audit; the seed loop
does neither, so that ratio says what they cost.

Usage::

    python benchmarks/bench_voc.py                      # 20,000 XMLs in a temporary folder
    python benchmarks/bench_voc.py -n 5000 --dir /tmp/voc   # reuse a folder across runs
    python benchmarks/bench_voc.py -n 5000 --devkit     # with images and split lists
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

CLASSES = ("aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
           "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa",
           "train", "tvmonitor")
import _docs  # noqa: E402  (the module beside this script)

TARGET_SEED = 1.0  # one worker vs the seed loop

OBJECT = """    <object>
        <name>{name}</name>
        <pose>Unspecified</pose>
        <truncated>{truncated}</truncated>
        <difficult>0</difficult>
        <bndbox>
            <xmin>{xmin}</xmin>
            <ymin>{ymin}</ymin>
            <xmax>{xmax}</xmax>
            <ymax>{ymax}</ymax>
        </bndbox>
    </object>
"""
HEADER = """<annotation>
    <folder>VOC2007</folder>
    <filename>{stem}.jpg</filename>
    <source>
        <database>The VOC2007 Database</database>
        <annotation>PASCAL VOC2007</annotation>
        <image>flickr</image>
    </source>
    <size>
        <width>{width}</width>
        <height>{height}</height>
        <depth>3</depth>
    </size>
    <segmented>0</segmented>
"""


def make_xml(stem: str, rng: random.Random) -> str:
    width, height = rng.choice(((500, 375), (375, 500), (500, 333), (480, 640)))
    parts = [HEADER.format(stem=stem, width=width, height=height)]
    for _ in range(rng.randint(1, 4)):
        xmin, ymin = rng.randint(1, width // 2), rng.randint(1, height // 2)
        parts.append(OBJECT.format(
            name=rng.choice(CLASSES), truncated=rng.randint(0, 1), xmin=xmin, ymin=ymin,
            xmax=rng.randint(xmin + 1, width), ymax=rng.randint(ymin + 1, height)))
    parts.append("</annotation>\n")
    return "".join(parts)


def ensure_dataset(root: Path, count: int, devkit: bool = False) -> Path:
    """``root/Annotations`` with ``count`` XMLs, writing only what is missing; with
    ``devkit``, ``JPEGImages`` and ``ImageSets/Main`` too (a tenth of the ids in a test split
    of images without annotations)."""
    folder = root / "Annotations"
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    written = 0
    for index in range(count):
        path = folder / f"{index:06d}.xml"
        text = make_xml(path.stem, rng)
        if not path.exists():
            path.write_text(text, encoding="utf-8")
            written += 1
    if written:
        print(f"wrote {written} VOC annotations to {folder}", flush=True)
    if devkit:
        images, lists = root / "JPEGImages", root / "ImageSets" / "Main"
        images.mkdir(exist_ok=True)
        lists.mkdir(parents=True, exist_ok=True)
        tests = [f"{index:06d}" for index in range(count, count + count // 10)]
        ids = [f"{index:06d}" for index in range(count)]
        for stem in ids + tests:
            (images / f"{stem}.jpg").touch()
        splits = {"train": ids[::2], "val": ids[1::2], "test": tests}
        for split, names in splits.items():
            (lists / f"{split}.txt").write_text("".join(f"{name}\n" for name in names), encoding="utf-8")
    return root


def seed_loop(xml_dir: str, allowed_labels: list[str]) -> tuple[list, set]:
    """The write-up's checker, without tqdm and without writing labels.txt."""
    invalid_label_paths = []
    set_cls: set[str] = set()
    for name in os.listdir(xml_dir):
        xml_file = os.path.join(xml_dir, name)
        with open(xml_file, "r+", encoding="utf-8") as fp:
            tree = ET.parse(fp)
            root = tree.getroot()
            invalid_labels = set()
            for obj in root.iter("object"):
                cls_element = obj.find("name")
                if cls_element is not None:
                    cls = cls_element.text
                    invalid_labels.add(cls)
                    if cls not in allowed_labels:
                        invalid_label_paths.append((xml_file, cls))
            set_cls.update(invalid_labels)
    return invalid_label_paths, set_cls


def labelguard_audit(root: str, workers: int):
    from labelguard._audit import audit
    from labelguard.core.spec import LabelSpec

    report = audit(root, LabelSpec(classes=CLASSES), use_project_config=False, workers=workers)
    if report.errors or report.summary.samples == 0:
        raise SystemExit(f"labelguard audit failed: {report.errors or 'no files audited'}")
    return report


def run_cli(root: str) -> float:
    command = [sys.executable, "-m", "labelguard", "audit", root, "--workers", "1",
               "--classes", ",".join(CLASSES), "--no-config", "--no-progress", "-o", os.devnull]
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"labelguard exited {done.returncode}: {done.stderr.decode(errors='replace')}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--count", type=int, default=20000, help="XMLs to generate (default 20000)")
    parser.add_argument("--dir", type=Path, help="dataset folder (reused if present); default: a temp dir")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved passes; the best of each counts")
    parser.add_argument("--no-cli", action="store_true", help="skip the CLI subprocess reference run")
    parser.add_argument("--devkit", action="store_true",
                        help="also JPEGImages and ImageSets/Main split lists (pairing and lists measured)")
    report = _docs.Report("bench_voc", parser)
    args = parser.parse_args(argv)
    report.start(args)

    temporary = None
    if args.dir is None:
        temporary = tempfile.TemporaryDirectory(prefix="labelguard-bench-voc-")
        root = Path(temporary.name)
    else:
        root = args.dir
    try:
        ensure_dataset(root, args.count, args.devkit)
        xml_dir = str(root / "Annotations")
        n = len(os.listdir(xml_dir))
        devkit = " with JPEGImages and ImageSets/Main lists" if args.devkit else ""
        print(f"{n} VOC XMLs{devkit}, 1-4 objects of {len(CLASSES)} classes; {os.cpu_count()} cores; "
              f"best of {args.repeat} interleaved passes")
        measures = {
            "seed loop (ElementTree)": lambda: seed_loop(xml_dir, list(CLASSES)),
            "labelguard --workers 1": lambda: labelguard_audit(str(root), 1),
            "labelguard --workers 2": lambda: labelguard_audit(str(root), 2),
        }
        for func in measures.values():  # warm the file cache and the imports
            func()
        best = {name: float("inf") for name in measures}
        for _ in range(args.repeat):
            for name, func in measures.items():
                start = time.perf_counter()
                func()
                best[name] = min(best[name], time.perf_counter() - start)
        rates = {name: n / seconds for name, seconds in best.items()}
        seed = rates["seed loop (ElementTree)"]
        for name, rate in rates.items():
            print(f"  {name:<26} {rate:>9,.0f} files/s   {rate / seed:5.2f}x the seed loop")
            what = "baseline: the seed-style ElementTree loop" if name.startswith("seed") else f"`{name}`"
            report.row(f"{what}, {n:,} XMLs", f"{rate:,.0f} files/s", "" if name.startswith("seed") else
                       f"{rate / seed:.2f}x")
        if not args.no_cli:
            wall = run_cli(str(root))
            print(f"  {'CLI --workers 1 (wall)':<26} {n / wall:>9,.0f} files/s   "
                  f"{n / wall / seed:5.2f}x  (start-up and imports included)")
            report.row("`labelguard audit --workers 1` (CLI, start-up included)", f"{n / wall:,.0f} files/s",
                       f"{n / wall / seed:.2f}x")
        ratio = rates["labelguard --workers 1"] / seed
        verdict = "PASS" if ratio >= TARGET_SEED else "FAIL"
        print(f"one worker vs the seed loop: {ratio:.2f}x (target >= {TARGET_SEED:.1f}x): {verdict}")
        print(f"two workers vs one: {rates['labelguard --workers 2'] / rates['labelguard --workers 1']:.2f}x")
        report.note(f"Target: one worker >= {TARGET_SEED:.1f}x the seed loop ({verdict}); two workers "
                    f"{rates['labelguard --workers 2'] / rates['labelguard --workers 1']:.2f}x one.")
        report.finish()
        return 0 if ratio >= TARGET_SEED else 1
    finally:
        if temporary is not None:
            temporary.cleanup()


if __name__ == "__main__":
    sys.exit(main())
