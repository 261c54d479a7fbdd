"""The baseline file: every finding's identity, for ``--baseline`` (see labelguard.baseline)."""

from __future__ import annotations

import json

from labelguard.baseline import baseline_document
from labelguard.output import Formatter, register


@register
class BaselineFormatter(Formatter):
    name = "baseline"

    def stop(self, report) -> None:
        json.dump(baseline_document(report), self.stream, indent=2)
        self.stream.write("\n")
