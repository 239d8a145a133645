"""polytopes package."""
