"""The picture type the readers hand out (:class:`Frame`), their error
(:class:`VideoFormatError`), the protocol they share (:class:`FrameReader`)
and FFmpeg's names of planar layouts: what both
:mod:`vmafdnn.video` (Y4M, raw YUV) and :mod:`vmafdnn.media` (containers,
through PyAV) need, in a module below both, so that neither imports the
other to get them (video hands containers to media; media imports nothing
from video). Public under their old names in :mod:`vmafdnn.video`.

Only numpy and the standard library are imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np

__all__ = ["VideoFormatError", "Frame", "FrameReader", "format_label"]


class VideoFormatError(ValueError):
    """The video data (header, frame size, samples) is malformed or unsupported.

    Wrong *arguments* (a missing raw geometry option, say) raise a plain
    ValueError instead.
    """


class FrameReader:
    """What every reader is: an iterator of frames and a context manager, both through
    ``read_frame()`` (the next frame, None at the end) and ``close()``, which it defines."""

    def read_frame(self) -> Optional["Frame"]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __iter__(self) -> Iterator["Frame"]:
        return self

    def __next__(self) -> "Frame":
        frame = self.read_frame()
        if frame is None:
            raise StopIteration
        return frame

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass(frozen=True, eq=False, repr=False)
class Frame:
    """One picture: planar Y, U, V sample arrays.

    ``y`` is (height, width); ``u`` and ``v`` follow ``chroma``: "420"
    (ceil(h/2), ceil(w/2)), "422" (h, ceil(w/2)), "444" (h, w), or "400"
    (monochrome: ``u`` and ``v`` are None). dtype is uint8 when ``bitdepth``
    is 8 and native uint16 for 9..16. Frames from the readers are views into
    one buffer per frame.
    """

    y: np.ndarray
    u: Optional[np.ndarray]
    v: Optional[np.ndarray]
    bitdepth: int
    index: int
    chroma: str

    @property
    def width(self) -> int:
        return int(self.y.shape[1])

    @property
    def height(self) -> int:
        return int(self.y.shape[0])

    def planes(self) -> tuple:
        """The planes present, in file order (Y alone for monochrome)."""
        return (self.y,) if self.u is None else (self.y, self.u, self.v)

    def __repr__(self) -> str:
        return (f"Frame(index={self.index}, {self.width}x{self.height}, "
                f"chroma={self.chroma}, bitdepth={self.bitdepth})")


def format_label(chroma: str, bitdepth: int) -> str:
    """FFmpeg's name for a planar layout: yuv420p, yuv422p10le, gray, gray12le."""
    if chroma == "400":
        return "gray" if bitdepth == 8 else f"gray{bitdepth}le"
    return f"yuv{chroma}p" if bitdepth == 8 else f"yuv{chroma}p{bitdepth}le"
