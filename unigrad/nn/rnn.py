"""unigrad.nn.rnn: torch.nn's recurrent layers as compositions of Tensor ops.

- One step: RNNCell (tanh or relu), LSTMCell, GRUCell: forward(x, hx) for x (N, H_in) or unbatched (H_in).
- A sequence: RNN, LSTM (with proj_size), GRU: stacked layers (num_layers), either direction (bidirectional),
  dropout between layers in training mode, input (L, N, H_in), (N, L, H_in) with batch_first, or unbatched
  (L, H_in); forward(input, hx) returns (output, h_n), or (output, (h_n, c_n)) for LSTM, with torch's shapes.

Parameters are torch's: names (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, weight_hr_l0 for LSTM's
projection, a `_reverse` suffix for the backward direction; weight_ih, ... for a cell), layouts (the gates stacked
along dim 0: GRU's r|z|n, LSTM's i|f|g|o) and initialization U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), so a
torch state dict loads as is.

A layer unrolls the sequence in Python into one lazy graph: the input's projection x @ W_ih^T + b_ih is one matmul
over every time step, each step adds h @ W_hh^T + b_hh and applies the gates, and the per-step outputs are stacked
at the end. Cells and layers share the step functions below, which are the formulas of torch's documentation; a
step runs as a call of its function traced once (@function), so the graph holds a node per step and the backward
one call of the step's gradient body per step (gradient.py), whatever the step's ops.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

from unigrad.function import traced
from unigrad.nn import functional as F
from unigrad.nn.module import Module, parameter
from unigrad.tensor import Tensor

__all__ = ["RNNCellBase", "RNNCell", "LSTMCell", "GRUCell", "RNNBase", "RNN", "LSTM", "GRU"]


# ---------------------------------------------------------------- one step
# xw is the input's projection x @ W_ih^T + b_ih (..., gates * H); h (..., H) (LSTM with a projection: (..., P)).
# The weights come transposed (w_hh_t = W_hh^T, one node shared by every step): a traced step's gradient for it is
# then added up across the steps as it is, and transposed back once (summed transposed, the sum of an LSTM's 35
# steps was a 180 kB kernel of scalar gathers).


def _rnn_step(xw: Tensor, h: Tensor, w_hh_t: Tensor, b_hh: Tensor | None, nonlinearity: str) -> Tensor:
    """h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    pre = xw + h.linear(w_hh_t, b_hh)
    return pre.tanh() if nonlinearity == "tanh" else pre.relu()


def _gru_step(xw: Tensor, h: Tensor, w_hh_t: Tensor, b_hh: Tensor | None) -> Tensor:
    """r, z = sigmoid(input part + hidden part); n = tanh(W_in x + b_in + r * (W_hn h + b_hn)): r scales the hidden
    part of n with its bias, as torch (not the hidden state before the matmul); h' = (1 - z) * n + z * h."""
    x_r, x_z, x_n = xw.chunk(3, dim=-1)
    h_r, h_z, h_n = h.linear(w_hh_t, b_hh).chunk(3, dim=-1)
    r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return (1 - z) * n + z * h


