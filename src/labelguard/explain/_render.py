"""Plain-text rendering of explanations and replay reports (the CLI prints these)."""

from __future__ import annotations

import re
import textwrap
from datetime import datetime

from labelguard.core.text import plural
from labelguard.explain._engine import Explanation, RecordSummary
from labelguard.flight import BatchRecord
from labelguard.explain._replay import ReplayReport

WIDTH = 100
MAX_SITES = 3
MAX_SAMPLES = 20
# The short explanation (the CLI's default): this many causes, the facts of these labels,
# this many samples of a batch in flight.
# The general steps the short form shows when the log points at no cause.
SHORT_STEPS = 2
SHORT_CAUSES = 3
SHORT_FACTS = ("condition", "error", "your code", "values", "on the CPU")
SHORT_SAMPLES = 8


def render_explanation(result: Explanation, *, verbose: bool = True) -> str:
    """The explanation as readable text, ranked causes first after the facts; without
    ``verbose``, the short one (:func:`render_short`)."""
    if not verbose:
        return render_short(result)
    out: list[str] = [f"labelguard explain: {result.summary}", ""]
    if result.matches:
        out.append("Matched on")
        for match in result.matches:
            out.append(_wrap(f"{match.entry}: " + "; ".join(match.evidence), "  ", "    "))
        out.append("")
    facts_lines = _facts(result)
    if facts_lines:
        out.append("What the log says")
        out.extend(facts_lines)
        out.append("")
    if result.causes:
        out.append("Causes to check, most likely first")
        if any(cause.support or cause.against or cause.noted for cause in result.causes):
            out.append(_wrap("(seen: evidence tied to the failure that moved a cause up; against: evidence "
                             "that moved it down; noted: evidence shown that moved nothing)", "  ", "   "))
        for cause in result.causes:
            out.append(_wrap(f"{cause.rank}. [{cause.likelihood}] {cause.title}", "  ", "     "))
            for seen in cause.support:
                out.append(_wrap(f"seen:    {seen}", "     ", "              "))
            for seen in cause.against:
                out.append(_wrap(f"against: {seen}", "     ", "              "))
            for seen in cause.noted:
                out.append(_wrap(f"noted:   {seen}", "     ", "              "))
            out.append(_wrap(f"why:     {cause.why}", "     ", "              "))
            codes = f"  [{', '.join(cause.codes)}]" if cause.codes else ""
            out.append(_wrap(f"confirm: {cause.confirm}{codes}", "     ", "              "))
            out.append(_wrap(f"fix:     {cause.fix}", "     ", "              "))
        out.append("")
    if result.record is not None:
        out.extend(_record(result.record))
        out.append("")
    if result.unknowns:
        out.append("What the log cannot tell")
        out.extend(_wrap(f"- {item}", "  ", "    ") for item in result.unknowns)
        out.append("")
    out.append("Steps that help whatever the cause")
    out.extend(
        _wrap(f"{number}. {step}", "  ", "     ") for number, step in enumerate(result.steps, 1)
    )
    return "\n".join(out) + "\n"


