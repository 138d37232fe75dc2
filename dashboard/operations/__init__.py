"""Operations declared once: each gives a page, a JSON API view and an OpenAPI entry.

:mod:`.declare` is the framework, :mod:`.registry` finds the areas, one module per area
declares its operations, and :mod:`.openapi` builds the document from them.
"""
