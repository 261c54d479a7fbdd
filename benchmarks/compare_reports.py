"""Behaviour check of a refactoring: two checkouts' JSON reports over the same data, compared.

Audits every folder of the real datasets under ``../shared`` (``corpus``, ``realworld``,
``realworld2``: each set, and each folder up to three levels below it) and a few generated
trees (the demo's three sets, a VOC devkit, a COCO file, a YOLO set) with the labelguard
of each checkout, as the command line does (``audit PATH -f json --no-cache --no-config
-j 1``, one process per folder), then compares the reports with the tool's version left out
(by its path in the report). Each side must import its own checkout's labelguard. It prints a
line per folder that gave no report on a side (never counted identical), one per differing
folder (the first ``--show``) with the first differing place, and a summary; the exit code is
1 when any report differs or is missing.

Usage::

    python benchmarks/compare_reports.py OLD_REF            # OLD_REF (a commit) vs the working tree
    python benchmarks/compare_reports.py OLD_REF NEW_REF    # two commits
    python benchmarks/compare_reports.py OLD_REF --only realworld2 --show 3

A commit is checked out into a temporary git worktree (removed at the end); the working tree
is this checkout's ``src``. Both run with this interpreter, so they share its dependencies.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = REPO.parent / "shared"
SETS = ("corpus", "realworld", "realworld2")
DEPTH = 3
# Report fields that differ between two checkouts of the same behaviour, by their path in the
# report (the report's schema version is compared).
VOLATILE = {("tool", "version")}


def real_targets(only: str | None) -> list[Path]:
    targets = []
    for name in SETS:
        top = SHARED / name
        if not top.is_dir() or (only and only != name):
            continue
        for folder, subfolders, _ in os.walk(top):
            depth = len(Path(folder).relative_to(top).parts)
            if depth >= DEPTH:
                subfolders[:] = []
            subfolders.sort()
            targets.append(Path(folder))
    return targets


def generated_targets(root: Path, src: Path) -> list[tuple[Path, list[str]]]:
    """Write the generated trees under ``root`` with the labelguard under ``src``; returns
    (folder, extra audit arguments) pairs."""
    code = f"""
