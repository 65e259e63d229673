"""The IR: ops, the UOp node, typed args, derived properties, patterns, the symbolic simplifier, verifiers."""
