"""QR codes as ``data:image/png;base64,`` URIs (spec 2.7: the service hosts no image).

``segno`` encodes the QR symbol and writes the PNG: a QR encoder (Reed-Solomon, masking, format
information) is not something to hand-roll for a simulator, and segno is pure Python with no
dependencies of its own.
"""

from __future__ import annotations

import base64
import io

import segno

__all__ = ["PNG_DATA_URI_PREFIX", "png_data_uri"]

PNG_DATA_URI_PREFIX = "data:image/png;base64,"


def png_data_uri(content: str, *, scale: int = 4) -> str:
    """The PNG of a QR code holding ``content`` (error correction M, 4-module quiet zone)."""
    symbol = segno.make_qr(content, error="m", boost_error=False)
    buffer = io.BytesIO()
    symbol.save(buffer, kind="png", scale=scale, border=4)
    return PNG_DATA_URI_PREFIX + base64.b64encode(buffer.getvalue()).decode("ascii")
