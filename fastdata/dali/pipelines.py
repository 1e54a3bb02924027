"""DALI pipelines over a converted directory: the ImageNet training and evaluation presets.

DALI is imported when a pipeline is built, never at import time, so
``import fastdata.dali`` works without it.
"""

from __future__ import annotations

import os
from typing import Any

from .._optional import require
from ..errors import ConfigError
from ..order.ranks import resolve_place
from ..order.seeds import pipeline_seed
from .settings import DTYPES, Crop, Normalize, Reading, check_positive
from .sources import DALISource, dali_source

READER_NAME = "Reader"  # DALI iterators find the epoch size through this name
DEVICES = ("cpu", "gpu", "mixed")


def import_dali() -> Any:
    """Return the ``nvidia.dali`` module, or raise MissingDependencyError naming the extra."""
    return require("nvidia.dali", extra="dali", purpose="fastdata.dali", package="nvidia-dali-cuda130")


def resolve_device(device: str | None, device_id: int | None) -> str:
    """``device`` checked against ``device_id``; None picks ``"mixed"`` with a GPU id, else ``"cpu"``."""
    if device is None:
        return "cpu" if device_id is None else "mixed"
    if device not in DEVICES:
        raise ConfigError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    if device != "cpu" and device_id is None:
        raise ConfigError(f"device={device!r} runs on a GPU: pass device_id (e.g. torch.cuda.current_device())")
    return device


def build_pipeline(
    path: str | os.PathLike[str],
    batch_size: int,
    *,
    train: bool = True,
    device: str | None = None,
    device_id: int | None = None,
    num_threads: int = 2,
    seed: int = 0,
    shard_id: int | None = None,
    num_shards: int | None = None,
    crop: Crop = Crop(),
    normalize: Normalize = Normalize(),
    reading: Reading = Reading(),
) -> Any:
    """A DALI pipeline reading a converted directory and returning ``(images, labels)``.

    Training: ``decoders.image_random_crop`` (a RandomResizedCrop fused into the
    decode) -> resize to ``crop.size`` squared -> random horizontal flip ->
    normalise. Evaluation: decode -> resize the shorter side to
    ``crop.resize_shorter`` -> centre crop ``crop.size`` -> normalise.

    Each batch holds ``images``, (N, 3, size, size) RGB in ``normalize.dtype``,
    ``(x / 255 - mean) / std`` with x in 0..255, and ``labels``, int64 (N,),
    0-based (the manifest's ``label_base`` is subtracted; RecordIO's float
    labels are cast). The reader pads the last batch of its shard by repeating
    its last sample; :class:`DALILoader` drops or trims that batch.

    Args:
        path: converted dataset directory of a format with a DALI reader
            (recordio, tfrecord, lmdb).
        batch_size: samples per batch.
        train: training preset (True) or evaluation preset (False).
        device: ``"cpu"`` (everything on the host; outputs in host memory),
            ``"mixed"`` (nvJPEG/hardware decode, augmentation on the GPU) or
            ``"gpu"`` (host decode, augmentation on the GPU). Default:
            ``"mixed"`` when ``device_id`` is given, else ``"cpu"``.
        device_id: CUDA device, or None for a CPU-only pipeline.
        num_threads: DALI CPU worker threads.
        seed: base seed; each shard's pipeline gets its own
            (``fastdata.order.seeds.pipeline_seed``) so ranks augment differently.
        shard_id, num_shards: which contiguous part of the dataset this
            pipeline reads: both or neither. Neither: the torch.distributed
            rank and world size when a process group is initialised, else
            ``0`` of ``1`` (see ``fastdata.order.resolve_place``; a torchrun
            launch with no process group yet, or ``num_shards=1`` under a group
            of several ranks, is refused). DALI moves each reader to the next
            shard every epoch (``stick_to_shard=False``); ranks stay disjoint.
        crop: :class:`Crop`, the output size and the crop/resize geometry.
        normalize: :class:`Normalize`, mean/std in 0-1 units and the output dtype.
        reading: :class:`Reading`, shuffling and DALI's prefetch depth.

    Returns:
        An unbuilt ``nvidia.dali.Pipeline`` whose reader is named ``"Reader"``.

    Raises:
        MissingDependencyError: DALI is not installed.
        ConfigError: an argument that cannot work.
        ManifestError, FormatError: see :func:`dali_source`.
    """
    dali = import_dali()
    device = resolve_device(device, device_id)
    place = resolve_place(shard_id, num_shards, train=True, names=("shard_id", "num_shards"))
    source = _checked_source(path, place.world_size, batch_size=batch_size, num_threads=num_threads,
                             crop=crop, normalize=normalize, reading=reading)
    pipe = dali.Pipeline(
        batch_size=batch_size,
        num_threads=num_threads,
        device_id=None if device == "cpu" else device_id,
        seed=pipeline_seed(seed, place.rank),
        prefetch_queue_depth=reading.prefetch_queue_depth,
    )
    reader_args = {
        "name": READER_NAME,
        "shard_id": place.rank,
        "num_shards": place.world_size,
        "random_shuffle": train if reading.shuffle is None else bool(reading.shuffle),
        "initial_fill": reading.shuffle_buffer,
        "pad_last_batch": True,
    }
    with pipe:
        jpegs, labels = _read(dali, source, reader_args)
        if train:
            images = _train_images(dali, jpegs, device, crop)
        else:
            images = _eval_images(dali, jpegs, device, crop.resize_shorter)
        pipe.set_outputs(_normalized(dali, images, device, crop, normalize, train),
                         _labels(dali, labels, source, device))
    return pipe


