"""Statistics every family shares: seed-level intervals and the diverged-run rule (``seeds``),
shares of events counted per seed (``shares``), the moving-block bootstrap (``bootstrap``) and
the table's multiplicity correction (``multiplicity``)."""
