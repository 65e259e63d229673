"""torch.cuda's queries, so `if torch.cuda.is_available():` code takes its CPU branch: unigrad has no CUDA device.
Seeding and emptying the cache do nothing, as torch's do without CUDA; synchronize raises, as torch's does.
`torch.cuda.amp` (GradScaler, autocast) disables itself, as torch's does without CUDA."""

from unigrad.cuda import amp

__all__ = ["is_available", "device_count", "manual_seed", "manual_seed_all", "empty_cache", "synchronize", "amp"]


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed: int) -> None:
    """No CUDA generator to seed (torch's call is lazy too: without CUDA it does nothing)."""


def manual_seed_all(seed: int) -> None:
    """No CUDA generators to seed."""


def empty_cache() -> None:
    """No CUDA caching allocator to empty."""


def synchronize(device: object = None) -> None:
    raise RuntimeError("torch.cuda.synchronize: unigrad has no CUDA device (torch.cuda.is_available() is False)")
