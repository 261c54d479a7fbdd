"""The token audit in the report formats and with the result cache: SARIF, JUnit and GitHub
point at the dataset row a token finding names (and its line, in a JSON-lines file), the HTML
report shows the token spec, and tokenized data files are read again on every audit while the
masks audited beside them come from the cache."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ElementTree

import pytest
from click.testing import CliRunner

from audit_helpers import found
from builders import organic_mask, write_png
from labelguard._audit import audit
from labelguard.cli import main
from labelguard.core.cache import CacheSettings, open_cache
from labelguard.core.spec import LabelSpec
from labelguard.output import write_report
from labelguard.readers.tokens import token_spec_from_files
from nlp_builders import bert_config, save_model, train_tokenizer, write_parquet
from test_cache import age
from test_ci_formats import _github_requirements, _sarif_schema


@pytest.fixture
def tokenized(tmp_path):
    """A BERT model whose embedding has the tokenizer's rows less the two tokens added to it,
    and the same six rows of ids as Parquet and as JSON lines with blank lines between (row 0
    and row 3 hold an added token; row 3 is line 6 of the JSON-lines file)."""
    tokenizer = train_tokenizer(tmp_path / "tokenizer", added_special=("<ent>", "</ent>"))
    vocab = tokenizer.get_vocab_size(with_added_tokens=False)
    save_model(bert_config(vocab), tmp_path / "model")
    texts = ["<ent> the cat sat", "a dog ran", "the model reads", "labels <ent> outside", "the mat", "a park"]
    ids = [tokenizer.encode(text).ids for text in texts]
    write_parquet(tmp_path / "data" / "parquet" / "train.parquet", {"input_ids": ids})
    lines = [json.dumps({"input_ids": row}) for row in ids]
    jsonl = tmp_path / "data" / "jsonl" / "train.jsonl"
    jsonl.parent.mkdir(parents=True)
    jsonl.write_text("\n".join(lines[:2]) + "\n\n" + lines[2] + "\n\n" + "\n".join(lines[3:]) + "\n")
    assert vocab in json.loads(jsonl.read_text().splitlines()[5])["input_ids"]  # row 3 is line 6
    return tmp_path, vocab


def _cli(root, *args):
    result = CliRunner().invoke(main, ["audit", "data", "--model-config", "model", "--tokenizer", "tokenizer",
                                       "--no-progress", "--workers", "1", "--no-cache", *args])
    assert result.exit_code == 1, result.output
    return result.output


@pytest.mark.code("LG601", "fail")
def test_sarif_points_at_the_row_of_an_arrow_file_and_the_line_of_a_json_lines_file(tokenized, monkeypatch):
    root, vocab = tokenized
    monkeypatch.chdir(root)
    log = json.loads(_cli(root, "-f", "sarif"))
    assert _github_requirements(log) == []
    results = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r
               for r in log["runs"][0]["results"] if r["ruleId"] == "LG601"}
    parquet = results["data/parquet/train.parquet"]["locations"][0]
    assert parquet["physicalLocation"]["region"] == {"startLine": 1}
    assert parquet["logicalLocations"] == [{"name": "row 0", "kind": "element"}]
    assert parquet["message"]["text"] == "the file as a whole (row 0)"
    jsonl = results["data/jsonl/train.jsonl"]["locations"][0]
    assert jsonl["physicalLocation"]["region"] == {"startLine": 1}
    assert jsonl["logicalLocations"] == [{"name": "row 0", "kind": "element"}]
    assert "message" not in jsonl
    [tokenizer] = [r for r in log["runs"][0]["results"] if r["ruleId"] == "LG605"]
    assert tokenizer["locations"][0]["message"]["text"] == "the dataset as a whole"


def test_the_token_audits_sarif_is_valid_against_the_schema(tokenized, monkeypatch):
    validator = _sarif_schema()
    root, _ = tokenized
    monkeypatch.chdir(root)
    assert [error.message for error in validator.iter_errors(json.loads(_cli(root, "-f", "sarif")))] == []


def test_the_json_lines_row_past_blank_lines_is_shown_on_its_line(tokenized, monkeypatch):
    root, vocab = tokenized
    monkeypatch.chdir(root)
    report = audit(["data/jsonl"], token_spec(root), use_project_config=False, workers=1, cache=False)
    [finding] = found(report, "LG601")
    assert finding.data["rows"] == [0, 3] and finding.data["lines"] == [1, 6]
    finding.data["rows"], finding.data["lines"] = [3], [6]  # as a file whose first bad row is row 3
    [annotation] = [line for line in _written(report, "github").splitlines() if "LG601" in line]
    # the line is the annotation's; the message names its rows itself, so no "row 3: " before it
    assert annotation.startswith("::error file=data/jsonl/train.jsonl,line=6,title=LG601 token-id-past-embedding::"
                                 "'input_ids': 2 rows hold token ids outside"), annotation
    junit = ElementTree.fromstring(_written(report, "junit"))
    [failure] = junit.iter("failure")
    assert failure.text.startswith("LG601 error: data/jsonl/train.jsonl (line 6, row 3)\n")


def test_github_and_junit_name_the_row_of_a_parquet_file_and_no_line(tokenized, monkeypatch):
    root, _ = tokenized
    monkeypatch.chdir(root)
    annotations = [line for line in _cli(root, "-f", "github").splitlines() if "train.parquet" in line]
    assert [line.split("::")[1] for line in annotations] == [
        "error file=data/parquet/train.parquet,title=LG601 token-id-past-embedding"]
    # no line in a Parquet file: the message itself names the rows (row 0 first)
    text = annotations[0].split("::")[2]
    assert text.startswith("'input_ids': 2 rows hold token ids outside") and "; rows 0, 3" in text, text
    suite = ElementTree.fromstring(_cli(root, "-f", "junit")).find("testsuite")
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    [failure] = cases["data/parquet/train.parquet"].findall("failure")
    assert failure.text.startswith("LG601 error: data/parquet/train.parquet (row 0)\n")


def test_the_html_report_shows_the_token_spec_and_never_says_nothing_was_checked(tokenized):
    pytest.importorskip("matplotlib", reason="the HTML report draws its charts with matplotlib (labelguard[html])")
    root, vocab = tokenized
    report = audit([str(root / "data")], token_spec(root), use_project_config=False, workers=1, cache=False)
    page = _written(report, "html")
    assert f"token spec: <code>vocab_size {vocab}, max_position_embeddings 64" in page
    assert "values and classes were listed, not checked" not in page
    assert "&#x27;input_ids&#x27;: 2 rows hold token ids outside" in page


def test_the_text_report_states_the_token_spec_as_the_spec_and_suggests_no_init(tokenized, monkeypatch):
    root, vocab = tokenized
    monkeypatch.chdir(root)
    output = _cli(root)
    [line] = [line for line in output.splitlines() if line.startswith("spec:")]
    assert line.startswith(f"spec:      tokens: vocab_size {vocab}, max_position_embeddings 64")
    assert "no label spec given" not in output and "labelguard init" not in output


def test_token_files_are_read_on_every_audit_and_masks_beside_them_come_from_the_cache(tokenized):
    """Tokenized data files are not cached (hashing one costs about what auditing it does);
    a token spec in the label spec leaves the masks of the same audit cacheable."""
    root, vocab = tokenized
    masks = root / "masks"
    for index in range(3):
        write_png(masks / f"m{index}.png", organic_mask((16, 16), classes=(0, 1, 2), seed=index))
    age(root)  # no file is too recent to be stored (core.cache.RACY_SECONDS)
    spec = LabelSpec(num_classes=3, tokens=token_spec(root).tokens)
    cache = root / "cache"
    paths = [str(masks), str(root / "data")]
    runs = [audit(paths, spec, use_project_config=False, workers=1, cache=str(cache)) for _ in range(2)]
    without = audit(paths, spec, use_project_config=False, workers=1, cache=False)
    assert [r.from_cache for r in runs] == [0, 3]
    assert open_cache(CacheSettings(str(cache))).info().entries == 3
    assert [(f.code, f.path, f.data) for f in runs[1].findings] == [(f.code, f.path, f.data) for f in without.findings]
    assert {f.code for f in without.findings} == {"LG601", "LG605"}


def token_spec(root) -> LabelSpec:
    return LabelSpec(tokens=token_spec_from_files(str(root / "model"), str(root / "tokenizer" / "tokenizer.json")))


def _written(report, output_format: str) -> str:
    buffer = io.StringIO()
    write_report(report, output_format, buffer)
    return buffer.getvalue()