import sys
sys.path.insert(0, {str(src)!r})
from labelguard.demo import write_demo
print("\\n".join(write_demo({str(root / 'demo')!r}).values()))
"""
    demo = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    targets = [(Path(p), []) for p in demo] + [(Path(demo[0]), ["--num-classes", "9"])]
    rng = random.Random(0)
    voc = root / "voc"
    (voc / "Annotations").mkdir(parents=True)
    (voc / "JPEGImages").mkdir()
    names = ["cat", "dog", "person", "car"]
    for i in range(60):
        objects = "".join(
            f"<object><name>{rng.choice(names + ['dgo'] if i % 17 == 0 else names)}</name><bndbox>"
            f"<xmin>{x}</xmin><ymin>{y}</ymin><xmax>{x + rng.choice([-5, 30])}</xmax><ymax>{y + 20}</ymax>"
            "</bndbox></object>"
            for x, y in [(rng.randint(0, 90), rng.randint(0, 90)) for _ in range(rng.randint(1, 3))])
        (voc / "Annotations" / f"{i:04d}.xml").write_text(
            f"<annotation><filename>{i:04d}.jpg</filename><size><width>128</width><height>128</height>"
            f"<depth>3</depth></size>{objects}</annotation>")
        if i % 23:
            (voc / "JPEGImages" / f"{i:04d}.jpg").write_bytes(b"")
    targets += [(voc, []), (voc, ["--classes", ",".join(names)])]
    yolo = root / "yolo"
    for split in ("train", "val"):
        (yolo / "images" / split).mkdir(parents=True)
        (yolo / "labels" / split).mkdir(parents=True)
        for i in range(40):
            rows = [f"{rng.choice([0, 1, 2, 3 if i % 13 == 0 else 1])} {rng.random():.3f} {rng.random():.3f} "
                    f"{rng.uniform(0.01, 0.3):.3f} {rng.uniform(0.01, 0.3):.3f}" for _ in range(rng.randint(0, 4))]
            (yolo / "labels" / split / f"{i}.txt").write_text("\n".join(rows) + "\n")
            (yolo / "images" / split / f"{i}.jpg").write_bytes(b"")
    (yolo / "data.yaml").write_text("path: .\ntrain: images/train\nval: images/val\nnc: 3\nnames: [a, b, c]\n")
    targets.append((yolo, []))
    coco = root / "coco"
    (coco / "images").mkdir(parents=True)
    images = [{"id": i, "file_name": f"{i}.jpg", "width": 64, "height": 64} for i in range(30)]
    annotations = [{"id": k, "image_id": rng.randrange(32), "category_id": rng.choice([1, 2, 3, 7]),
                    "bbox": [rng.randint(0, 60), rng.randint(0, 60), rng.randint(-2, 20), 10], "area": 100,
                    "iscrowd": 0}
                   for k in range(120)]
    (coco / "annotations.json").write_text(json.dumps({"images": images, "annotations": annotations, "categories": [
        {"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}]}))
    for image in images[:-3]:
        (coco / "images" / image["file_name"]).write_bytes(b"")
    targets.append((coco, []))
    return targets


def audit(src: Path, target: Path, extra: list[str], cwd: Path) -> tuple[int, object]:
    env = dict(os.environ, PYTHONPATH=str(src), NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        run = subprocess.run([sys.executable, "-m", "labelguard", "audit", str(target), "-f", "json", "--no-cache",
                              "--no-config", "-j", "1", "--no-progress", "-o", out.name, *extra],
                             capture_output=True, text=True, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                             timeout=900)
        text = Path(out.name).read_text()
    if not text.strip():
        return run.returncode, None  # no report: the audit failed (counted apart, never "identical")
    return run.returncode, stable(json.loads(text))


def stable(value: object, path: tuple = ()) -> object:
    if isinstance(value, dict):
        return {k: stable(v, path + (k,)) for k, v in value.items() if path + (k,) not in VOLATILE}
    if isinstance(value, list):
        return [stable(v, path) for v in value]
    return value


def imported_from(src: Path) -> Path:
    """The labelguard package a side's audits import (it must be the checkout's own)."""
    done = subprocess.run([sys.executable, "-c", "import labelguard; print(labelguard.__file__)"], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(src)), check=True, timeout=120)
    return Path(done.stdout.strip()).resolve()


def first_difference(old: object, new: object, where: str = "") -> str | None:
    if type(old) is not type(new):
        return f"{where or '/'}: {str(old)[:120]!r} -> {str(new)[:120]!r}"
    if isinstance(old, dict):
        assert isinstance(new, dict)
        for key in sorted(set(old) | set(new), key=str):
            if key not in old or key not in new:
                return f"{where}/{key}: {'added' if key not in old else 'removed'}"
            found = first_difference(old[key], new[key], f"{where}/{key}")
            if found:
                return found
        return None
    if isinstance(old, list):
        assert isinstance(new, list)
        for i, (a, b) in enumerate(zip(old, new)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        if len(old) != len(new):
            return f"{where}: {len(old)} items -> {len(new)}"
        return None
    return None if old == new else f"{where}: {str(old)[:160]!r} -> {str(new)[:160]!r}"


def checkout(ref: str, into: Path) -> Path:
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(into), ref], check=True,
                   capture_output=True)
    return into / "src"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="the commit before the change")
    parser.add_argument("new", nargs="?", help="the commit after it (default: this working tree)")
    parser.add_argument("--only", choices=SETS + ("generated",), help="compare one set only")
    parser.add_argument("--show", type=int, default=20, help="differing folders shown (default 20)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lg-compare-") as scratch:
        base = Path(scratch)
        worktrees = []
        try:
            old_src = checkout(args.old, base / "old")
            worktrees.append(base / "old")
            if args.new:
                new_src = checkout(args.new, base / "new")
                worktrees.append(base / "new")
            else:
                new_src = REPO / "src"
            for side in (old_src, new_src):
                package = imported_from(side)
                if not package.is_relative_to(side.resolve()):
                    raise SystemExit(f"{side} does not hold the labelguard its audits import ({package})")
            cwd = base / "cwd"
            cwd.mkdir()
            targets: list[tuple[Path, list[str]]] = []
            if args.only in (None, "generated"):
                targets += generated_targets(base / "generated", new_src)
            if args.only != "generated":
                targets += [(t, []) for t in real_targets(args.only)]
            differing = []
            failed = []
            for target, extra in targets:
                old_rc, old = audit(old_src, target, extra, cwd)
                new_rc, new = audit(new_src, target, extra, cwd)
                name = str(target.relative_to(SHARED) if target.is_relative_to(SHARED) else target.relative_to(base))
                name += " " + " ".join(extra) if extra else ""
                if old is None or new is None:
                    failed.append((name, f"no report from {'both sides' if old is new else 'one side'} "
                                         f"(exit codes {old_rc}, {new_rc})"))
                    continue
                where = first_difference(old, new) if old_rc == new_rc else f"exit code {old_rc} -> {new_rc}"
                if where:
                    differing.append((name, where))
            for name, where in failed + differing[:args.show]:
                print(f"{'FAILED' if (name, where) in failed else 'DIFFERS'} {name}: {where}")
            if len(differing) > args.show:
                print(f"... and {len(differing) - args.show} more folders differ")
            print(f"{len(targets)} audits compared ({args.old} vs {args.new or 'the working tree'}): "
                  f"{len(targets) - len(differing) - len(failed)} identical, {len(differing)} differ, "
                  f"{len(failed)} gave no report")
        finally:
            for tree in worktrees:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                               capture_output=True)
    return 1 if differing or failed else 0


if __name__ == "__main__":
    sys.exit(main())
