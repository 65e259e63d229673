"""torch.utils.data for unigrad: datasets, samplers and the DataLoader that batches them, in torch's module files.

  dataset     Dataset, IterableDataset, TensorDataset, Subset, ConcatDataset, random_split
  sampler     Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler, BatchSampler
  dataloader  DataLoader, default_collate, get_worker_info
  distributed DistributedSampler (each rank's share, for nn.parallel.DistributedDataParallel)

Every sampler and the DataLoader iterate lazily: an index is drawn when it is asked for (a RandomSampler with
replacement draws 32 at a time, as torch), so an endless sampler (num_samples=10**10) costs nothing up front.
Random orders come from unigrad's generator (the global one, `unigrad.manual_seed`, or a `generator=`
unigrad.Generator): a seeded program takes the same batches on every run.
"""

from unigrad.api.random import Generator
from unigrad.utils.data import dataloader, dataset, distributed, sampler
from unigrad.utils.data.dataloader import *  # noqa: F403 - each file's names, listed in its __all__
from unigrad.utils.data.dataset import *  # noqa: F403
from unigrad.utils.data.distributed import *  # noqa: F403
from unigrad.utils.data.sampler import *  # noqa: F403

__all__ = [
    *dataset.__all__,
    *sampler.__all__,
    *distributed.__all__,
    *dataloader.__all__,
    "Generator",
    "dataloader",
    "dataset",
    "distributed",
    "sampler",
]
