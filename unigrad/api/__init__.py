"""The Tensor API beyond the core: each module is a mixin of compositions over the core Tensor ops.

tensor.py holds the core (construction, realization, the spec's primitives with broadcasting and promotion);
these mixins add what users reach for, written only in terms of core Tensor methods, so every result is
built from the spec's primitives and compiled like any other graph:

  math.py      elementwise compositions (trig, hyperbolic, erf, activations, pow, rounding, ...)
  reduce.py    reductions and scans (var/std, argmax, logsumexp, cumsum, any/all, ...)
  movement.py  movement and indexing (cat, stack, repeat, split, roll, __getitem__, gather, ...)
  creation.py  constructors (linspace, eye, *_like, random numbers)
  nn.py        neural-network functional ops (softmax, conv, pooling, losses, attention, ...)
"""
