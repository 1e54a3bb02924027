"""DALI pipelines over a converted directory: the ImageNet training and evaluation presets.

DALI is imported when a pipeline is built, never at import time, so
``import fastdata.dali`` works without it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .._optional import require
from ..errors import ConfigError
from .sources import TFRECORD_IMAGE_KEY, TFRECORD_LABEL_KEY, DALISource, dali_source

IMAGENET_MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
IMAGENET_STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)
READER_NAME = "Reader"  # DALI iterators find the epoch size through this name
DEVICES = ("cpu", "gpu", "mixed")
_DTYPES = {"float32": "FLOAT", "float": "FLOAT", "float16": "FLOAT16", "half": "FLOAT16"}


def import_dali() -> Any:
    """Return the ``nvidia.dali`` module, or raise MissingDependencyError naming the extra."""
    return require("nvidia.dali", extra="dali", purpose="fastdata.dali", package="nvidia-dali-cuda130")


def resolve_shard(shard_id: int | None, num_shards: int | None) -> tuple[int, int]:
    """``(shard_id, num_shards)``: as given, else rank and world size of torch.distributed, else ``(0, 1)``.

    Raises:
        ConfigError: only one of the two given, ``shard_id`` out of range, or
            an explicit ``num_shards=1`` in a multi-process group (every rank
            would read the same samples).
    """
    world = _world()
    if shard_id is None and num_shards is None:
        return world if world is not None else (0, 1)
    if shard_id is None or num_shards is None:
        raise ConfigError(f"give both shard_id and num_shards or neither (got {shard_id=}, {num_shards=})")
    if num_shards < 1 or not 0 <= shard_id < num_shards:
        raise ConfigError(f"need 0 <= shard_id < num_shards, got shard_id={shard_id}, num_shards={num_shards}")
    if world is not None and world[1] > 1 and num_shards == 1:
        raise ConfigError(
            f"num_shards=1 in a torch.distributed group of {world[1]} processes: every rank would read "
            "the same samples. Leave shard_id and num_shards unset to shard by rank"
        )
    return shard_id, num_shards


def _world() -> tuple[int, int] | None:
    try:
        import torch.distributed as dist
    except ImportError:  # a torch built without distributed support
        return None
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return None


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
    *,
    batch_size: int,
    train: bool = True,
    device: str | None = None,
    device_id: int | None = None,
    num_threads: int = 2,
    seed: int = 0,
    shard_id: int | None = None,
    num_shards: int | None = None,
    size: int = 224,
    resize_shorter: int = 256,
    mean: Sequence[float] = IMAGENET_MEAN,
    std: Sequence[float] = IMAGENET_STD,
    dtype: Any = "float32",
    random_shuffle: bool | None = None,
    random_area: tuple[float, float] = (0.08, 1.0),
    random_aspect_ratio: tuple[float, float] = (3 / 4, 4 / 3),
    shuffle_buffer: int = 1024,
    prefetch_queue_depth: int = 2,
) -> Any:
    """A DALI pipeline reading a converted directory and returning ``(images, labels)``.

    Training: ``decoders.image_random_crop`` (a RandomResizedCrop fused into the
    decode) -> resize to ``size`` x ``size`` -> random horizontal flip ->
    normalise. Evaluation: decode -> resize the shorter side to
    ``resize_shorter`` -> centre crop ``size`` -> normalise.

    Each batch holds ``images``, ``dtype`` (N, 3, size, size), RGB, normalised
    as ``(x - mean) / std`` with x in 0..255, and ``labels``, int64 (N,),
    0-based (the manifest's ``label_base`` is subtracted; RecordIO's float
    labels are cast). The reader pads the last batch of its shard by repeating
    its last sample; :class:`DALILoader` drops or trims that batch.

    Args:
        path: converted dataset directory (recordio, tfrecord or lmdb).
        batch_size: samples per batch.
        train: training preset (True) or evaluation preset (False).
        device: ``"cpu"`` (everything on the host; outputs in host memory),
            ``"mixed"`` (nvJPEG/hardware decode, augmentation on the GPU) or
            ``"gpu"`` (host decode, augmentation on the GPU). Default:
            ``"mixed"`` when ``device_id`` is given, else ``"cpu"``.
        device_id: CUDA device, or None for a CPU-only pipeline.
        num_threads: DALI CPU worker threads.
        seed: base seed; the pipeline uses ``seed + shard_id`` so ranks augment differently.
        shard_id, num_shards: which contiguous part of the dataset this
            pipeline reads; default: torch.distributed rank and world size when
            initialised, else ``0`` of ``1``. DALI moves each reader to the next
            shard every epoch (``stick_to_shard=False``); ranks stay disjoint.
        size: output side in pixels.
        resize_shorter: evaluation resize of the shorter side, >= ``size``.
        mean, std: per-channel RGB normalisation, in 0..255 units.
        dtype: ``"float32"`` or ``"float16"`` (or the torch dtype).
        random_shuffle: shuffle within a ``shuffle_buffer``-sample window;
            default ``train``. DALI shuffles locally, so a dataset stored in
            class order needs a shuffled conversion or a larger buffer.
        random_area, random_aspect_ratio: the random-resized-crop ranges.
        shuffle_buffer: samples held for shuffling (DALI's ``initial_fill``).
        prefetch_queue_depth: batches DALI prepares ahead.

    Returns:
        An unbuilt ``nvidia.dali.Pipeline`` whose reader is named ``"Reader"``.

    Raises:
        MissingDependencyError: DALI is not installed.
        ConfigError: an argument that cannot work.
        ManifestError, FormatError: see :func:`dali_source`.
    """
    dali = import_dali()
    device = resolve_device(device, device_id)
    shard_id, num_shards = resolve_shard(shard_id, num_shards)
    _check_sizes(batch_size, num_threads, size, resize_shorter, mean, std, shuffle_buffer)
    source = dali_source(path)
    if num_shards > source.num_samples:
        raise ConfigError(f"{source.directory}: {num_shards} shards for {source.num_samples} samples; use fewer shards")
    out_dtype = _dali_dtype(dali, dtype)
    shuffle = train if random_shuffle is None else bool(random_shuffle)

    pipe = dali.Pipeline(
        batch_size=batch_size,
        num_threads=num_threads,
        device_id=None if device == "cpu" else device_id,
        seed=seed + shard_id,
        prefetch_queue_depth=prefetch_queue_depth,
    )
    reader_args = dict(
        name=READER_NAME,
        shard_id=shard_id,
        num_shards=num_shards,
        random_shuffle=shuffle,
        initial_fill=shuffle_buffer,
        pad_last_batch=True,
    )
    with pipe:
        jpegs, labels = _read(dali, source, reader_args)
        if train:
            images = _train_images(dali, jpegs, device, size, random_area, random_aspect_ratio)
        else:
            images = _eval_images(dali, jpegs, device, resize_shorter)
        images = dali.fn.crop_mirror_normalize(
            images,
            device="cpu" if device == "cpu" else "gpu",
            dtype=out_dtype,
            output_layout="CHW",
            crop=(size, size),
            mean=list(mean),
            std=list(std),
            mirror=dali.fn.random.coin_flip(probability=0.5) if train else 0,
        )
        labels = dali.fn.cast(labels, dtype=dali.types.INT64)
        if source.label_base:
            labels = labels - source.label_base
        labels = dali.fn.reshape(labels, shape=[])  # (1,) per sample -> scalar: the batch is (N,)
        if device != "cpu":
            labels = labels.gpu()
        pipe.set_outputs(images, labels)
    return pipe


def _read(dali: Any, source: DALISource, reader_args: dict[str, Any]) -> tuple[Any, Any]:
    """The reader's ``(encoded images, labels)`` for the source's format."""
    fn = dali.fn
    if source.reader == "mxnet":
        return fn.readers.mxnet(path=list(source.paths), index_path=list(source.index_paths), **reader_args)
    if source.reader == "caffe":
        # DALI >= 1.x takes a list of LMDB directories and reads them as one dataset
        return fn.readers.caffe(path=list(source.paths), **reader_args)
    tfrec = require("nvidia.dali.tfrecord", extra="dali", purpose="fastdata.dali", package="nvidia-dali-cuda130")
    features = {
        TFRECORD_IMAGE_KEY: tfrec.FixedLenFeature((), tfrec.string, ""),
        TFRECORD_LABEL_KEY: tfrec.FixedLenFeature([1], tfrec.int64, -1),
    }
    out = fn.readers.tfrecord(
        path=list(source.paths), index_path=list(source.index_paths), features=features, **reader_args
    )
    return out[TFRECORD_IMAGE_KEY], out[TFRECORD_LABEL_KEY]


def _train_images(
    dali: Any, jpegs: Any, device: str, size: int, area: tuple[float, float], ratio: tuple[float, float]
) -> Any:
    # Decoding only the crop window saves work for small crops; "mixed" puts
    # the decode on nvJPEG / the hardware JPEG engines and returns GPU images.
    images = dali.fn.decoders.image_random_crop(
        jpegs,
        device="mixed" if device == "mixed" else "cpu",
        output_type=dali.types.RGB,
        random_area=list(area),
        random_aspect_ratio=list(ratio),
        num_attempts=10,
    )
    if device == "gpu":
        images = images.gpu()
    return dali.fn.resize(images, device="cpu" if device == "cpu" else "gpu", resize_x=size, resize_y=size)


def _eval_images(dali: Any, jpegs: Any, device: str, resize_shorter: int) -> Any:
    images = dali.fn.decoders.image(jpegs, device="mixed" if device == "mixed" else "cpu", output_type=dali.types.RGB)
    if device == "gpu":
        images = images.gpu()
    return dali.fn.resize(images, device="cpu" if device == "cpu" else "gpu", resize_shorter=resize_shorter)


def _dali_dtype(dali: Any, dtype: Any) -> Any:
    name = str(dtype).removeprefix("torch.")
    if name not in _DTYPES:
        raise ConfigError(f"dtype must be float32 or float16, got {dtype!r}")
    return getattr(dali.types, _DTYPES[name])


def _check_sizes(
    batch_size: int,
    num_threads: int,
    size: int,
    resize_shorter: int,
    mean: Sequence[float],
    std: Sequence[float],
    shuffle_buffer: int,
) -> None:
    counts = {"batch_size": batch_size, "num_threads": num_threads, "size": size, "shuffle_buffer": shuffle_buffer}
    for name, value in counts.items():
        if not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be a positive int, got {value!r}")
    if resize_shorter < size:
        raise ConfigError(f"resize_shorter ({resize_shorter}) must be >= size ({size}) for the centre crop to fit")
    if len(mean) != 3 or len(std) != 3 or any(s == 0 for s in std):
        raise ConfigError(f"mean and std need 3 values (RGB) and std no zero, got mean={mean!r}, std={std!r}")
