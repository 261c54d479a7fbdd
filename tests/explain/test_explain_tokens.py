"""explain on the embedding asserts NLP users meet (transformers #1848, #1538, #10832): the
causes point to the token audit (``labelguard audit --model-config``) and to preflight, with
the token codes."""

from __future__ import annotations

import pytest
from explain_fixtures import read_log

from labelguard.explain import explain


@pytest.mark.parametrize("name", ["cuda_embedding_index_select_torch20.log", "cuda_embedding_windows.log",
                                  "cuda_index_select_thc_old.log", "cpu_embedding.log"])
def test_an_embedding_assert_points_to_the_token_audit_and_preflight(name):
    causes = explain(read_log(name)).causes
    tokens, positions = causes[0], causes[1]
    assert tokens.codes == ("LG601", "LG605")
    assert "labelguard audit" in tokens.confirm and "--model-config" in tokens.confirm
    assert "--tokenizer" in tokens.confirm and "labelguard.torch.preflight(model" in tokens.confirm
    assert positions.codes == ("LG602", "LG603") and "--model-config" in positions.confirm


def test_a_classification_assert_lists_labels_past_a_transformers_head():
    causes = explain(read_log("cuda_nll_reduce_accelerator_error.log")).causes
    [labels] = [cause for cause in causes if "LG604" in cause.codes]
    assert "--model-config" in labels.confirm and "num_labels" in labels.title