def _checked_source(path: str | os.PathLike[str], world_size: int, *, batch_size: int, num_threads: int,
                    crop: Crop, normalize: Normalize, reading: Reading) -> DALISource:
    """The dataset at ``path``, once :func:`build_pipeline`'s arguments are checked.

    Raises:
        ConfigError: a count under 1, a settings object of the wrong type, or
            more shards than samples.
    """
    check_positive("build_pipeline", batch_size=batch_size, num_threads=num_threads)
    for name, value, kind in (("crop", crop, Crop), ("normalize", normalize, Normalize), ("reading", reading, Reading)):
        if not isinstance(value, kind):
            raise ConfigError(f"{name} must be fastdata.dali.{kind.__name__}(...), got {type(value).__name__}")
    source = dali_source(path)
    if world_size > source.num_samples:
        raise ConfigError(
            f"{source.directory}: {world_size} shards for {source.num_samples} samples; use fewer shards"
        )
    return source


def _normalized(dali: Any, images: Any, device: str, crop: Crop, normalize: Normalize, train: bool) -> Any:
    """``images`` cropped to ``crop.size`` squared, in CHW and ``normalize.dtype``, mirrored at random when training."""
    mean, std = normalize.in_pixels()
    return dali.fn.crop_mirror_normalize(
        images,
        device="cpu" if device == "cpu" else "gpu",
        dtype=getattr(dali.types, DTYPES[normalize.dtype_name]),
        output_layout="CHW",
        crop=(crop.size, crop.size),
        mean=mean,
        std=std,
        mirror=dali.fn.random.coin_flip(probability=0.5) if train else 0,
    )


def _labels(dali: Any, labels: Any, source: DALISource, device: str) -> Any:
    """The reader's labels as 0-based int64 scalars (the batch is (N,)), on the GPU unless ``device`` is cpu."""
    labels = dali.fn.cast(labels, dtype=dali.types.INT64)
    if source.label_base:
        labels = labels - source.label_base
    labels = dali.fn.reshape(labels, shape=[])  # (1,) per sample -> scalar: the batch is (N,)
    if device != "cpu":
        labels = labels.gpu()
    return labels


def _read(dali: Any, source: DALISource, reader_args: dict[str, Any]) -> tuple[Any, Any]:
    """The reader's ``(encoded images, labels)``, as the format's registry entry describes it."""
    reader = getattr(dali.fn.readers, source.reader)
    args: dict[str, Any] = {"path": list(source.paths), **reader_args}
    if source.index_paths:
        args["index_path"] = list(source.index_paths)
    if source.features is None:
        return reader(**args)  # readers of (image, label) records: mxnet, caffe
    tfrec = require("nvidia.dali.tfrecord", extra="dali", purpose="fastdata.dali", package="nvidia-dali-cuda130")
    image_key, label_key = source.features
    features = {
        image_key: tfrec.FixedLenFeature((), tfrec.string, ""),
        label_key: tfrec.FixedLenFeature([1], tfrec.int64, -1),
    }
    out = reader(features=features, **args)
    return out[image_key], out[label_key]


def _train_images(dali: Any, jpegs: Any, device: str, crop: Crop) -> Any:
    # Decoding only the crop window saves work for small crops; "mixed" puts
    # the decode on nvJPEG / the hardware JPEG engines and returns GPU images.
    images = dali.fn.decoders.image_random_crop(
        jpegs,
        device="mixed" if device == "mixed" else "cpu",
        output_type=dali.types.RGB,
        random_area=list(crop.random_area),
        random_aspect_ratio=list(crop.random_aspect_ratio),
        num_attempts=10,
    )
    if device == "gpu":
        images = images.gpu()
    return dali.fn.resize(images, device="cpu" if device == "cpu" else "gpu", resize_x=crop.size, resize_y=crop.size)


def _eval_images(dali: Any, jpegs: Any, device: str, resize_shorter: int) -> Any:
    images = dali.fn.decoders.image(jpegs, device="mixed" if device == "mixed" else "cpu", output_type=dali.types.RGB)
    if device == "gpu":
        images = images.gpu()
    return dali.fn.resize(images, device="cpu" if device == "cpu" else "gpu", resize_shorter=resize_shorter)
