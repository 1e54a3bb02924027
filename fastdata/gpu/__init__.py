"""GPU decode inside the loader (``make_loader(..., decode="cuda")``).

Workers only read: the encoded bytes, the label, and the crop's
:class:`~fastdata.decode.plan.CropPlan`, drawn from the JPEG header's size by
the same seeded transforms as the CPU path (:mod:`fastdata.gpu.samples`). A batch travels as one byte buffer with
offsets (:mod:`fastdata.gpu.batch`). The main process decodes it with one
batched call (:mod:`fastdata.gpu.backends`), then crops, resizes
(antialiased), flips and normalises it with batched tensor ops
(:mod:`fastdata.gpu.resample`), one batch ahead on a side stream
(:mod:`fastdata.gpu.stage`). Without CUDA the same code runs on the CPU.

The hybrid (``decode="auto"`` with CUDA, ``GPUDecode(cpu_share=...)``): the
workers also crop a share of each batch's samples with the compiled CPU crop
decoder (:mod:`fastdata.gpu.cpu_crops`), and a controller in the stage keeps
that share where both sides take the same time (:mod:`fastdata.gpu.share`).
"""

from ..loading.decode_choice import GPUDecode
from ..loading.executors import register_executor
from .backends import BACKENDS, CPUDecoder, Decoder, NvImageCodecDecoder, TorchvisionDecoder, gpu_backend
from .batch import EncodedBatch, EncodedCollate
from .executor import GPUExecutor, gpu_executor
from .samples import Accepts, GPUSample, GPUSamples
from .stage import GPUBatches

register_executor("cuda", gpu_executor)
register_executor("auto", gpu_executor)

__all__ = [
    "BACKENDS", "Accepts", "CPUDecoder", "Decoder", "EncodedBatch", "EncodedCollate", "GPUBatches", "GPUDecode",
    "GPUExecutor", "GPUSample", "GPUSamples", "NvImageCodecDecoder", "TorchvisionDecoder", "gpu_backend", "gpu_executor",
]
