"""metrics: shared-task scorers (CCKS relation F1, correlation and agreement)."""

__all__: list[str] = []
