"""Format readers: turn files into plain records. They know formats, not label rules."""

from labelguard.readers.base import ReadError

__all__ = ["ReadError"]
