"""Benchmarks: each module in this package has `main(argv) -> dict` and runs on its own
(`python -m bench.micro`); `python -m bench` runs them all."""
