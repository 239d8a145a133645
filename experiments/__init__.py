"""experiments package."""
