"""torch.nn.modules.rnn: RNN, LSTM, GRU and their cells (unigrad.nn.rnn)."""

from unigrad.nn.rnn import *  # noqa: F403
from unigrad.nn.rnn import __all__ as __all__
