"""torch.optim's place: the optimizers of unigrad.nn.optim (tinygrad keeps them at tinygrad.nn.optim), so
`import unigrad.optim as optim` and `from unigrad.optim.lr_scheduler import StepLR` run as torch's do."""

from unigrad.nn.optim import *  # noqa: F403 - the same names as unigrad.nn.optim
from unigrad.nn.optim import __all__ as __all__
from unigrad.optim import lr_scheduler  # noqa: F401 - torch.optim.lr_scheduler
