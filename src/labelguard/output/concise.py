"""One line per finding, as ruff's concise output: ``path:line: CODE [severity] message``.

``demo/voc/lists/train.txt:13: LG003 [error] 'case0009' does not exist under demo/voc``. The
line is the one the finding names (a list entry, a YOLO row), left out when it names none
(``masks/a.png: LG201 [error] ...``); an element that is no line (``object 3`` of a VOC file)
starts the message. A finding about a whole dataset has no file: its dataset's root stands in
for the path. Hints are not printed (the text report has them). Findings a baseline holds are
not listed; the last line counts what was found and audited, unless ``quiet``. Options:
``color`` (codes and severities in colour) and ``quiet``.

The sentence a rule ends a message with to say what the fault does in training (LG201's "On a
GPU this is the device-side assert ..." on each file; the finding's ``consequence``) is left out
of every line, one finding or many: a line holds the facts of one place, the text report says
that sentence once per code and ``labelguard rule CODE`` explains the code.
"""

from __future__ import annotations

from labelguard.core.text import plural, printable, severity_counts_text
from labelguard.output import Formatter, register
from labelguard.output._style import Style
from labelguard.output.places import finding_place
from labelguard.output.text import consequence_of, without


@register
class ConciseFormatter(Formatter):
    name = "concise"
    options = ("color", "quiet")

    def stop(self, report) -> None:
        style = Style(bool(self.settings.get("color")))
        known = report.baseline.is_known if report.baseline is not None else (lambda finding: False)
        root = report.datasets[0].root if len(report.datasets) == 1 else ", ".join(report.paths)
        lines = []
        counts = {"error": 0, "warning": 0, "info": 0}
        files = set()
        in_files = 0
        listed = [finding for finding in report.findings if not known(finding)]
        for finding in listed:
            severity = str(finding.severity)
            counts[severity] += 1
            place = finding_place(finding.data)
            path = finding.path if finding.path is not None else (finding.dataset or root)
            if finding.path is not None:
                files.add(finding.path)
                in_files += 1
            where = f"{path}:{place.line}:" if finding.path is not None and place.line else f"{path}:"
            message = without(finding.message, consequence_of(finding))
            if place.line and message.startswith(f"line {place.line}: "):
                message = message[len(f"line {place.line}: "):]  # the line is said once, after the path
            else:
                message = place.prefix(message) + message
            # The path and message are escaped; colour goes around the code and severity only.
            lines.append(f"{printable(where)} {style.code(finding.code)} "
                         f"{style.severity(f'[{severity}]', severity)} {printable(message)}")
        lines += [f"{style.severity('internal error', 'error')}: {printable(error)}" for error in report.errors]
        if not self.settings.get("quiet"):
            lines += [f"note: {printable(note)}" for note in report.notes]
            lines.append(printable(self._summary(report, counts, files, in_files)))
        self.stream.write("".join(line + "\n" for line in lines))

    @staticmethod
    def _summary(report, counts: dict[str, int], files: set, in_files: int) -> str:
        """The last line: what was found, in how many files (a finding about a whole dataset is
        in none), of how many audited."""
        if report.audited_nothing:
            return "Nothing was checked: no file was audited."
        audited = plural(report.summary.samples, "file" if set(report.summary.kinds) <= {"mask"} else "sample")
        total = sum(counts.values())
        known = (f"; {plural(len(report.baseline.known), 'known finding')} of {report.baseline.source} not listed"
                 if report.baseline is not None else "")
        if not total:
            return f"No {'new ' if report.baseline is not None else ''}findings: {audited} audited{known}."
        # A finding about a whole dataset is in no file: "in 0 files" would read as nothing found.
        whole = total - in_files
        if not whole:
            where = f" in {plural(len(files), 'file')}"
        elif not files:
            where = f", {'all ' if whole > 1 else ''}about a whole dataset"
        else:
            where = f": {in_files:,} in {plural(len(files), 'file')}, {whole:,} about a whole dataset"
        return (f"Found {plural(total, 'new finding' if report.baseline is not None else 'finding')} "
                f"({severity_counts_text(counts)}){where}; {audited} audited{known}.")
