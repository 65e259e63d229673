"""torch.nn.modules: torch.nn's layers under torch's file names, so `from torch.nn.modules.rnn import LSTM`
and safe-globals lists naming `torch.nn.modules.dropout.Dropout` find unigrad's classes. Each file re-exports the
layers torch keeps in it from the unigrad.nn module of their family (batchnorm, instancenorm and normalization
from norm; sparse is embedding; fold, pixelshuffle, channelshuffle and upsampling are in vision); the classes are
the same objects as unigrad.nn's."""

from unigrad.nn.modules import (
    activation,
    batchnorm,
    channelshuffle,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    instancenorm,
    linear,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
)
from unigrad.nn.modules.activation import *  # noqa: F403
from unigrad.nn.modules.batchnorm import *  # noqa: F403
from unigrad.nn.modules.channelshuffle import *  # noqa: F403
from unigrad.nn.modules.container import *  # noqa: F403
from unigrad.nn.modules.conv import *  # noqa: F403
from unigrad.nn.modules.distance import *  # noqa: F403
from unigrad.nn.modules.dropout import *  # noqa: F403
from unigrad.nn.modules.flatten import *  # noqa: F403
from unigrad.nn.modules.fold import *  # noqa: F403
from unigrad.nn.modules.instancenorm import *  # noqa: F403
from unigrad.nn.modules.linear import *  # noqa: F403
from unigrad.nn.modules.loss import *  # noqa: F403
from unigrad.nn.modules.module import *  # noqa: F403
from unigrad.nn.modules.normalization import *  # noqa: F403
from unigrad.nn.modules.padding import *  # noqa: F403
from unigrad.nn.modules.pixelshuffle import *  # noqa: F403
from unigrad.nn.modules.pooling import *  # noqa: F403
from unigrad.nn.modules.rnn import *  # noqa: F403
from unigrad.nn.modules.sparse import *  # noqa: F403
from unigrad.nn.modules.transformer import *  # noqa: F403
from unigrad.nn.modules.upsampling import *  # noqa: F403

_FILES = (activation, batchnorm, channelshuffle, container, conv, distance, dropout, flatten, fold, instancenorm)
_FILES += (linear, loss, module, normalization, padding, pixelshuffle, pooling, rnn, sparse, transformer, upsampling)
__all__ = sorted({name for file in _FILES for name in file.__all__})
