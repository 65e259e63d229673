"""unigrad.nn: torch.nn's layers, containers and losses as Modules (unigrad.nn.module), and tinygrad's style too.

A layer's parameters and buffers are plain Tensor attributes, found by walking its attributes (unigrad.nn.state)
or by its Module methods (parameters(), state_dict(), ...), so their names are PyTorch's state-dict keys (weight,
bias, running_mean, ...) and their layouts PyTorch's: Linear's weight is (out, in), a convolution's
(C_out, C_in/groups, *k), a transposed convolution's (C_in, C_out/groups, *k). Initializations follow torch.nn's
defaults. Train-time behaviour (batch statistics, dropout) follows each module's `training` flag, which follows
the class-wide `Tensor.training` (tinygrad's switch) until `.train()` / `.eval()` set it.

A layer's parameters are marked so (`isinstance(w, nn.Parameter)`); under the torch facade they require grad from
birth, in tinygrad's flavor they start undecided: they read requires_grad True but track nothing until an optimizer
(as tinygrad's) or the first backward() that reaches them turns them on (unigrad/flavor.py); buffers (running
statistics) are registered, with requires_grad False. Constant-initialized tensors get their own buffer (copied in),
so two layers never share one: hash-consing would make two lazy Tensor.ones(n) the same node.

The layers live in one module per family (torch.nn's split), and are re-exported here:

  module       Module, Parameter             containers  Sequential, ModuleList, ModuleDict, ParameterList/Dict
  linear       Linear, Bilinear, Identity    flatten     Flatten, Unflatten
  conv         Conv*d, ConvTranspose*d       norm        BatchNorm*, InstanceNorm*, LayerNorm, RMSNorm, GroupNorm, ...
  activation   ReLU, GELU, ..., Softmax      dropout     Dropout, Dropout1d/2d/3d, AlphaDropout, ...
  pooling      MaxPool*, AvgPool*, ...       padding     ConstantPad*, ZeroPad*, ReflectionPad*, ...
  vision       Upsample, PixelShuffle, Fold  embedding   Embedding, EmbeddingBag
  distance     CosineSimilarity, ...         loss        L1Loss, MSELoss, CrossEntropyLoss, ...
  rnn          RNN, LSTM, GRU and cells      transformer MultiheadAttention, Transformer*

The activation, pooling, padding, resampling and loss modules are thin wrappers over unigrad.nn.functional with
torch's names and constructor signatures; `nn.functional` and `nn.init` are importable from here. `nn.modules` holds
the layers under torch's file names (torch.nn.modules.rnn, .batchnorm, .sparse, ...); `nn.parallel` DataParallel.
"""

from unigrad.nn import functional, init, optim, rnn, state, utils
from unigrad.nn import (
    activation,
    containers,
    conv,
    distance,
    dropout,
    embedding,
    flatten,
    linear,
    loss,
    norm,
    padding,
    pooling,
    transformer,
    vision,
)
from unigrad.nn.activation import *  # noqa: F403
from unigrad.nn.containers import *  # noqa: F403
from unigrad.nn.conv import *  # noqa: F403
from unigrad.nn.distance import *  # noqa: F403
from unigrad.nn.dropout import *  # noqa: F403
from unigrad.nn.embedding import *  # noqa: F403
from unigrad.nn.flatten import *  # noqa: F403
from unigrad.nn.linear import *  # noqa: F403
from unigrad.nn.loss import *  # noqa: F403
from unigrad.nn.norm import *  # noqa: F403
from unigrad.nn.padding import *  # noqa: F403
from unigrad.nn.pooling import *  # noqa: F403
from unigrad.nn.rnn import *  # noqa: F403
from unigrad.nn.transformer import *  # noqa: F403
from unigrad.nn.vision import *  # noqa: F403
from unigrad.nn.module import Module, Parameter
from unigrad.nn import modules, parallel, parameter  # torch.nn.modules.rnn, torch.nn.parallel, ...
from unigrad.nn.parallel import DataParallel

# every layer's name (each family module's __all__), then the submodules of nn that are part of its interface
__all__ = ["Module", "Parameter"]
__all__ += containers.__all__
__all__ += flatten.__all__
__all__ += linear.__all__
__all__ += conv.__all__
__all__ += norm.__all__
__all__ += embedding.__all__
__all__ += rnn.__all__
__all__ += dropout.__all__
__all__ += activation.__all__
__all__ += distance.__all__
__all__ += pooling.__all__
__all__ += padding.__all__
__all__ += vision.__all__
__all__ += loss.__all__
__all__ += transformer.__all__
__all__ += ["DataParallel"]
__all__ += ["functional", "init", "optim", "rnn", "state", "utils", "modules", "parallel", "parameter"]
