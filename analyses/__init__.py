"""Analyses: pure functions from run directories to result objects (docs/MATH.md names).

One package per claim family, mirroring ``docs/``: ``lemma2``, ``assumption5``, ``theorem1``,
``proposition1``, ``versus``, ``systems``; beside them ``stats`` (seed intervals, shares, the
block bootstrap, the multiplicity correction) and ``descriptive`` (what the report shows and no
row decides). ``io`` reads run directories, ``results`` holds the result objects, ``registry``
the verdict table's rows. Each family's ``claim`` module registers its rows: importing the
families below, in table order, builds the table (as peft's ``tuners`` package registers its
methods by plain imports).
"""

from analyses import lemma2, assumption5, theorem1, versus, proposition1, systems  # noqa: F401,I001  (table order)
