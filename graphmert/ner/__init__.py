"""Entity recognition and linking for raw text (issue #19)."""
