"""Match a log against the knowledge base and build the explanation.

Scoring is by evidence kind, not by entry: an assertion condition is the strongest evidence,
then a host/CPU message, then the kernel's file or function, then a torch function in the
traceback. The matcher never claims a cause: it ranks the causes the knowledge base lists for
the faults the log shows, and says what the log cannot tell.

The causes are ranked by the evidence tied to the failure (a cause's ``supported_by`` moves it
up, ``weakened_by`` down); evidence a cause only notes (``noted_by``: a finding printed at
start-up, the sign of inference that several causes share) is shown with it and moves nothing.
With no evidence for any of its causes, a fault's most common cause is the likely one (the
prior), but never a cause listed only for evidence it notes: then no cause is likely. Each
ranked cause lists which evidence moved it and which it only notes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from labelguard.core.text import cut
from labelguard.explain._evidence import Evidence, gather
from labelguard.explain._extract import Facts, digest, extract, normalise
from labelguard.flight import (
    ORDER_EXACT,
    BatchRecord,
    FlightRecord,
    read_record,
)
from labelguard.explain._knowledge import ENTRIES, GENERIC_STEPS, Cause, Entry

if TYPE_CHECKING:
    from labelguard.core.registry import Check

# Evidence weights. One piece of evidence per kind counts once per entry.
WEIGHTS = {"condition": 10, "message": 8, "kernel": 4, "frame": 2}
STRONG = ("condition", "message", "kernel")
# A cause's likelihood, strongest first; causes are listed in this order.
LIKELIHOODS = ("likely", "possible", "less likely")


@dataclass(frozen=True)
class Match:
    """An entry of the knowledge base that the log matches.

    Attributes:
        entry: the entry's id.
        title: what failed.
        score: the summed weight of the evidence kinds found.
        evidence: each piece of evidence, as ``kind: text found``.
        kinds: the evidence kinds found.
    """

    entry: str
    title: str
    score: int
    evidence: tuple[str, ...]
    kinds: tuple[str, ...]

    @property
    def strong(self) -> bool:
        return any(kind in STRONG for kind in self.kinds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "entry": self.entry,
            "title": self.title,
            "score": self.score,
            "evidence": list(self.evidence),
        }


@dataclass(frozen=True)
class RankedCause:
    """A cause in the ranked list.

    Attributes:
        rank: 1 for the first cause to check.
        likelihood: what the log says about this cause (:data:`LIKELIHOODS`): ``likely``
            when the log shows the fault (its assertion condition or message) and either
            evidence for this cause or, with no evidence for any of the fault's causes, this
            is its most common one (not a cause listed only for evidence it notes); ``less
            likely`` when the log shows evidence against it;
            ``possible`` otherwise. Never more than ``likely``.
        id: the cause's stable id (the knowledge base's; ``labelguard-lg201`` for the check
            labelguard itself raised).
        entry: the knowledge-base entry the cause belongs to.
        support: the evidence tied to the failure that moved this cause up, as sentences.
        against: the evidence that moved it down.
        noted: the evidence shown with it that moved nothing: it made the cause worth listing,
            or is not tied to the failure.
    """

    rank: int
    likelihood: str
    id: str
    entry: str
    title: str
    why: str
    confirm: str
    codes: tuple[str, ...]
    fix: str
    support: tuple[str, ...] = ()
    against: tuple[str, ...] = ()
    noted: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "likelihood": self.likelihood,
            "id": self.id,
            "entry": self.entry,
            "title": self.title,
            "why": self.why,
            "confirm": self.confirm,
            "codes": list(self.codes),
            "fix": self.fix,
            "support": list(self.support),
            "against": list(self.against),
            "noted": list(self.noted),
        }


@dataclass(frozen=True)
class RecordSummary:
    """What a flight record adds to an explanation."""

    path: str
    in_flight: BatchRecord | None
    previous: tuple[BatchRecord, ...]
    epoch_complete: bool
    index_order: str
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "in_flight": self.in_flight.to_dict() if self.in_flight else None,
            "previous": [b.to_dict() for b in self.previous],
            "epoch_complete": self.epoch_complete,
            "index_order": self.index_order,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Explanation:
    """The explanation of a log.

    Attributes:
        recognised: False when no signature of the knowledge base matched.
        summary: one line: what failed, or that the log was not recognised.
        matches: the matched entries, best first.
        causes: the ranked causes, first to check first.
        facts: what the log says (kernel, condition, error, frames, versions).
        unknowns: what the log cannot tell, and where to get it.
        steps: the generic steps, always given.
        cpu_message: what the same fault prints on the CPU (for the best match).
        record: the batch in flight from a flight record, when one was given.
        evidence: what the whole log shows besides the error (losses over the steps, the
            paths of missing files, what labelguard reported), which ranks the causes.
    """

    recognised: bool
    summary: str
    matches: tuple[Match, ...]
    causes: tuple[RankedCause, ...]
    facts: Facts
    unknowns: tuple[str, ...]
    steps: tuple[str, ...]
    cpu_message: str | None = None
    record: RecordSummary | None = None
    evidence: tuple[Evidence, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "recognised": self.recognised,
            "summary": self.summary,
            "matches": [m.to_dict() for m in self.matches],
            "causes": [c.to_dict() for c in self.causes],
            "facts": self.facts.to_dict(),
            "unknowns": list(self.unknowns),
            "steps": list(self.steps),
            "cpu_message": self.cpu_message,
            "record": self.record.to_dict() if self.record else None,
            "evidence": [item.to_dict() for item in self.evidence],
        }


def explain(text: str, record: str | os.PathLike | FlightRecord | None = None) -> Explanation:
    """Explain a PyTorch error log: what failed, the likely causes, what to run next.

    Args:
        text: the log or traceback, as printed (several hundred assertion lines are fine).
        record: a flight record (its path or a loaded :class:`FlightRecord`) written by
            :func:`labelguard.torch.record`; adds the samples of the batch in flight.

    Returns:
        An :class:`Explanation`; ``explanation.recognised`` is False when no known signature
        matched, and the generic steps are given either way.

    Raises:
        FlightRecordError: ``record`` names a file that is missing or not a flight record.

    Example:
        >>> from labelguard.explain import explain
        >>> log = ("Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], "
        ...        "thread: [0,0,0] Assertion `t >= 0 && t < n_classes` failed.")
        >>> result = explain(log)
        >>> result.matches[0].entry
        'nll-target-out-of-range'
        >>> result.causes[0].codes
        ('LG102', 'LG201', 'LG101')
    """
    clean = normalise(text)
    facts = extract(clean)
    signatures = digest(clean)
    frame_text = "\n".join(f"{f.function or ''} {f.code or ''}" for f in facts.frames)

    found: list[tuple[Match, Entry, dict[str, str]]] = []
    for entry in ENTRIES:
        scored = _match(entry, signatures, frame_text)
        if scored is not None:
            found.append((scored[0], entry, scored[1]))
    if any(match.strong and not entry.generic for match, entry, _ in found):
        # The log names the fault: the catch-all entry and entries seen only in the
        # traceback's frames would dilute the causes.
        found = [item for item in found if item[0].strong and not item[1].generic]
    # Specific entries first: a generic entry survives only next to entries matched by their
    # traceback frames, which say more about the fault than "device-side assert" does.
    found.sort(key=lambda item: (item[1].generic, -item[0].score))

    values: dict[str, str] = {}
    for _, _, groups in found:
        for key, value in groups.items():
            values.setdefault(key, value)
    if values:
        facts = replace(facts, values=values)

    evidence = gather(clean, facts.frames)
    causes = _rank_causes(found, signatures, evidence)
    summary_record = _summarise_record(record) if record is not None else None
    recognised = bool(found)
    return Explanation(
        recognised=recognised,
        summary=_summary(found),
        matches=tuple(match for match, _, _ in found),
        causes=causes,
        facts=facts,
        unknowns=_unknowns(found, facts, summary_record),
        steps=GENERIC_STEPS,
        cpu_message=(found[0][1].cpu_message or None) if found else None,
        record=summary_record,
        evidence=evidence,
    )


@lru_cache(maxsize=None)
def _compiled(pattern: str) -> re.Pattern:
    return re.compile(pattern)


def _match(entry: Entry, text: str, frame_text: str) -> tuple[Match, dict[str, str]] | None:
    if not all(_compiled(p).search(text) for p in entry.requires):
        return None
    evidence: list[str] = []
    kinds: list[str] = []
    groups: dict[str, str] = {}
    sources = (
        ("condition", entry.conditions, text),
        ("message", entry.messages, text),
        ("kernel", entry.kernels, text),
        ("frame", entry.frames, frame_text),
    )
    for kind, patterns, haystack in sources:
        for pattern in patterns:
            hit = _compiled(pattern).search(haystack)
            if hit is None:
                continue
            evidence.append(f"{kind}: {_shorten(hit.group(0))}")
            groups.update({k: v for k, v in hit.groupdict().items() if v is not None})
            if kind not in kinds:
                kinds.append(kind)
            break
    if not kinds:
        return None
    score = sum(WEIGHTS[kind] for kind in kinds)
    return Match(entry.id, entry.title, score, tuple(evidence), tuple(kinds)), groups


def _rank_causes(
    found: list[tuple[Match, Entry, dict]], text: str, evidence: tuple[Evidence, ...]
) -> tuple[RankedCause, ...]:
    """The causes of the matched entries, each labelled by what the log shows about it, in
    the order likely, possible, less likely (the knowledge base's order within each)."""
    shown = {item.key: item.text for item in reversed(evidence)}
    ranked: list[RankedCause] = []
    seen: set[str] = set()
    for position, (match, entry, groups) in enumerate(found):
        fault_shown = not entry.generic and any(kind in ("condition", "message") for kind in match.kinds)
        preferred = {cause.id for cause in entry.causes if any(_compiled(p).search(text) for p in cause.prefer_when)}
        reports = {cause.id: _reports(cause, evidence) for cause in entry.causes if cause.reports}
        support = {cause.id: tuple(text for made in reports[cause.id] for text in made.support) if cause.reports
                   else _shown(cause.supported_by, shown) for cause in entry.causes}
        noted = {cause.id: _shown(cause.noted_by, shown) for cause in entry.causes}
        # With nothing in the log for any cause, the fault's most common cause is the likely one.
        prior = fault_shown and position == 0 and not preferred and not any(support.values())
        causes = sorted(entry.causes, key=lambda cause: cause.id not in preferred and not support[cause.id])
        for cause in causes:
            if cause.reports:
                for reported in reports[cause.id]:
                    if reported.id not in seen:
                        seen.add(reported.id)
                        ranked.append(replace(reported, likelihood="likely" if fault_shown else "possible",
                                              entry=entry.id))
                continue
            if cause.id in seen or (cause.needs_evidence and not any(key in shown for key in cause.offering)):
                continue
            seen.add(cause.id)
            against = _shown(cause.contradicted_by, shown) or (
                () if support[cause.id] else _shown(cause.weakened_by, shown))
            if against:
                likelihood = "less likely"
            elif fault_shown and (support[cause.id] or cause.id in preferred or (prior and not cause.needs_evidence)):
                likelihood = "likely"
                prior = False
            else:
                likelihood = "possible"
                # A cause listed only for evidence it notes (the sign of inference, a freeze reported at
                # start-up) is no most common cause of the fault: in line for the prior, it ends it.
                prior = prior and not cause.needs_evidence
            ranked.append(RankedCause(
                rank=0, likelihood=likelihood, id=cause.id, entry=entry.id, title=cause.title, why=cause.why,
                confirm=cause.confirm, codes=cause.codes, fix=cause.fix_for(groups),
                support=support[cause.id], against=against, noted=noted[cause.id],
            ))
    ranked.sort(key=lambda cause: LIKELIHOODS.index(cause.likelihood))
    return tuple(replace(cause, rank=rank) for rank, cause in enumerate(ranked, 1))


def _shown(keys: tuple[str, ...], shown: dict[str, str]) -> tuple[str, ...]:
    return tuple(shown[key] for key in keys if key in shown)


def _reports(cause: Cause, evidence: tuple[Evidence, ...]) -> list[RankedCause]:
    """The causes a template (``cause.reports``) makes of the errors labelguard raised: one per
    check code of its pattern, worded with that check's documentation."""
    made = []
    for item in evidence:
        if item.key not in cause.supported_by or item.code is None or not re.fullmatch(cause.reports, item.code):
            continue
        fields = _check_fields(item.code)
        made.append(RankedCause(
            rank=0, likelihood="possible", id=f"{cause.id}-{item.code.lower()}", entry="",
            title=cause.title.format(**fields), why=cause.why.format(**fields),
            confirm=cause.confirm.format(**fields), codes=(item.code,), fix=cause.fix.format(**fields),
            support=(item.text,),
        ))
    return made


def _check_fields(code: str) -> dict[str, str]:
    """What the check registry documents of ``code``, for a template's fields; a code this
    release does not know (a log of another release) says so."""
    check = _documented_checks().get(code)
    if check is None:
        return {"code": code, "name": "unknown-check", "summary": "a check this release of labelguard does not "
                "know (the log comes from another release)", "why": "",
                "fix": f"Read `labelguard rule {code}` with the release that printed it."}
    return {"code": code, "name": check.name, "summary": check.summary, "why": " ".join(check.why.split()),
            "fix": check.fix}


@lru_cache(maxsize=1)
def _documented_checks() -> dict[str, Check]:
    """The check registry's documentation as the package ships it (``labelguard._catalog``,
    generated from :mod:`labelguard.core.registry`): read without importing the rules, so that
    explain stays free of numpy (tests/test_startup.py)."""
    from labelguard._catalog import shipped_catalog

    return shipped_catalog().checks


def _unknowns(
    found: list[tuple[Match, Entry, dict]], facts: Facts, record: RecordSummary | None
) -> tuple[str, ...]:
    unknowns: list[str] = []
    for _, entry, groups in found:
        for item in _cannot_know(entry, groups):
            if item not in unknowns:
                unknowns.append(item)
    cuda_error = facts.assertion_lines > 0 or bool(
        facts.error_message and "CUDA error" in facts.error_message
    )
    if cuda_error and facts.user_frame is not None:
        unknowns.append(
            "whether the Python frame is the call that failed: CUDA reports kernel errors at "
            "the next synchronisation, so the traceback can point past the failing kernel "
            "unless the run used CUDA_LAUNCH_BLOCKING=1"
        )
    if facts.assertion_lines and facts.assertions:
        unknowns.append(
            "which sample held the bad value: block and thread numbers index CUDA threads, "
            "not samples or files"
        )
    if record is None:
        unknowns.append(
            "which samples were in the batch: the log holds no data (record the batches with "
            "labelguard.torch.record and pass --record, or audit the dataset)"
        )
    if facts.torch_version is None:
        unknowns.append(
            "the torch version: not printed (python -c \"import torch; print(torch.__version__)\")"
        )
    if not found:
        unknowns.insert(
            0,
            "what failed: the log holds no kernel assertion, no known host error and no known "
            "CPU message; paste the complete output, including the lines above the traceback",
        )
    return tuple(unknowns)


def _cannot_know(entry: Entry, groups: dict[str, str]) -> tuple[str, ...]:
    """What a log of ``entry``'s fault cannot tell, less what this log told (``groups``: the
    values its matched messages carried): a CPU error that named the target leaves only
    n_classes unknown (``Entry.told_by_values``)."""
    for values, instead in entry.told_by_values:
        if entry.cannot_know and all(value in groups for value in values):
            return ((instead,) if instead else ()) + entry.cannot_know[1:]
    return entry.cannot_know


def _summarise_record(record: str | os.PathLike | FlightRecord) -> RecordSummary:
    loaded = record if isinstance(record, FlightRecord) else read_record(record)
    notes: list[str] = []
    if loaded.in_flight is None:
        notes.append("the record holds no batch: the loop had not taken one yet")
    else:
        notes.append(
            "the batch in flight is the last one the loop took; CUDA reports errors late, so "
            "the fault can also belong to the batch before it (listed too); with "
            "CUDA_LAUNCH_BLOCKING=1 it is the batch in flight"
        )
    if loaded.epoch_complete:
        notes.append(
            "the loader had finished its pass: the crash came in the last step or outside "
            "this loader (e.g. validation with another loader)"
        )
    if loaded.index_order != ORDER_EXACT:
        notes.append(
            f"index order is '{loaded.index_order}': the indices may not match the batches "
            "exactly"
        )
    return RecordSummary(
        path=loaded.path,
        in_flight=loaded.in_flight,
        previous=loaded.previous[:1],
        epoch_complete=loaded.epoch_complete,
        index_order=loaded.index_order,
        notes=tuple(notes),
    )


def _summary(found: list[tuple[Match, Entry, dict]]) -> str:
    if not found:
        return "Not recognised: the log matches no known PyTorch error signature"
    best_match, best, _ = found[0]
    if best_match.strong:
        return best.title
    generic = next((entry for _, entry, _ in found if entry.generic), None)
    lead = generic.title if generic else "the log names no failing kernel"
    return f"{lead}; the traceback passes through {best.operation.split(',')[0]}"


def _shorten(text: str, limit: int = 120) -> str:
    return cut(" ".join(text.split()), limit)
