"""Data-loss prevention: find secrets and personal data, redact them where text leaves.

``scan_content(text)`` is the entry point for a whole text; ``StreamingRedactor`` for
an answer that streams; ``autorag.dlp.service.DlpService`` adds the installation's
patterns, settings (enabled, bypass roles) and the audit trail.
"""

from autorag.dlp.patterns import BUILTINS, DEFAULT_PATTERNS, Pattern, compile_custom
from autorag.dlp.scanner import REDACTED, Match, ScanResult, scan_content
from autorag.dlp.streaming import StreamingRedactor

__all__ = [
    "BUILTINS",
    "DEFAULT_PATTERNS",
    "REDACTED",
    "Match",
    "Pattern",
    "ScanResult",
    "StreamingRedactor",
    "compile_custom",
    "scan_content",
]
