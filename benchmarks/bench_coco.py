"""Peak memory and time of auditing one large COCO file, against ``json.load``.

Generates a COCO instances file of about ``--mb`` megabytes (polygon segmentations, like
the official files), then runs, each in a fresh Python process so the peak resident
memory (``ru_maxrss``) belongs to that run alone:

* ``baseline``: ``json.load`` of the file (what pycocotools and most loaders do first),
* ``labelguard``: the full COCO audit of the file (streamed parse + every check).

Usage::

    python benchmarks/bench_coco.py [--mb 100] [--keep FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

import _docs  # noqa: E402  (the module beside this script)

CHILD = r"""
import json, resource, sys, time
path, mode = sys.argv[1], sys.argv[2]
start = time.perf_counter()
if mode == "baseline":
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    count = len(data["annotations"])
else:
    from labelguard.core.spec import LabelSpec
    from labelguard.core.tasks import FileTask
    from labelguard.layouts.coco import process_coco
    task = FileTask(processor=process_coco, path=path, display=path)
    result = process_coco(task, LabelSpec(num_classes=80))
    count = sum(result.summary.class_objects.values())
elapsed = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
print(json.dumps({"seconds": elapsed, "peak_mib": peak / 1024, "annotations": count}))
"""

BASELINE_CHILD = "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"


def generate(path: str, megabytes: float, seed: int = 0) -> int:
    """Write a COCO file of about ``megabytes`` MB; returns the number of annotations."""
    rng = random.Random(seed)
    categories = [{"id": i, "name": f"class_{i}", "supercategory": "thing"}
                  for i in range(1, 91) if i % 9]  # 80 ids out of 1..90, like COCO
    cat_ids = [c["id"] for c in categories]
    target = int(megabytes * 1e6)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write('{"info": {"description": "generated"}, "licenses": [], "images": [')
        n_images = max(1, target // 2500)
        for i in range(n_images):
            handle.write(("," if i else "") + json.dumps(
                {"id": i + 1, "width": 640, "height": 480, "file_name": f"{i + 1:012d}.jpg",
                 "license": 0, "coco_url": "", "date_captured": ""}))
        handle.write('], "annotations": [')
        written = handle.tell()
        n = 0
        while written < target:
            x, y = rng.uniform(0, 500), rng.uniform(0, 400)
            w, h = rng.uniform(5, 130), rng.uniform(5, 70)
            polygon = [round(v, 2) for k in range(12)
                       for v in (x + w * rng.random(), y + h * rng.random())]
            text = ("," if n else "") + json.dumps(
                {"id": n + 1, "image_id": rng.randint(1, n_images), "category_id": rng.choice(cat_ids),
                 "segmentation": [polygon], "area": round(w * h, 2),
                 "bbox": [round(x, 2), round(y, 2), round(w, 2), round(h, 2)], "iscrowd": 0})
            handle.write(text)
            written += len(text)
            n += 1
        handle.write('], "categories": ' + json.dumps(categories) + "}")
    return n


def run(path: str, mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, path, mode], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0, help="size of the generated file")
    parser.add_argument("--keep", help="write the file here and keep it")
    report = _docs.Report("bench_coco", parser)
    args = parser.parse_args()
    report.start(args)
    with tempfile.TemporaryDirectory(prefix="labelguard-bench-coco-") as temporary:
        path = args.keep or os.path.join(temporary, "instances_bench.json")
        started = time.perf_counter()
        count = generate(path, args.mb)
        size = os.path.getsize(path) / 1e6
        print(f"generated {path}: {size:.1f} MB, {count} annotations ({time.perf_counter() - started:.1f} s)")
        interpreter = float(subprocess.run([sys.executable, "-c", BASELINE_CHILD], check=True,
                                           capture_output=True, text=True).stdout)
        print(f"an empty interpreter peaks at {interpreter:.0f} MiB")
        measured = {}
        for mode in ("baseline", "labelguard"):
            figures = measured[mode] = run(path, mode)
            label = "json.load" if mode == "baseline" else "labelguard COCO audit"
            print(f"{label:>22}: {figures['seconds']:6.2f} s, peak RSS {figures['peak_mib']:7.0f} MiB "
                  f"({figures['annotations']} annotations)")
        plain, ours = measured["baseline"], measured["labelguard"]
        what = f"a {size:.0f} MB COCO file, {count:,} annotations"
        report.row(f"baseline: `json.load` of {what}, time", f"{plain['seconds']:.2f} s")
        report.row("labelguard's COCO audit of the same file, time", f"{ours['seconds']:.2f} s",
                   f"{ours['seconds'] / plain['seconds']:.2f}x")
        report.row("baseline: `json.load`, peak RSS", f"{plain['peak_mib']:.0f} MiB")
        report.row("labelguard's COCO audit, peak RSS", f"{ours['peak_mib']:.0f} MiB",
                   f"{ours['peak_mib'] / plain['peak_mib']:.2f}x")
        report.row("an empty interpreter, peak RSS", f"{interpreter:.0f} MiB")
    report.finish()


if __name__ == "__main__":
    main()
