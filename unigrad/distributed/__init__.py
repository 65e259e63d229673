"""unigrad.distributed: torch.distributed's API on MPI, for training across processes and machines.

  distributed_c10d  init_process_group, the process groups, the collectives (all_reduce, broadcast, all_gather,
                    reduce_scatter_tensor, reduce, gather, scatter, barrier), send/recv, Work handles
  run               the launcher: `python -m unigrad.distributed.run -n N train.py args` (mpirun with the flags one
                    machine needs, and torch's RANK / LOCAL_RANK / WORLD_SIZE variables set in each process)

nn.parallel.DistributedDataParallel (unigrad/nn/parallel.py) and utils.data.DistributedSampler build on it. Through the
facade this package is `torch.distributed`. Importing it starts nothing: MPI starts in init_process_group.
"""

from unigrad.distributed import distributed_c10d
from unigrad.distributed.distributed_c10d import *  # noqa: F403 - torch.distributed's names, listed in its __all__

__all__ = list(distributed_c10d.__all__)
