"""SQL models of the console (one module per area; import them here for Django)."""

from dashboard.models.tokens import ApiToken

__all__ = ["ApiToken"]
