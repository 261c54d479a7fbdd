"""explain(): matching rules, extraction edge cases, honesty, the knowledge base's integrity."""

from __future__ import annotations

import json
import re
import traceback

import pytest
from explain_fixtures import read_log

import labelguard.rules  # noqa: F401  (registers every code)
from labelguard.core.registry import REGISTRY
from labelguard.explain import explain
from labelguard.explain._extract import decode, extract, normalise
from labelguard.explain._knowledge import ENTRIES, GENERIC_STEPS

NLL_LINE = (
    "../aten/src/ATen/native/cuda/Loss.cu:{line}: nll_loss_forward_reduce_cuda_kernel_2d: "
    "block: [0,0,0], thread: [{thread},0,0] Assertion `t >= 0 && t < n_classes` failed."
)


# --- the knowledge base -----------------------------------------------------------------


def test_entry_ids_are_unique_and_kebab_case():
    ids = [entry.id for entry in ENTRIES]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", i) for i in ids)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_entry_is_complete_and_its_patterns_compile(entry):
    assert entry.title and entry.operation and entry.causes
    assert entry.conditions or entry.messages, "an entry needs a strong signature"
    for pattern in (*entry.conditions, *entry.kernels, *entry.messages, *entry.frames,
                    *entry.requires, *(p for c in entry.causes for p in c.prefer_when)):
        re.compile(pattern)
    for cause in entry.causes:
        assert cause.title and cause.why and cause.confirm and cause.fix


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_causes_cite_only_catalog_codes(entry):
    for cause in entry.causes:
        unknown = [code for code in cause.codes if code not in REGISTRY]
        assert not unknown, f"{cause.title}: {unknown} are not check codes"
        if not cause.codes and not cause.reports:  # labelguard's own finding cites the code it raised
            assert "no labelguard" in cause.confirm, "say so when no check confirms a cause"


def test_cause_ids_are_kebab_case_and_name_one_cause_each():
    by_id: dict[str, set[str]] = {}
    for entry in ENTRIES:
        for cause in entry.causes:
            assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", cause.id), cause.id
            by_id.setdefault(cause.id, set()).add(cause.title)
    assert {i: titles for i, titles in by_id.items() if len(titles) > 1} == {}


def test_every_key_a_cause_names_is_evidence_the_log_can_show():
    from labelguard.explain._evidence import KEYS

    for entry in ENTRIES:
        for cause in entry.causes:
            assert set(cause.supported_by + cause.weakened_by + cause.contradicted_by + cause.noted_by
                       + cause.offered_by) <= set(KEYS), cause.id


@pytest.mark.parametrize(
    "entry", [e for e in ENTRIES if re.match(r"\w+Error: ", e.cpu_message)], ids=lambda e: e.id
)
def test_the_cpu_message_an_entry_quotes_is_recognised_as_that_entry(entry):
    first = entry.cpu_message.split(" / ")[0].split(" (")[0]
    assert explain(first).matches[0].entry == entry.id


def test_line_numbers_are_not_part_of_any_signature():
    for entry in ENTRIES:
        for pattern in (*entry.conditions, *entry.kernels):
            assert not re.search(r":\d", pattern), f"{entry.id}: {pattern} pins a line number"


# --- matching -----------------------------------------------------------------------------


@pytest.mark.parametrize("line", [245, 250, 271, 1, 99999])
def test_any_line_number_matches(line):
    result = explain(NLL_LINE.format(line=line, thread=0))
    assert result.matches[0].entry == "nll-target-out-of-range"
    assert result.facts.assertions[0].line == line


def test_condition_alone_matches_without_kernel_file():
    result = explain("Assertion `t >= 0 && t < n_classes` failed.")
    assert result.matches[0].entry == "nll-target-out-of-range"
    assert result.matches[0].evidence == ("condition: t >= 0 && t < n_classes",)


def test_kernel_file_alone_is_weaker_evidence_than_the_condition():
    by_kernel = explain(
        "/pytorch/aten/src/ATen/native/cuda/NLLLoss2d.cu:103: nll_loss2d_forward_kernel"
    )
    by_condition = explain("Assertion `t >= 0 && t < n_classes` failed.")
    assert by_kernel.matches[0].entry == "nll-target-out-of-range"
    assert by_kernel.matches[0].score < by_condition.matches[0].score
    assert by_kernel.causes[0].likelihood == "possible"


def test_unsigned_byte_targets_print_a_shorter_condition():
    line = NLL_LINE.format(line=163, thread=0)
    result = explain(line.replace("t >= 0 && t < n_classes", "t < n_classes"))
    assert result.matches[0].entry == "nll-target-out-of-range"


def test_thousands_of_assertion_lines_collapse_into_one_site():
    lines = [NLL_LINE.format(line=245, thread=t) for t in range(20000)]
    result = explain("\n".join(lines) + "\nRuntimeError: CUDA error: device-side assert\n")
    site, = result.facts.assertions
    assert (site.count, site.blocks, site.first_thread) == (20000, 1, "[0,0,0]")
    assert result.facts.assertion_lines == 20000


def test_two_different_assertions_are_two_sites():
    text = read_log("cuda_bernoulli_from_source.log")
    conditions = [a.condition for a in explain(text).facts.assertions]
    assert conditions == ["0 <= p4 && p4 <= 1", "0 <= p3 && p3 <= 1"]


def test_other_cuda_errors_are_recognised_without_a_likely_cause():
    result = explain("RuntimeError: CUDA error: no kernel image is available for execution on "
                     "the device\n")
    assert result.matches[0].entry == "cuda-error"
    assert result.facts.values["cuda_error"].startswith("no kernel image")
    assert result.causes[0].title == "the torch build (or an extension) has no kernels for this GPU"
    assert {c.likelihood for c in result.causes} == {"possible"}


def test_empty_text_is_not_recognised():
    result = explain("")
    assert not result.recognised and result.steps == GENERIC_STEPS


def test_without_evidence_no_cause_is_ruled_down_and_the_likely_ones_come_first():
    """Logs that hold the error and no evidence beyond it: no cause is "less likely" (nothing
    in the log speaks against one) or claims support, and the likely ones (the fault's most
    common cause, a cause the message itself names) come before the possible ones."""
    for name in ("cuda_nll2d_torch113.log", "cpu_gather.log", "cuda_generic_bce_frame.log"):
        result = explain(read_log(name))
        assert result.evidence == () and result.causes, name
        likelihoods = [c.likelihood for c in result.causes]
        assert "less likely" not in likelihoods, name
        assert likelihoods == sorted(likelihoods, key=("likely", "possible").index), name
        assert all(not c.support and not c.against for c in result.causes), name


def test_causes_are_ranked_from_one_without_duplicates():
    causes = explain(read_log("cpu_gather.log")).causes
    assert [c.rank for c in causes] == list(range(1, len(causes) + 1))
    assert len({c.title for c in causes}) == len(causes)


def test_unknowns_say_what_the_log_cannot_tell():
    unknowns = " ".join(explain(read_log("cuda_nll2d_torch113.log")).unknowns)
    assert "prints the condition, not the numbers" in unknowns
    assert "CUDA_LAUNCH_BLOCKING=1" in unknowns  # the frame may be late
    assert "block and thread numbers" in unknowns
    assert "torch version" in unknowns
    assert "--record" in unknowns


def test_the_steps_are_always_given():
    for text in ("", read_log("cuda_nll2d_torch113.log"), "ValueError: nope"):
        assert explain(text).steps == GENERIC_STEPS
    joined = " ".join(GENERIC_STEPS)
    for needed in ("CUDA_LAUNCH_BLOCKING=1", "$env:CUDA_LAUNCH_BLOCKING=1", "on the CPU",
                   "labelguard audit", "labelguard.torch.guard", "labelguard.torch.record",
                   "restart"):
        assert needed in joined


def test_to_dict_is_json_with_every_part():
    data = json.loads(json.dumps(explain(read_log("cpu_cross_entropy_target.log")).to_dict()))
    assert set(data) == {"recognised", "summary", "matches", "causes", "facts", "unknowns",
                         "steps", "cpu_message", "record", "evidence"}
    assert data["facts"]["values"] == {"target": "3"}
    assert data["causes"][0]["codes"]


def test_the_docstring_example_runs():
    import doctest

    from labelguard.explain import _engine

    assert doctest.testmod(_engine).failed == 0


# --- extraction ---------------------------------------------------------------------------


def test_ansi_colours_carriage_returns_and_rank_prefixes_are_removed():
    text = ("\x1b[31m[rank1]: RuntimeError: CUDA error: device-side assert triggered\x1b[0m\r\n"
            "  5%|▌    | 10/200\r 6%|▌    | 12/200\r\n")
    clean = normalise(text)
    assert clean.splitlines()[0] == "RuntimeError: CUDA error: device-side assert triggered"
    assert clean.splitlines()[1] == " 6%|▌    | 12/200"


def test_logger_prefixed_exception_lines_are_found():
    facts = extract("ERROR 01-12 03:14:07 [core.py:710] torch.AcceleratorError: CUDA error: boom")
    assert (facts.error_type, facts.error_message) == ("torch.AcceleratorError", "CUDA error: boom")


def test_python_311_caret_lines_are_not_taken_for_code():
    facts = explain(read_log("cpu_cross_entropy_target.log")).facts
    assert facts.user_frame.code == "loss = criterion(logits, mask)"


def test_chained_tracebacks_keep_every_error():
    text = read_log("cpu_stack_dataloader.log")
    facts = explain(text).facts
    assert facts.errors[0] == "RuntimeError: Caught RuntimeError in DataLoader worker process 0."
    assert facts.error_message.startswith("stack expects each tensor to be equal size")


@pytest.mark.parametrize("encoding", ["gb18030", "utf-16", "utf-8-sig"])
def test_windows_encodings_are_decoded(encoding):
    text = read_log("cuda_nll2d_windows_chinese.log")
    decoded = decode(text.encode(encoding))
    assert decoded.replace("\ufeff", "") == text
    result = explain(decoded)
    assert result.facts.user_frame.path == "D:\\深度学习\\语义分割\\train.py"


def test_chinese_text_glued_to_a_kernel_path_stays_out_of_it():
    result = explain(
        "报错信息：/pytorch/aten/src/ATen/native/cuda/Loss.cu:115: operator(): block: [19,0,0], "
        "thread: [0,0,0] Assertion `input_val >= zero && input_val <= one` failed。"
    )
    assert result.facts.assertions[0].path == "/pytorch/aten/src/ATen/native/cuda/Loss.cu"
    assert result.matches[0].entry == "bce-input-out-of-range"


# --- the same faults raised now by the installed torch on the CPU -------------------------


CPU_FAULTS = {
    "nll-target-out-of-range": "F.cross_entropy(torch.zeros(2, 3), torch.tensor([0, 3]))",
    "bce-input-out-of-range": "F.binary_cross_entropy(torch.tensor([1.5]), torch.tensor([1.0]))",
    "bce-target-out-of-range": "F.binary_cross_entropy(torch.tensor([0.5]), torch.tensor([2.0]))",
    "index-select-out-of-range": "F.embedding(torch.tensor([7]), torch.zeros(5, 2))",
    "indexing-out-of-bounds": "torch.zeros(5)[torch.tensor([7])]",
    "scatter-gather-out-of-bounds": "F.one_hot(torch.tensor([0, 4]), 3)",
    "index-add-out-of-bounds": "torch.zeros(5).index_copy_(0, torch.tensor([9]), torch.ones(1))",
    "multinomial-invalid-probabilities": "torch.multinomial(torch.tensor([-1.0, 1.0]), 1)",
    "bernoulli-probability-out-of-range": "torch.bernoulli(torch.tensor([1.5]))",
    "multi-margin-target-out-of-range": "F.multi_margin_loss(torch.zeros(1, 3), torch.tensor([5]))",
    "stack-unequal-size": "torch.stack([torch.zeros(2, 2), torch.zeros(3, 3)])",
}


@pytest.mark.parametrize("entry, expression", sorted(CPU_FAULTS.items()))
def test_installed_torch_cpu_error_is_recognised(entry, expression):
    torch = pytest.importorskip("torch")
    try:
        eval(expression, {"torch": torch, "F": torch.nn.functional})
    except Exception:
        text = traceback.format_exc()
    else:
        pytest.fail(f"{expression} did not raise")
    assert explain(text).matches[0].entry == entry, text
