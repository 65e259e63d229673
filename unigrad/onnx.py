"""torch.onnx: importable (training scripts import it unconditionally), but unigrad does not export ONNX graphs."""

from typing import Any

__all__ = ["export", "is_in_onnx_export"]


def export(model: Any, args: Any = (), f: Any = None, *rest: Any, **kwargs: Any) -> None:
    """Always raises: unigrad has no ONNX exporter."""
    raise NotImplementedError(
        "torch.onnx.export: unigrad cannot export ONNX graphs; save the weights instead (torch.save(model.state_dict(),"
        " path) or unigrad.nn.state.safe_save) and export from PyTorch"
    )


def is_in_onnx_export() -> bool:
    """False: no ONNX export is ever running (models branch on it to pick an export-friendly path)."""
    return False