def _lstm_step(
    xw: Tensor, h: Tensor, c: Tensor, w_hh_t: Tensor, b_hh: Tensor | None, w_hr_t: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """Gates i, f, g, o: c' = sigmoid(f) * c + sigmoid(i) * tanh(g); h' = sigmoid(o) * tanh(c'), then projected by
    W_hr (proj_size, H) when the layer has one."""
    i, f, g, o = (xw + h.linear(w_hh_t, b_hh)).chunk(4, dim=-1)
    c_new = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h_new = o.sigmoid() * c_new.tanh()
    return (h_new if w_hr_t is None else h_new.linear(w_hr_t)), c_new


# the steps traced once per argument kinds (function.traced; op by op where a tensor spans several devices or has a
# symbolic shape): a step is one call node, and its backward one call of the step's gradient body, where a step's ops
# made ~20 tensors and its backward walked them again, every step of every layer (an LSTM language model's 70 steps:
# ~30 ms of Python a training step)
_rnn_call, _gru_call, _lstm_call = traced(_rnn_step), traced(_gru_step), traced(_lstm_step)


def _uniform(shape: tuple[int, ...], hidden_size: int) -> Tensor:
    """torch's initialization of every recurrent parameter: U(-1/sqrt(H), 1/sqrt(H))."""
    bound = 1 / math.sqrt(hidden_size) if hidden_size else 0.0
    return Tensor.uniform(*shape, low=-bound, high=bound)


# ---------------------------------------------------------------- cells


class RNNCellBase(Module):
    """The parameters of a cell with `num_chunks` gates stacked along dim 0: weight_ih (num_chunks * H, H_in),
    weight_hh (num_chunks * H, H), bias_ih and bias_hh (num_chunks * H,) or None."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        gates = num_chunks * hidden_size
        self.weight_ih = parameter(_uniform((gates, input_size), hidden_size))
        self.weight_hh = parameter(_uniform((gates, hidden_size), hidden_size))
        self.bias_ih = parameter(_uniform((gates,), hidden_size)) if bias else None
        self.bias_hh = parameter(_uniform((gates,), hidden_size)) if bias else None

    def _states(self, x: Tensor, hx: Sequence[Tensor | None], names: Sequence[str]) -> list[Tensor]:
        """Check x (N, H_in) or (H_in,) and each state (N, H) or (H,) (zeros when None): errors name the cell, what
        was got and what was expected."""
        cell = self._get_name()
        if x.ndim not in (1, 2):
            raise ValueError(f"{cell}: Expected input to be 1D or 2D, got {x.ndim}D input of shape {x.shape} instead")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(
                f"{cell}: input has inconsistent input_size: got {x.shape[-1]}, expected {self.input_size} "
                f"(input shape {x.shape})"
            )
        expected = x.shape[:-1] + (self.hidden_size,)
        states = []
        for name, h in zip(names, hx):
            if h is None:
                h = Tensor.zeros(*expected, dtype=x.dtype, device=x.device)
            elif h.shape != expected:
                raise RuntimeError(
                    f"{cell}: Expected {name} of shape {expected} for input of shape {x.shape}, got {h.shape}"
                )
            states.append(h)
        return states

    def extra_repr(self) -> str:
        out = f"{self.input_size}, {self.hidden_size}" + ("" if self.bias_ih is not None else ", bias=False")
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        return out + ("" if nonlinearity == "tanh" else f", nonlinearity={nonlinearity}")


class RNNCell(RNNCellBase):
    """One Elman RNN step: (x, h) -> h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh), act tanh or relu."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh"):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(input_size, hidden_size, bias, num_chunks=1)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        (h,) = self._states(input, (hx,), ("hx",))
        xw = input.linear(self.weight_ih.T, self.bias_ih)
        return _rnn_call(xw, h, self.weight_hh.T, self.bias_hh, self.nonlinearity)


class LSTMCell(RNNCellBase):
    """One LSTM step: (x, (h, c)) -> (h', c') with gates i, f, g, o stacked in weight_ih (4H, H_in) and
    weight_hh (4H, H)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        super().__init__(input_size, hidden_size, bias, num_chunks=4)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        if hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError(f"LSTMCell: Expected hx to be a tuple (h, c), got {type(hx).__name__}")
        h, c = self._states(input, (None, None) if hx is None else hx, ("h", "c"))
        return tuple(_lstm_call(input.linear(self.weight_ih.T, self.bias_ih), h, c, self.weight_hh.T, self.bias_hh))


class GRUCell(RNNCellBase):
    """One GRU step: (x, h) -> h' with gates r, z, n stacked in weight_ih (3H, H_in) and weight_hh (3H, H)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        super().__init__(input_size, hidden_size, bias, num_chunks=3)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        (h,) = self._states(input, (hx,), ("hx",))
        return _gru_call(input.linear(self.weight_ih.T, self.bias_ih), h, self.weight_hh.T, self.bias_hh)


# ---------------------------------------------------------------- layers over a sequence

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "GRU": 3, "LSTM": 4}
_KINDS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")  # a layer's parameters, in torch's order


