"""OCR of scanned pages and images: engines by name, page rendering, quality scores,
and OCR jobs with progress and an admin's review (``service``)."""
