"""JSON output: the report's versioned schema (see labelguard.report)."""

from __future__ import annotations

import json

from labelguard.core.text import printable, printable_data
from labelguard.output import Formatter, register


@register
class JsonFormatter(Formatter):
    name = "json"

    def stop(self, report) -> None:
        """The report as ``json.dump(printable_data(report.to_dict()), indent=2)`` writes it,
        byte for byte, with the list of files (as long as the dataset) streamed into its place.

        Every string is shown as the other formats show it (:func:`printable`): a name's control
        characters and the bytes of a non-UTF-8 name escaped, never a lone surrogate, which not
        every JSON reader takes. ``--baseline`` matches files by that same form."""
        data = printable_data(report.to_dict(files=False))
        data["summary"]["files"] = FILES_MARK
        text = json.dumps(data, indent=2, default=lambda value: printable(str(value)))
        before, after = text.split(json.dumps(FILES_MARK), 1)
        self.stream.write(before)
        self.stream.write("[")
        separator = "\n" + FILES_INDENT
        for path in report.files:
            self.stream.write(separator + json.dumps(printable(path)))
            separator = ",\n" + FILES_INDENT
        if len(report.files):
            self.stream.write("\n" + FILES_INDENT[:-2])
        self.stream.write("]")
        self.stream.write(after)
        self.stream.write("\n")


# Stands for summary.files while the rest of the report is encoded (no path is this string).
FILES_MARK = "\x00labelguard files\x00"
# summary.files is two levels deep: its items are indented by three steps of two spaces.
FILES_INDENT = " " * 6
