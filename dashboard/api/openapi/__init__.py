"""Hand-written OpenAPI rows of the routes not yet declared as operations
(:mod:`dashboard.operations`); the document is built in :mod:`dashboard.operations.openapi`."""
