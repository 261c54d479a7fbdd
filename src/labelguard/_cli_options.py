"""What the command lines of labelguard (``labelguard ...`` and ``labelguard fix ...``) share:
option values parsed for click, with click's own error for a bad one."""

from __future__ import annotations

import click


def storage_options_of(text: str | None) -> dict | None:
    """The --storage-options JSON object (fsspec storage options, e.g. endpoint_url)."""
    if not text:
        return None
    from labelguard.readers.base import ReadError, parse_json

    try:
        value = parse_json(text)
    except ReadError as exc:
        raise click.BadParameter(str(exc), param_hint="--storage-options") from None
    if not isinstance(value, dict):
        raise click.BadParameter(f"a JSON object is needed, like '{{\"endpoint_url\": \"http://...\"}}', "
                                 f"got {type(value).__name__}", param_hint="--storage-options")
    return value
