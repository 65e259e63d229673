"""The lowering pipeline, one module per spec stage: callify, rangeify, expand, isel, linearize."""
