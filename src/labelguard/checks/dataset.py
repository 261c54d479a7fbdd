"""The dataset-level rules, run once per dataset on its merged summary.

They live in :mod:`labelguard.rules` (LG104, LG105, LG208, LG209, LG401...); this module
names them for the audit: ``DATASET_CHECKS`` is the registry's live list of dataset rules,
each called as ``rule(summary, spec) -> list[Finding]``.
"""

from __future__ import annotations

import labelguard.rules  # noqa: F401  (registers every rule)
from labelguard.core.rules import rules_for
from labelguard.rules._dataset import main_values, suggested_remap
from labelguard.rules.lg401 import IMBALANCE

__all__ = ["DATASET_CHECKS", "IMBALANCE", "main_values", "suggested_remap"]

DATASET_CHECKS = rules_for("dataset")
