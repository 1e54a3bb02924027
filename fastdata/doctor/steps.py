"""The training step the doctor measures against: a known time, a tiny CNN or ResNet-50.

``--step-ms T`` stands for a step whose time is known (the host sleeps, as it
does while a GPU computes, so the step takes no CPU from the loader). A
model step is forward, backward and an SGD update on the batch, synchronised
on CUDA so its time is the device's.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ..errors import ConfigError, MissingDependencyError

__all__ = ["Step", "choose_step"]


@dataclass(frozen=True)
class Step:
    """``run(images, targets)`` runs one step; ``name`` says what it is, ``note`` why it was chosen."""

    name: str
    run: Callable[[Any, Any], None]
    device: str
    note: str = ""


def _sleep(ms: float) -> Callable[[Any, Any], None]:
    seconds = ms / 1000.0

    def run(images: Any, targets: Any) -> None:
        time.sleep(seconds)

    return run


def _tiny(classes: int) -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=4, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, classes),
    )


def _resnet50(classes: int) -> torch.nn.Module:
    if importlib.util.find_spec("torchvision") is None:
        raise MissingDependencyError("--model resnet50 needs torchvision (pip install torchvision), or pass --step-ms T")
    from torchvision.models import resnet50

    return resnet50(num_classes=classes)


def _model_step(model: torch.nn.Module, device: torch.device, classes: int) -> Callable[[Any, Any], None]:
    model = model.to(device, memory_format=torch.channels_last)  # type: ignore[call-overload]  # torch's stubs leave it out
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    half = device.type == "cuda"

    def run(images: Any, targets: Any) -> None:
        x = images.to(device, non_blocking=True)
        x = x.float().div_(255.0) if x.dtype == torch.uint8 else x.float()
        y = torch.as_tensor(targets).to(device, non_blocking=True).long() % classes
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=half):
            loss = loss_fn(model(x.contiguous(memory_format=torch.channels_last)), y)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        if half:  # pragma: no cover - needs CUDA
            torch.cuda.synchronize(device)

    return run


def choose_step(model: str | None, step_ms: float | None, *, classes: int = 1000) -> Step:
    """The step for ``--model`` / ``--step-ms`` (``None``, ``None``: ResNet-50 on
    CUDA when torchvision is installed, else a tiny CNN, on the CPU without CUDA).

    Raises:
        ConfigError: both given, a negative time or an unknown model.
        MissingDependencyError: ``resnet50`` without torchvision.
    """
    if model is not None and step_ms is not None:
        raise ConfigError("pass --model or --step-ms, not both")
    if step_ms is not None:
        if step_ms < 0:
            raise ConfigError(f"--step-ms must be >= 0, got {step_ms}")
        return Step(f"sleep {step_ms:g} ms (--step-ms: a step of known time)", _sleep(step_ms), "host")
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    if model is None:
        model = "resnet50" if cuda and importlib.util.find_spec("torchvision") is not None else "tiny"
    if model == "resnet50":
        return Step(f"ResNet-50 forward+backward+SGD on {device}", _model_step(_resnet50(classes), device, classes),
                    str(device))
    if model == "tiny":
        note = ("no CUDA here: the step is a tiny CNN on the CPU, a stand-in for a model (it shares the CPUs with "
                "the loader); pass --step-ms T for your real step's time") if not cuda else \
            "a tiny CNN stands in for a model (pass --model resnet50 with torchvision, or --step-ms T)"
        return Step(f"tiny CNN forward+backward+SGD on {device}", _model_step(_tiny(classes), device, classes),
                    str(device), note)
    raise ConfigError(f"--model must be 'resnet50' or 'tiny', got {model!r}")
