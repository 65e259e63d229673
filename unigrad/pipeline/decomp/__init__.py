"""Decompositions used by instruction selection (pipeline/isel.py): each module turns one family of the spec's
decomposed ops into primitives. `numerics` holds the float formats and small graph-building helpers."""
