"""Node power: policies deciding which nodes to power off and on (``policy``,
``idle_timeout``, ``hgfs``), with the shared safety rules and node choice (``selection``)."""