def _check_int(name: str, value: Any, low: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be greater than zero" if low else f"{name} should be >= 0, got {value}")


class RNNBase(Module):
    """A stack of num_layers recurrent layers of one `mode` ('RNN_TANH', 'RNN_RELU', 'LSTM', 'GRU'), each run in
    one or two directions; layer k > 0 reads the outputs of layer k-1 (both directions concatenated). The
    parameters of layer k, direction d are weight_ih_l{k}{s}, weight_hh_l{k}{s}, bias_ih_l{k}{s}, bias_hh_l{k}{s}
    (and weight_hr_l{k}{s} for an LSTM with proj_size > 0), s '' or '_reverse', in torch's order."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
    ):
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode} (expected one of {', '.join(_GATES)})")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1:
            raise ValueError(
                f"dropout should be a number in range [0, 1] representing the probability of an element being "
                f"zeroed, got {dropout!r}"
            )
        for name, flag in (("bias", bias), ("batch_first", batch_first), ("bidirectional", bidirectional)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} should be of type bool, got: {type(flag).__name__}")
        _check_int("input_size", input_size, 1)
        _check_int("hidden_size", hidden_size, 1)
        _check_int("num_layers", num_layers, 1)
        _check_int("proj_size", proj_size, 0)
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size >= hidden_size:
            raise ValueError(f"proj_size has to be smaller than hidden_size, got {proj_size} >= {hidden_size}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
                f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                stacklevel=2,
            )
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        gates, out_size = _GATES[mode] * hidden_size, proj_size or hidden_size
        self._weight_names: list[list[str]] = []  # per (layer, direction), in torch's parameter order
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else out_size * self._directions
            shapes = {"weight_ih": (gates, layer_in), "weight_hh": (gates, out_size)}
            if bias:
                shapes |= {"bias_ih": (gates,), "bias_hh": (gates,)}
            if proj_size:
                shapes["weight_hr"] = (proj_size, hidden_size)
            for suffix in ("", "_reverse")[: self._directions]:
                names = [f"{kind}_l{layer}{suffix}" for kind in shapes]
                for name, shape in zip(names, shapes.values()):
                    setattr(self, name, parameter(_uniform(shape, hidden_size)))
                self._weight_names.append(names)

    @property
    def _directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def all_weights(self) -> list[list[Tensor]]:
        """The parameters of each (layer, direction), in torch's order."""
        return [[getattr(self, name) for name in names] for names in self._weight_names]

    def flatten_parameters(self) -> None:
        """Nothing to do (torch packs the weights for cuDNN): kept so that code calling it runs."""

    # ------------------------------------------------------------ checks
    def _check_input(self, x: Any) -> None:
        layer = self._get_name()
        if not isinstance(x, Tensor):
            raise TypeError(f"{layer}: expected input to be a Tensor, got {type(x).__name__}")
        layout = "(N, L, H_in)" if self.batch_first else "(L, N, H_in)"
        if x.ndim not in (2, 3):
            raise ValueError(
                f"{layer}: Expected input to be 2D (unbatched (L, H_in)) or 3D (batched {layout}), got {x.ndim}D "
                f"input of shape {x.shape} instead"
            )
        if x.shape[1 if x.ndim == 3 and self.batch_first else 0] == 0:
            raise RuntimeError(f"{layer}: Expected sequence length to be larger than 0, got input of shape {x.shape}")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(
                f"{layer}: input.size(-1) must be equal to input_size. Expected {self.input_size}, got {x.shape[-1]} "
                f"(input shape {x.shape})"
            )

    def _initial_states(self, hx: Any, x: Tensor, batched: bool) -> list[Tensor]:
        """The states (num_layers * num_directions, N, size) the first steps read, for x (L, N, H_in): h_0 (and c_0
        for LSTM) from hx, checked against the shapes the input implies, or zeros."""
        layer, stacks, batch = self._get_name(), self.num_layers * self._directions, x.shape[1]
        h_size = ("proj_size", self.proj_size) if self.proj_size else ("hidden_size", self.hidden_size)
        expected = {"h_0": h_size, "c_0": ("hidden_size", self.hidden_size)}
        if self.mode != "LSTM":
            expected.pop("c_0")
        if hx is None:
            return [Tensor.zeros(stacks, batch, size, dtype=x.dtype, device=x.device) for _, size in expected.values()]
        if self.mode == "LSTM" and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError(f"{layer}: Expected hx to be a tuple (h_0, c_0), got {type(hx).__name__}")
        states = []
        for state, (name, (size_name, size)) in zip(hx if self.mode == "LSTM" else (hx,), expected.items()):
            if not isinstance(state, Tensor):
                raise TypeError(f"{layer}: Expected {name} to be a Tensor, got {type(state).__name__}")
            shape = (stacks, batch, size) if batched else (stacks, size)
            if state.shape != shape:
                layout = f"(num_layers * num_directions, {'batch, ' if batched else ''}{size_name})"
                kind = "batched" if batched else "unbatched"
                raise RuntimeError(
                    f"{layer}: Expected {name} of shape {shape} {layout} for {kind} input, got {state.shape}"
                )
            states.append(state if batched else state.unsqueeze(1))
        return states

    # ------------------------------------------------------------ running
    def _step(self, xw: Tensor, state: tuple[Tensor, ...], params: dict[str, Tensor | None]) -> tuple[Tensor, ...]:
        w_hh, b_hh, w_hr = params["weight_hh"], params["bias_hh"], params["weight_hr"]
        assert w_hh is not None
        w_hh_t = w_hh.T
        if self.mode == "LSTM":
            return tuple(_lstm_call(xw, state[0], state[1], w_hh_t, b_hh, None if w_hr is None else w_hr.T))
        if self.mode == "GRU":
            return (_gru_call(xw, state[0], w_hh_t, b_hh),)
        return (_rnn_call(xw, state[0], w_hh_t, b_hh, "tanh" if self.mode == "RNN_TANH" else "relu"),)

    def _params(self, layer: int, reverse: bool) -> dict[str, Tensor | None]:
        """weight_ih, weight_hh, bias_ih, bias_hh, weight_hr of one layer and direction (None where it has none)."""
        suffix = "_reverse" if reverse else ""
        return {kind: getattr(self, f"{kind}_l{layer}{suffix}", None) for kind in _KINDS}

    def _run_direction(
        self, x: Tensor, state: tuple[Tensor, ...], layer: int, reverse: bool
    ) -> tuple[Tensor, tuple[Tensor, ...]]:
        """One layer in one direction over x (L, N, in): outputs (L, N, out) in time order, and the last state."""
        params = self._params(layer, reverse)
        w_ih = params["weight_ih"]
        assert w_ih is not None
        # (L, N, gates * H): every step's input projection in one matmul, stored once (contiguous) for the steps
        # to read; left lazy, the kernel split materializes many tiny pieces of the backward instead
        xw = x.linear(w_ih.T, params["bias_ih"]).contiguous()
        outputs = []  # in the order computed: the reverse direction runs from the last step to the first
        for t in reversed(range(x.shape[0])) if reverse else range(x.shape[0]):
            state = self._step(xw[t], state, params)
            outputs.append(state[0])
        return Tensor.stack(*(outputs[::-1] if reverse else outputs)), state

    def forward(self, input: Tensor, hx: Any = None) -> tuple[Tensor, Any]:
        self._check_input(input)
        batched = input.ndim == 3
        x = input.transpose(0, 1) if batched and self.batch_first else input  # (L, N, H_in)
        x = x if batched else x.unsqueeze(1)
        states = self._initial_states(hx, x, batched)
        finals: list[tuple[Tensor, ...]] = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(self._directions):
                index = layer * self._directions + direction  # torch's order of h_n: l0, l0_reverse, l1, ...
                out, final = self._run_direction(x, tuple(s[index] for s in states), layer, direction == 1)
                outputs.append(out)
                finals.append(final)
            x = outputs[0] if len(outputs) == 1 else outputs[0].cat(outputs[1], dim=-1)
            if layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, self.training)
        last = [Tensor.stack(*(f[k] for f in finals)) for k in range(len(states))]  # (num_layers * dirs, N, size)
        if not batched:
            x, last = x.squeeze(1), [s.squeeze(1) for s in last]
        elif self.batch_first:
            x = x.transpose(0, 1)
        return x, (tuple(last) if self.mode == "LSTM" else last[0])

    def extra_repr(self) -> str:
        """torch's: the settings that differ from the defaults (RNN's nonlinearity is not shown, as in torch)."""
        out = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            out += f", proj_size={self.proj_size}"
        for name, default in (("num_layers", 1), ("bias", True), ("batch_first", False), ("dropout", 0.0)):
            if getattr(self, name) != default:
                out += f", {name}={getattr(self, name)}"
        return out + (", bidirectional=True" if self.bidirectional else "")


class RNN(RNNBase):
    """Elman RNN over a sequence: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act tanh or relu."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
    ):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        return super().forward(input, hx)


class LSTM(RNNBase):
    """LSTM over a sequence (gates i, f, g, o); with proj_size > 0 each h_t is projected by weight_hr to proj_size,
    so output and h_n have proj_size features and c_n hidden_size. forward returns (output, (h_n, c_n))."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
    ):
        super().__init__(
            "LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, proj_size
        )

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        return super().forward(input, hx)


class GRU(RNNBase):
    """GRU over a sequence (gates r, z, n; n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), as torch)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
    ):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        return super().forward(input, hx)
