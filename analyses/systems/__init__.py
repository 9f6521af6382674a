"""The paper's systems claims: peak memory as a measured map, throughput as a predicted map.

``memory``: per-stage memory against 1F1B; ``throughput``: the schedule model's map;
``claim``: the rows (docs/SYSTEMS.md).
"""

from analyses.systems import claim  # noqa: F401  (registers the rows)
