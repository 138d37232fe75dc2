"""The topic message browser: a bounded, cursor-paged scan of a topic's partitions with
filters (key, header, text and a small safe expression language), and one message's
trace (delivery per group, retries, dead letter), and its live tail.

- :mod:`.expr`: the filter expression language (a tiny parser; never ``eval``)
- :mod:`.filters`: key, header, text and expression filters over one message
- :mod:`.scan`: the scan (partitions merged by id, newest or oldest first, cursor, bound)
- :mod:`.trace`: what became of one message
- :mod:`.tail`: the live tail (what arrived since a cursor, at a bounded rate)
"""

from mqcore.browse.expr import Expression, ExpressionError, compile_expression
from mqcore.browse.filters import Filters
from mqcore.browse.scan import BrowsePage, BrowseQuery, browse_topic
from mqcore.browse.trace import MessageTrace, message_trace

__all__ = [
    "BrowsePage",
    "BrowseQuery",
    "Expression",
    "ExpressionError",
    "Filters",
    "MessageTrace",
    "browse_topic",
    "compile_expression",
    "message_trace",
]
