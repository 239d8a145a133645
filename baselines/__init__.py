"""baselines package."""
