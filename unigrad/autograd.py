"""torch.autograd's functional entry points over unigrad's gradients: grad() and backward().

In: output tensors (and the gradients flowing into them), input tensors. Out: d(outputs)/d(inputs) as lazy
tensors (grad), or the gradients added into the leaves' .grad (backward), as torch.autograd computes them.
"""

from __future__ import annotations

from collections.abc import Sequence

from unigrad.tensor import Tensor

__all__ = ["grad", "backward"]


def _seq(x: Tensor | Sequence[Tensor] | None, what: str) -> list[Tensor]:
    items = [] if x is None else [x] if isinstance(x, Tensor) else list(x)
    for t in items:
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"autograd: {what} must be Tensors, got {type(t).__name__}")
    return items


def _root(outputs: list[Tensor], grad_outputs: list[Tensor | None], fn: str) -> Tensor:
    """One scalar whose gradient is the sum over the outputs of each one's gradient weighted by its grad_output
    (the vector-Jacobian product torch.autograd computes)."""
    if grad_outputs and len(grad_outputs) != len(outputs):
        raise RuntimeError(f"{fn}: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    total: Tensor | None = None
    for i, out in enumerate(outputs):
        if not out.requires_grad and not out._decide_parameters():  # undecided module parameters: turned on
            raise RuntimeError(f"{fn}: element {i} of tensors does not require grad and does not have a grad_fn")
        g = grad_outputs[i] if grad_outputs else None
        if g is None:
            if out.numel() != 1:
                raise RuntimeError(f"{fn}: grad can be implicitly created only for scalar outputs, got {out.shape}")
            term = out.sum()
        else:
            if g.shape != out.shape:
                raise RuntimeError(f"{fn}: grad_outputs[{i}] has shape {g.shape}, the output {out.shape}")
            term = (out * g.detach()).sum()
        total = term if total is None else total + term
    assert total is not None
    return total


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """d(outputs)/d(inputs) weighted by grad_outputs (default 1 for one-element outputs), one per input; .grad is
    not touched. An input the outputs do not depend on raises, unless allow_unused (None) or materialize_grads
    (zeros). With create_graph the results require grad, for higher derivatives (a gradient penalty)."""
    if is_grads_batched:
        raise NotImplementedError("autograd.grad: is_grads_batched (vmap over grad_outputs) is not supported")
    outs, ins = _seq(outputs, "outputs"), _seq(inputs, "inputs")
    if not outs or not ins:
        raise RuntimeError("autograd.grad: expected at least one output and one input")
    root = _root(outs, _seq(grad_outputs, "grad_outputs"), "autograd.grad")
    try:
        grads = root.gradient(*ins, materialize_grads=materialize_grads, allow_unused=True)
    except RuntimeError as e:
        raise RuntimeError(f"autograd.grad: {e}") from None
    for i, g in enumerate(grads):
        if g is None and not allow_unused:
            raise RuntimeError(
                f"autograd.grad: one of the differentiated Tensors (input {i}, shape {ins[i].shape}) appears to not "
                "have been used in the graph. Set allow_unused=True if this is the desired behavior."
            )
        if g is not None and create_graph:
            g._join_autograd()
    return tuple(grads)


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Tensor | Sequence[Tensor] | None = None,
) -> None:
    """Add d(tensors)/d(leaf), weighted by grad_tensors, into every leaf's .grad (Tensor.backward for several
    outputs at once)."""
    if inputs is not None:
        raise NotImplementedError("autograd.backward: inputs= (accumulating into only some leaves) is not supported")
    root = _root(_seq(tensors, "tensors"), _seq(grad_tensors, "grad_tensors"), "autograd.backward")
    root.backward(create_graph=create_graph)
