"""The topic message browser: a bounded, cursor-paged scan of a topic's partitions with
filters (key, header, text and a small safe expression language), and one message's
trace (delivery per group, retries, dead letter).

- :mod:`.expr`: the filter expression language (a tiny parser; never ``eval``)
"""

from mqcore.browse.expr import Expression, ExpressionError, compile_expression

__all__ = ["Expression", "ExpressionError", "compile_expression"]
