"""Reads behind the console's read pages and their JSON twins, one module per page concept.

- :mod:`.params`: query parameter parsing, paging and the errors both raise.
- :mod:`.snapshot`: reading the collectors' latest snapshot of a cluster.
- :mod:`.overview`: the overview's rows, sort, filters and counts; the topic list.
- :mod:`.topic`: one topic's detail and charts; its groups and their live lag.
- :mod:`.series`: the time series behind the topic's charts, for the API.
- :mod:`.partitions`: the topic's partition panel (rate, length, memory, skew) and the
  hot-key sample of one partition.
- :mod:`.pending`: one page of a group's pending entries.
- :mod:`.leases`: live leases and consumers of a topic, and the lease timeline.
- :mod:`.messages`: one partition entry, masked when its payload may not be shown.
- :mod:`.timeline`: the incident timeline (collector events and audited operator actions).

Overview and topic pages render from the collectors' latest snapshot and time
series (``dashboard.store``: cheap, bounded); pending, leases, lag and one
message go live to the MQ Redis through ``mqcore.admin`` (bounded by mqcore).
Every function takes the cluster name first and returns plain data; unknown
clusters, topics, groups and messages raise ``Http404`` subclasses with a message
that is safe to show.
"""
