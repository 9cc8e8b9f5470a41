"""Writing a fixed `.pt2`: the same zip with one member (the model JSON) replaced.

Every other member is copied as it is, in the same order, with its name, timestamp,
attributes and compression method; only the model JSON's bytes change. Members are
streamed, so a large weight file is never held twice. torch.export.load reads archives
written by plain `zipfile` (stored or deflated).
"""

from __future__ import annotations

import io
import shutil
import zipfile


def _copy_info(info: zipfile.ZipInfo) -> zipfile.ZipInfo:
    out = zipfile.ZipInfo(info.filename, date_time=info.date_time)
    out.compress_type = info.compress_type
    out.external_attr = info.external_attr
    out.create_system = info.create_system
    out.comment = info.comment
    out.file_size = info.file_size
    return out


def replace_member(data: bytes, member: str, content: bytes) -> bytes:
    """`data` (a zip) with the bytes of `member` replaced by `content`."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        dst.comment = src.comment
        for info in src.infolist():
            copy = _copy_info(info)
            if info.filename == member:
                copy.file_size = len(content)
                dst.writestr(copy, content)
                continue
            with src.open(info) as reader, dst.open(copy, "w") as writer:
                shutil.copyfileobj(reader, writer, 1 << 20)
    return out.getvalue()
