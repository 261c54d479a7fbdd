"""JSON output: the report's versioned schema (see labelguard.report)."""

from __future__ import annotations

import json

from labelguard.output import Formatter, register


@register
class JsonFormatter(Formatter):
    name = "json"

    def stop(self, report) -> None:
        json.dump(report.to_dict(), self.stream, indent=2, default=str)
        self.stream.write("\n")
