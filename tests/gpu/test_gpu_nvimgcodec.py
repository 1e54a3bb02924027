"""The nvImageCodec backend's plumbing without a GPU (issue 37): explicit
backends, pre-allocation options, per-image regions, one decoder per thread
on two threads; checked against a stand-in module with the names of
nvImageCodec 0.9's Python API (the ones the backend uses), and, where the
wheel is installed, against nvImageCodec's own CPU backend."""

from __future__ import annotations

import multiprocessing
import sys
import threading
import warnings

import numpy as np
import pytest
import torch

from fastdata import make_loader
from fastdata.decode import decode as cpu_decode
from fastdata.decode import read_info
from fastdata.errors import MissingDependencyError
from fastdata.gpu import CPUDecoder, GPUDecode, NvImageCodecDecoder, backends

from ._photos import hymenoptera  # noqa: F401 - the fixture
from ._photos import TOLERANCE_MEAN, photos, train_transform

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU stand-ins run where CUDA is not")


class _Codec:
    """A stand-in for ``nvidia.nvimgcodec``: the names the backend calls, recording the calls."""

    NVIMGCODEC_DEVICE_CPU_ONLY = -99

    class BackendKind:
        CPU_ONLY, GPU_ONLY, HYBRID_CPU_GPU, HW_GPU_ONLY = "CPU_ONLY", "GPU_ONLY", "HYBRID_CPU_GPU", "HW_GPU_ONLY"

    class ColorSpec:
        SRGB = "SRGB"

    def __init__(self, ignore_regions: bool = False) -> None:
        self.ignore_regions = ignore_regions
        self.decoders: list[dict] = []
        self.calls: list[tuple[int, int, int]] = []  # (thread, decoder number, images)
        codec = self

        class Backend:
            def __init__(self, backend_kind, load_hint=1.0):
                self.backend_kind, self.load_hint = backend_kind, load_hint

        class DecodeParams:
            def __init__(self, color_spec=None, apply_exif_orientation=True):
                self.color_spec, self.apply_exif_orientation = color_spec, apply_exif_orientation

        class Region:
            def __init__(self, start_y, start_x, end_y, end_x):
                self.box = (start_y, start_x, end_y, end_x)

        class CodeStream:
            def __init__(self, array, region=None):
                self.data, self.region = bytes(np.asarray(array, dtype=np.uint8)), region
                info = read_info(self.data)
                self.height, self.width = info.height, info.width

            def get_sub_code_stream(self, image_idx=0, region=None):
                return CodeStream(np.frombuffer(self.data, np.uint8), region)

        class Image:
            def __init__(self, pixels):
                self.pixels = pixels

            def cpu(self):
                return self

            def __array__(self, dtype=None, copy=None):
                return self.pixels

        class Decoder:
            def __init__(self, device_id=-1, max_num_cpu_threads=0, backends=None, options=""):
                self.number = len(codec.decoders)
                codec.decoders.append({"device_id": device_id, "backends": backends, "options": options,
                                       "thread": threading.get_ident()})

            def decode(self, srcs, images=None, params=None, cuda_stream=0):
                codec.calls.append((threading.get_ident(), self.number, len(srcs)))
                out = []
                for s in srcs:
                    pixels = cpu_decode(s.data)
                    if s.region is not None and not codec.ignore_regions:
                        y0, x0, y1, x1 = s.region.box
                        pixels = pixels[y0:y1, x0:x1]
                    out.append(Image(np.ascontiguousarray(pixels)))
                return out

        self.Backend, self.DecodeParams, self.Region = Backend, DecodeParams, Region
        self.CodeStream, self.Decoder = CodeStream, Decoder


def _photos(root, count=8):
    files = sorted((root / "train" / "ants").glob("*.jpg"))[:count]
    return [f.read_bytes() for f in files]


def test_the_hardware_engine_first_then_cuda_and_preallocated_for_each_threads_part(hymenoptera):
    codec = _Codec()
    decoder = NvImageCodecDecoder(codec=codec, hw_load=0.75, batch_hint=256, threads=2)
    data = _photos(hymenoptera)
    decoder.decode([torch.frombuffer(bytearray(d), dtype=torch.uint8) for d in data], torch.device("cpu"))
    assert len(codec.decoders) == 2
    kinds = [(b.backend_kind, b.load_hint) for b in codec.decoders[0]["backends"]]
    assert kinds == [("HW_GPU_ONLY", 0.75), ("GPU_ONLY", 1.0)]
    sizes = [(read_info(d).height, read_info(d).width) for d in data]
    for made in codec.decoders:
        options = made["options"].split()
        assert "nvjpeg_hw_decoder:preallocate_batch_size=128" in options  # 256 over 2 threads
        assert any(o.startswith("nvjpeg_hw_decoder:preallocate_width_hint=") for o in options)
        height = int(next(o for o in options if "height_hint" in o).split("=")[1])
        assert min(h for h, _ in sizes) <= height <= max(h for h, _ in sizes)  # the part's median
    pinned = NvImageCodecDecoder(codec=_Codec(), size_hint=(480, 640), threads=1)
    pinned.decode([torch.frombuffer(bytearray(data[0]), dtype=torch.uint8)], torch.device("cpu"))
    assert pinned._codec.decoders[0]["options"].split() == [
        "nvjpeg_hw_decoder:preallocate_batch_size=256", "nvjpeg_hw_decoder:preallocate_width_hint=640",
        "nvjpeg_hw_decoder:preallocate_height_hint=480", "nvjpeg_hw_decoder:enable_roi_fancy_upsampling=1"]
    whole = NvImageCodecDecoder(codec=_Codec(), size_hint=(480, 640), threads=1, roi=False)
    whole.decode([torch.frombuffer(bytearray(data[0]), dtype=torch.uint8)], torch.device("cpu"))
    assert not any("roi" in o for o in whole._codec.decoders[0]["options"].split())  # no regions asked: left as it is
    cpu = NvImageCodecDecoder(codec=_Codec(), cpu=True)
    assert [b.backend_kind for b in cpu.backends()] == ["CPU_ONLY"]


