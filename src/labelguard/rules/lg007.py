"""LG007: the definition of the code; the layouts and discovery report it."""

from labelguard.core.registry import define

NOT_AUDITED = define(
    "LG007", "label-file-not-audited", "warning",
    summary="a file that can hold labels lies under the audited path but no dataset audited it",
    why="""
A layout detected for part of a folder, a second dataset beside the first or an export the tool
does not know leaves label files unread: an audit that says "No findings" about the files it
did read says nothing about these, and they are what the DataLoader may load.""",
    bad="download/ holds as_yolo/ (audited) and masks/*.png that no dataset read",
    good="every mask, annotation file and label list under PATH audited, or named as an image or metadata",
    fix="Audit the folder that holds them (`labelguard detect PATH` shows how each folder was taken), force "
    "the layout that reads them with --format, or move them out of the dataset if they are not part of it.",
)
