"""What the trust model costs: the per-file link check and the per-dataset config decision,
each against the work it sits beside, measured in this one run.

* per file: ``core.paths.open_within`` under the audit's granted roots (the open every reader
  goes through: ``O_NOFOLLOW``, and one look-up of the folder's verdict) against a plain
  ``os.open`` of the same ``-n`` files, each opened, stated and closed. A plain file must cost
  about what it cost before (target: under 2 us more a file, beside the ~500 us of reading
  a 512x512 mask);
* per dataset: ``config.ConfigFinder`` finding a dataset's own ``labelguard.toml`` and
  deciding what of it applies (``within_trust``: the refused ``[audit] engine`` included)
  against the TOML parser parsing the same file alone (target: microseconds, once a dataset).

Each figure is the best of ``--repeat`` interleaved rounds.

Usage::

    python benchmarks/bench_trust.py            # 5,000 files
    python benchmarks/bench_trust.py -n 200 --repeat 1
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from labelguard.config import ConfigFinder, toml_parser
from labelguard.core.paths import applied_roots, granted_roots, open_within

import _docs  # the module beside this script

FLAGS = os.O_RDONLY | os.O_NONBLOCK
CONFIG = '[labels]\nnum_classes = 3\nignore_index = [255]\n\n[audit]\nengine = "dask"\nformat = "masks"\n'


def plain_opens(paths: list[str]) -> None:
    for path in paths:
        fd = os.open(path, FLAGS)
        os.fstat(fd)
        os.close(fd)


def checked_opens(paths: list[str], roots) -> None:
    with applied_roots(roots):
        for path in paths:
            fd = open_within(path, FLAGS)
            os.fstat(fd)
            os.close(fd)


def timed(work, rounds: int = 1) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        work()
    return (time.perf_counter() - start) / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--count", type=int, default=5000, help="files opened per round (default 5,000)")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds; the best of each counts")
    report = _docs.Report("bench_trust", parser)
    args = parser.parse_args()
    report.start(args)
    with tempfile.TemporaryDirectory(prefix="labelguard-bench-trust-") as folder:
        data = Path(folder) / "data"
        paths = []
        for index in range(args.count):
            sub = data / f"part{index // 1000}"
            sub.mkdir(parents=True, exist_ok=True)
            path = sub / f"m{index:06d}.png"
            path.write_bytes(b"\x89PNG\r\n\x1a\n")
            paths.append(str(path))
        (data / "labelguard.toml").write_text(CONFIG, encoding="utf-8")
        roots = granted_roots([str(data)])
        plain, checked, parsed, decided = [], [], [], []
        rounds = 200
        for _ in range(args.repeat):
            plain.append(timed(lambda: plain_opens(paths)))
            checked.append(timed(lambda: checked_opens(paths, roots)))
            parsed.append(timed(lambda: toml_parser().loads((data / "labelguard.toml").read_text(encoding="utf-8")),
                                rounds))
            decided.append(timed(lambda: ConfigFinder(None).configs(str(data)), rounds))
    per_file = (min(checked) - min(plain)) / args.count * 1e6
    print(f"{args.count} files, best of {args.repeat}")
    print(f"  os.open + fstat + close                      {min(plain) / args.count * 1e6:8.2f} us a file")
    print(f"  open_within under the granted roots          {min(checked) / args.count * 1e6:8.2f} us a file")
    print(f"  ratio checked / plain: {min(checked) / min(plain):.2f}x; "
          f"{per_file:+.2f} us a file (target: under +2 us)")
    print(f"  TOML parse of the dataset's labelguard.toml    {min(parsed) * 1e6:8.1f} us")
    print(f"  ConfigFinder: found, parsed, within_trust    {min(decided) * 1e6:8.1f} us a dataset")
    print(f"  ratio config decision / parse alone: {min(decided) / min(parsed):.2f}x")
    report.row("baseline: `os.open` + `fstat` + `close`", f"{min(plain) / args.count * 1e6:.2f} us a file")
    report.row("`open_within` under the granted roots", f"{min(checked) / args.count * 1e6:.2f} us a file",
               f"{min(checked) / min(plain):.2f}x ({per_file:+.2f} us)")
    report.row("baseline: TOML parse of a dataset's `labelguard.toml`", f"{min(parsed) * 1e6:.1f} us")
    report.row("`ConfigFinder`: found, parsed, trust decided", f"{min(decided) * 1e6:.1f} us a dataset",
               f"{min(decided) / min(parsed):.2f}x")
    report.finish()


if __name__ == "__main__":
    main()