def test_one_decoder_per_thread_two_threads_each_call_and_the_order_kept(hymenoptera):
    codec = _Codec()
    decoder = NvImageCodecDecoder(codec=codec, threads=2)
    data = _photos(hymenoptera)
    encoded = [torch.frombuffer(bytearray(d), dtype=torch.uint8) for d in data]
    for _ in range(3):
        images = decoder.decode(encoded, torch.device("cpu"))
        for d, image in zip(data, images, strict=True):
            assert torch.equal(image, torch.from_numpy(cpu_decode(d)))
    assert len(codec.decoders) == 2 and len({d["thread"] for d in codec.decoders}) == 2
    assert len(codec.calls) == 6 and sorted(n for _, _, n in codec.calls) == [4] * 6
    for thread, number, _ in codec.calls:  # each thread only ever calls its own decoder
        assert codec.decoders[number]["thread"] == thread


def test_regions_are_decoded_as_sub_code_streams(hymenoptera):
    decoder = NvImageCodecDecoder(codec=_Codec(), threads=2)
    data = _photos(hymenoptera, 4)
    regions = [(5, 7, 40, 60), (0, 0, 16, 16), (10, 3, 1, 90), (2, 2, 30, 30)]
    images = decoder.decode([torch.frombuffer(bytearray(d), dtype=torch.uint8) for d in data], torch.device("cpu"),
                            regions=regions)
    for d, (top, left, rows, cols), image in zip(data, regions, images, strict=True):
        assert torch.equal(image, torch.from_numpy(cpu_decode(d)[top: top + rows, left: left + cols]))


def test_a_region_decode_that_fails_its_proof_falls_back_to_whole_images(monkeypatch):
    monkeypatch.setattr(backends, "BACKENDS", {"nvimgcodec": lambda: NvImageCodecDecoder(codec=_Codec(ignore_regions=True))})
    decoder, why = backends.gpu_backend("auto", torch.device("cpu"))
    assert decoder.roi is False and "whole images" in why and "gave shape (8, 16, 3)" in why
    monkeypatch.setattr(backends, "BACKENDS", {"nvimgcodec": lambda: NvImageCodecDecoder(codec=_Codec())})
    decoder, why = backends.gpu_backend("auto", torch.device("cpu"))
    assert decoder.roi is True and "whole images" not in why


def test_auto_tries_torchvision_first_then_nvimgcodec():
    assert list(backends.BACKENDS) == ["torchvision", "nvimgcodec"]  # the faster on both GPU runs


def test_without_the_wheel_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "nvidia.nvimgcodec", None)  # import raises ImportError
    with pytest.raises(MissingDependencyError, match=r"pip install 'fastdata\[gpu\]'"):
        NvImageCodecDecoder()


def test_the_loader_pins_the_bytes_only_for_a_decoder_that_copies_them(hymenoptera):
    dataset = photos(hymenoptera, train_transform(), count=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        copying = make_loader(dataset, 8, seed=0, workers=0, decode=GPUDecode(backend=NvImageCodecDecoder(codec=_Codec())))
        plain = make_loader(dataset, 8, seed=0, workers=0, decode=GPUDecode(backend=CPUDecoder()))
    with copying, plain:
        next(iter(copying)), next(iter(plain))
        assert copying.prefetcher.last.pin_data and not plain.prefetcher.last.pin_data


def test_nvimgcodecs_own_cpu_backend_decodes_the_windows_the_stage_asks_for(hymenoptera):
    pytest.importorskip("nvidia.nvimgcodec", reason="nvidia-nvimgcodec-cu13 is not installed (the test extra has it)")
    dataset = photos(hymenoptera, train_transform(96), count=16)
    cpu = list(make_loader(dataset, 8, seed=5, workers=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        loader = make_loader(dataset, 8, seed=5, workers=0, decode=GPUDecode(backend=NvImageCodecDecoder(cpu=True)))
    assert loader.prefetcher.decoder.roi
    for (x, y), (cx, cy) in zip(loader, cpu, strict=True):
        assert torch.equal(y, cy) and (x.int() - cx.int()).abs().float().mean() <= TOLERANCE_MEAN


def _decoder_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("fastdata-nvimgcodec-")]


def test_decoder_threads_stop_before_a_fork_and_come_back_after(hymenoptera):
    # a worker forked while nvImageCodec's threads lived died of SIGSEGV on the GPU machine
    codec = _Codec()
    decoder = NvImageCodecDecoder(codec=codec, threads=2)
    encoded = [torch.frombuffer(bytearray(d), dtype=torch.uint8) for d in _photos(hymenoptera, 4)]
    decoder.decode(encoded, torch.device("cpu"))
    assert len(_decoder_threads()) == 2
    child = multiprocessing.get_context("fork").Process(target=_decoder_threads)
    child.start()
    child.join(30)
    assert child.exitcode == 0 and _decoder_threads() == []
    again = decoder.decode(encoded, torch.device("cpu"))
    assert all(im is not None for im in again) and len(codec.decoders) == 4  # made again, on new threads
    decoder.close()
    assert _decoder_threads() == []
