import labelguard.fix


def test_public_api_is_exactly_this():
    assert labelguard.fix.__all__ == [
        "FileChange", "FixError", "FixResult", "Harmonization", "UndoResult", "apply_mapping", "clean_list", "colors",
        "drop", "harmonize", "remap", "remap_ids", "rename", "undo",
    ]
    for name in labelguard.fix.__all__:
        assert getattr(labelguard.fix, name).__doc__
