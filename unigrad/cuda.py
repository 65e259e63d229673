"""torch.cuda's queries, so `if torch.cuda.is_available():` code takes its CPU branch: unigrad has no CUDA device."""


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0