def render_short(result: Explanation) -> str:
    """The explanation in a screenful: the key facts, the most likely causes each with one
    line of reason, the checks that confirm them, the first cause's fix, the samples in
    flight; and how to see the rest (``-v``)."""
    out: list[str] = [f"labelguard explain: {result.summary}", ""]
    seen_labels: set[str] = set()
    rows = []
    for label, value in _fact_rows(result):
        if label in SHORT_FACTS and label not in seen_labels:
            seen_labels.add(label)
            rows.append(_fact_line(label, value))
    if rows:
        out.append("What the log says")
        out.extend(rows)
        out.append("")
    causes = result.causes[:SHORT_CAUSES]
    if causes:
        out.append("Most likely causes" if len(causes) > 1 else "Most likely cause")
        for cause in causes:
            out.append(_wrap(f"{cause.rank}. [{cause.likelihood}] {cause.title}", "  ", "     "))
            reason = f"seen: {cause.support[0]}" if cause.support else f"why:  {_first_sentence(cause.why)}"
            out.append(_wrap(reason, "     ", "           "))
        out.append("")
        out.append("To confirm")
        # One line per command: causes confirmed by the same command (told apart by their words
        # after it, which -v keeps) share a line, with all their codes.
        confirms: dict[str, tuple[str, list[str]]] = {}
        for cause in causes:
            stem = _command_stem(cause.confirm)
            text, codes = confirms.setdefault(stem, (cause.confirm, []))
            if text != cause.confirm:
                confirms[stem] = (stem, codes)
            codes.extend(code for code in cause.codes if code not in codes)
        out.extend(_wrap(f"- {text}" + (f"  [{', '.join(codes)}]" if codes else ""), "  ", "    ")
                   for text, codes in confirms.values())
        out.append("")
        out.append(f"Fix, if it is cause {causes[0].rank}")
        out.append(_wrap(causes[0].fix, "  ", "  "))
        out.append("")
    # A log that names no cause more than the others (the bare "device-side assert triggered",
    # the most common paste) is acted on by getting more of it: what it lacks and the first
    # steps come first, not behind -v.
    narrowing = bool(causes) and not any(cause.likelihood == "likely" for cause in causes)
    if narrowing:
        out.append("To narrow it down")
        out.extend(_wrap(f"- {unknown}", "  ", "    ") for unknown in result.unknowns[:1])
        out.extend(_wrap(f"{number}. {step}", "  ", "     ")
                   for number, step in enumerate(result.steps[:SHORT_STEPS], 1))
        out.append("")
    if result.record is not None:
        out.extend(_record(result.record, SHORT_SAMPLES))
        out.append("")
    if not causes:
        # Nothing was recognised: the general steps are all the advice there is.
        out.append("Steps that help whatever the cause")
        out.extend(_wrap(f"{number}. {step}", "  ", "     ") for number, step in enumerate(result.steps, 1))
        out.append("")
    left = []
    if len(result.causes) > len(causes):
        left.append(plural(len(result.causes) - len(causes), "more cause"))
    if causes:
        left.append("each cause's evidence and its whole why and fix")
    if result.unknowns[1 if narrowing else 0:]:
        left.append("what else the log cannot tell" if narrowing else "what the log cannot tell")
    if causes and len(result.steps) > (SHORT_STEPS if narrowing else 0):
        left.append("the other steps that help whatever the cause" if narrowing
                    else "the steps that help whatever the cause")
    record = result.record
    if record is not None and (record.previous or record.notes):  # what _record leaves out here
        hidden = [plural(len(record.previous), "earlier batch")] if record.previous else []
        hidden += [plural(len(record.notes), "note")] if record.notes else []
        left.append(f"the flight record's {' and '.join(hidden)}")
    if left:
        out.append(_wrap(f"labelguard explain -v adds {_listing(left)}.", "", ""))
    return "\n".join(out).rstrip("\n") + "\n"


def _command_stem(confirm: str) -> str:
    """The command a cause's "confirm" text starts with: up to its first comma, parenthesis or
    " on the " / " for " that explains it."""
    return re.split(r"\s*\(|,| on the | for ", confirm, maxsplit=1)[0].strip()


def _listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _first_sentence(text: str) -> str:
    """The first sentence of ``text`` (up to a full stop followed by a capital letter)."""
    found = re.match(r"(.+?[.!?])\s+(?=[A-Z`'\"(])", " ".join(text.split()))
    return found.group(1) if found else " ".join(text.split())


def _facts(result: Explanation) -> list[str]:
    return [_fact_line(label, value) for label, value in _fact_rows(result)]


def _fact_line(label: str, value: str) -> str:
    return _wrap(f"{label + ':' if label else '':<13}{value}", "  ", " " * 15)


def _fact_rows(result: Explanation) -> list[tuple[str, str]]:
    facts = result.facts
    rows: list[tuple[str, str]] = []
    for site in facts.assertions[:MAX_SITES]:
        where = _source_path(site.location) if site.location else "(location not printed)"
        if site.function:
            where += f" ({site.function})"
        rows.append(("kernel", where))
        rows.append(("condition", site.condition))
        threads = plural(site.count, "assertion line")
        if site.blocks:
            threads += f" from {plural(site.blocks, 'CUDA block')}"
        if site.first_block:
            threads += f" (first: block {site.first_block}, thread {site.first_thread})"
        rows.append(("printed", threads))
    if len(facts.assertions) > MAX_SITES:
        rows.append(("", f"... {plural(len(facts.assertions) - MAX_SITES, 'more assertion site')}"))
    if facts.error_type:
        rows.append(("error", f"{facts.error_type}: {facts.error_message}"))
    if facts.user_frame is not None:
        rows.append(("your code", facts.user_frame.describe()))
    if facts.torch_call is not None:
        rows.append(("torch call", facts.torch_call.describe()))
    environment = []
    if facts.torch_version:
        environment.append(f"torch {facts.torch_version}")
    if facts.python_version:
        environment.append(f"python {facts.python_version}")
    if facts.windows:
        environment.append("Windows paths")
    if environment:
        rows.append(("environment", ", ".join(environment)))
    for hint in facts.era:
        rows.append(("torch era", hint))
    if facts.values:
        rows.append(("values", ", ".join(f"{k}={v}" for k, v in facts.values.items())))
    if result.cpu_message:
        rows.append(("on the CPU", cpu_fact(result.cpu_message)))
    rows.extend(("evidence", item.text) for item in result.evidence)
    return rows


