"""The API's anonymous throttles live in `common.throttling` (every app's API uses them)."""

from common.throttling import ExportAnonThrottle, PublicAnonThrottle, ReleaseFileAnonThrottle

__all__ = ["ExportAnonThrottle", "PublicAnonThrottle", "ReleaseFileAnonThrottle"]
