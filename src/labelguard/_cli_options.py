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


class ImportedChoice(click.Choice):
    """A :class:`click.Choice` of the names a module defines, imported only when a value is
    parsed or the help is shown: the module stays the one definition of the names, and a
    command that does not use the option does not import it."""

    def __init__(self, module: str, attribute: str) -> None:  # (click.Choice's own fields are properties here)
        self._source = (module, attribute)
        self.case_sensitive = True

    @property
    def choices(self):  # type: ignore[override]  # click.Choice keeps them as a plain attribute
        import importlib

        module, attribute = self._source
        return tuple(getattr(importlib.import_module(module), attribute))