# A CPU message that is an error as torch prints it ("IndexError: Target 3 is out of bounds."):
# an example of what the CPU says, values and all. Any other is a sentence about the CPU run.
_EXCEPTION_TEXT = re.compile(r"[A-Z]\w*(?:Error|Exception): ")


def cpu_fact(message: str) -> str:
    """The "on the CPU" fact: an error torch prints there after "e.g.", a sentence as it is (it
    has its own words: "the same step raises ..., such as 'IndexError: ...'")."""
    return f"e.g. {message}" if _EXCEPTION_TEXT.match(message) else message


def _source_path(location: str) -> str:
    """The kernel's path from the source tree's root (aten/..., torch/lib/...), without the
    build machine's prefix; the full path is in the JSON output."""
    found = re.search(r"(?i)(?<![A-Za-z0-9_])(?:aten|torch)[\\/].*", location)
    return found.group(0) if found else location


def _record(record: RecordSummary, samples: int | None = None) -> list[str]:
    """The flight record's lines: the batch in flight (its first ``samples`` samples and the
    replay command only, when given), then the batches before it."""
    out = [f"Flight record ({record.path})"]
    if record.in_flight is not None:
        out.append(f"  batch in flight: {_batch_header(record.in_flight)}")
        out.extend(_samples(record.in_flight, samples or MAX_SAMPLES))
    for batch in record.previous if samples is None else ():
        out.append(f"  batch before it: {_batch_header(batch)}")
        out.extend(_samples(batch))
    for note in record.notes if samples is None else ():
        out.append(_wrap(f"note: {note}", "  ", "        "))
    out.append(
        _wrap(
            f"replay on the CPU: labelguard replay {record.path} --dataset-factory "
            "MODULE:FUNCTION --loss MODULE:FUNCTION",
            "  ",
            "    ",
        )
    )
    return out


def _batch_header(batch: BatchRecord) -> str:
    count = plural(len(batch.indices), "sample") if batch.indices is not None else "an unknown number of samples"
    when = datetime.fromtimestamp(batch.time).strftime("%Y-%m-%d %H:%M:%S") if batch.time else ""
    return (
        f"epoch {batch.epoch}, batch {batch.step_in_epoch} of the epoch (step {batch.step}), "
        f"{count}" + (f", taken {when}" if when else "")
    )


def _samples(batch: BatchRecord, limit: int = MAX_SAMPLES) -> list[str]:
    samples = batch.samples()
    if not samples:
        return ["    (indices not recorded)"]
    lines = [
        f"    index {index:<8} {source}" if source else f"    index {index}"
        for index, source in samples[:limit]
    ]
    if len(samples) > limit:
        lines.append(f"    ... {len(samples) - limit:,} more (see --output-format json)")
    return lines


def render_replay(report: ReplayReport) -> str:
    """A replay report as readable text: failing samples first, with their CPU errors."""
    out = [
        f"labelguard replay: {report.summary}",
        f"  record:  {report.record_path}",
        f"  dataset: {report.dataset}",
        f"  checks:  {', '.join(report.checks)}",
        "",
    ]
    for batch in report.batches:
        out.append(f"{batch.role.capitalize()}: {_batch_header(batch.batch)}")
        if batch.batch_error:
            out.append(_wrap(f"whole batch: {batch.batch_error}", "  ", "    "))
        failing = [s for s in batch.samples if not s.ok]
        for sample in failing:
            where = f"index {sample.index}" + (f" ({sample.source})" if sample.source else "")
            for problem in sample.problems:
                out.append(_wrap(f"{where}: {problem}", "  ", "    "))
        if not batch.replayed:
            out.append(f"  {plural(len(batch.samples), 'sample')} not checked")
        else:
            passed = len(batch.samples) - len(failing)
            out.append(f"  {passed:,} of {plural(len(batch.samples), 'sample')} passed")
        out.append("")
    for note in report.notes:
        out.append(_wrap(f"note: {note}", "", "      "))
    return "\n".join(out).rstrip("\n") + "\n"


def _wrap(text: str, first: str, rest: str) -> str:
    return textwrap.fill(
        text,
        width=WIDTH,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )
