"""Every log of the corpus gets its expected first cause.

``corpus/corpus.json`` maps each log to the id of the cause explain must rank first and says
where the log's shape comes from: public reports reshaped (the error lines as printed; paths,
numbers and words around them our own), output labelguard.torch printed, and the real logs of
``logs/``. explain sees the text alone, never the file's name. ``benchmarks/explain_corpus.py``
prints the same run as a score.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest

from labelguard.explain import explain
from labelguard.explain._extract import decode
from labelguard.explain._knowledge import ENTRIES

CORPUS = Path(__file__).parent / "corpus"
MANIFEST = json.loads((CORPUS / "corpus.json").read_text(encoding="utf-8"))["logs"]
CAUSE_IDS = {cause.id for entry in ENTRIES for cause in entry.causes}


@pytest.mark.parametrize("item", MANIFEST, ids=lambda item: item["file"])
def test_the_expected_cause_ranks_first(item):
    result = explain(decode((CORPUS / item["file"]).read_bytes()))
    ranked = [(cause.id, cause.likelihood) for cause in result.causes]
    assert ranked and ranked[0][0] == item["first_cause"], ranked
    assert ranked[0][1] == "likely" or not result.causes[0].support, "a cause the log supports is likely"


def test_the_corpus_is_large_and_every_log_in_it_is_listed_once():
    files = [item["file"] for item in MANIFEST]
    assert len(files) == len(set(files)) and len(files) >= 40
    assert sorted(path.name for path in CORPUS.glob("*.log")) == sorted(f for f in files if "/" not in f)
    assert all((CORPUS / f).is_file() for f in files)


@pytest.mark.parametrize("item", MANIFEST, ids=lambda item: item["file"])
def test_each_entry_names_a_known_cause_and_its_source(item):
    reported = re.fullmatch(r"labelguard(?:-note)?-lg\d{3}", item["first_cause"])
    assert item["first_cause"] in CAUSE_IDS or reported, item["first_cause"]
    assert len(item["source"]) > 20


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.log")), ids=lambda path: path.name)
def test_corpus_logs_name_no_path_of_the_machine_that_wrote_them(path):
    """No log names this checkout or this machine's temporary folder (where a log printed by a
    local run would show them)."""
    text = decode(path.read_bytes())
    checkout = str(Path(__file__).resolve().parents[2])
    assert checkout not in text and tempfile.gettempdir() + "/" not in text
