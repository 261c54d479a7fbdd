"""How often ``labelguard explain`` ranks the right cause first, on the corpus of real-shaped logs.

``tests/explain/corpus/corpus.json`` lists each log with the id of the cause that must rank first
and where the log's shape comes from. For every log this runs :func:`labelguard.explain.explain`
and prints whether the expected cause is first, and whether it is among the first three; then the
score: N of M first causes right, and N of M in the top 3. ``tests/explain/test_explain_corpus.py``
asserts every first cause, so this script is the readable view of the same run (and a quick way
to see what a change to the knowledge base does to all of them).

Usage::

    python benchmarks/explain_corpus.py            # one line per log, then the score
    python benchmarks/explain_corpus.py --misses   # only the logs whose first cause is wrong
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "explain" / "corpus"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--misses", action="store_true", help="print only the logs whose first cause is wrong")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(CORPUS.parents[2] / "src"))
    from labelguard.explain import explain
    from labelguard.explain._extract import decode

    manifest = json.loads((CORPUS / "corpus.json").read_text(encoding="utf-8"))
    first_right = top3_right = 0
    for item in manifest["logs"]:
        result = explain(decode((CORPUS / item["file"]).read_bytes()))
        ranked = [cause.id for cause in result.causes]
        first = ranked[0] if ranked else "-"
        is_first = first == item["first_cause"]
        in_top3 = item["first_cause"] in ranked[:3]
        first_right += is_first
        top3_right += in_top3
        if not args.misses or not is_first:
            mark = "ok  " if is_first else ("top3" if in_top3 else "MISS")
            print(f"{mark} {item['file']:<58} expected {item['first_cause']:<32} first {first}")
    total = len(manifest["logs"])
    print(f"\nfirst cause right: {first_right} of {total}; expected cause in the top 3: {top3_right} of {total}")
    return 0 if first_right == total else 1


if __name__ == "__main__":
    sys.exit(main())
