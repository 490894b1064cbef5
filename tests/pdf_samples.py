"""PDF files of many shapes for the page-count tests: classic and stream cross-references,
object streams, PNG predictors, incremental updates, wrong /Count, nested trees. Built here,
byte by byte (no PDF library), plus what pypdf's writer makes of them."""

from __future__ import annotations

import io
import random
import zlib


def _objects_to_pdf(
    objects: dict[int, bytes],
    root: int,
    *,
    xref_stream: bool = False,
    objstm: set[int] = frozenset(),
    predictor: bool = False,
    extra_trailer: bytes = b"",
) -> bytes:
    out = io.BytesIO()
    out.write(b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n")
    where: dict[int, tuple] = {}
    plain = [n for n in sorted(objects) if n not in objstm]
    for n in plain:
        where[n] = (1, out.tell(), 0)
        out.write(b"%d 0 obj\n" % n + objects[n] + b"\nendobj\n")
    size = max(objects) + 1
    if objstm:
        stm_num = size
        size += 1
        header, body = [], b""
        for i, n in enumerate(sorted(objstm)):
            header.append(b"%d %d" % (n, len(body)))
            body += objects[n] + b"\n"
            where[n] = (2, stm_num, i)
        head = b" ".join(header) + b"\n"
        data = zlib.compress(head + body)
        where[stm_num] = (1, out.tell(), 0)
        out.write(
            b"%d 0 obj\n<< /Type /ObjStm /N %d /First %d /Filter /FlateDecode /Length %d >>\nstream\n"
            % (stm_num, len(objstm), len(head), len(data))
            + data
            + b"\nendstream\nendobj\n"
        )
    if not xref_stream:
        xref = out.tell()
        out.write(b"xref\n0 %d\n0000000000 65535 f \n" % size)
        for n in range(1, size):
            kind = where.get(n)
            out.write(b"%010d 00000 n \n" % kind[1] if kind else b"0000000000 00000 f \n")
        out.write(b"trailer\n<< /Size %d /Root %d 0 R %s>>\nstartxref\n%d\n%%%%EOF\n" % (size, root, extra_trailer, xref))
        return out.getvalue()
    xnum = size
    size += 1
    xref = out.tell()
    where[xnum] = (1, xref, 0)
    rows = b""
    for n in range(size):
        t, a, b = where.get(n, (0, 0, 0))
        rows += bytes([t]) + a.to_bytes(4, "big") + b.to_bytes(2, "big")
    parms = b""
    if predictor:  # PNG Up rows, as many writers emit them
        width, prev, enc = 7, bytes(7), b""
        for i in range(0, len(rows), width):
            row = rows[i : i + width]
            enc += b"\x02" + bytes((x - y) % 256 for x, y in zip(row, prev))
            prev = row
        rows = enc
        parms = b" /DecodeParms << /Predictor 12 /Columns 7 >>"
    data = zlib.compress(rows)
    out.write(
        b"%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root %d 0 R /Filter /FlateDecode%s /Length %d %s>>\nstream\n"
        % (xnum, size, root, parms, len(data), extra_trailer)
        + data
        + b"\nendstream\nendobj\n"
    )
    out.write(b"startxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def tree_objects(rng: random.Random, leaves: int, *, count_delta: int = 0) -> tuple[dict[int, bytes], int]:
    """A catalog and a page tree of `leaves` pages, randomly nested; /Count off by `count_delta`
    at the root."""
    objects: dict[int, bytes] = {}
    nxt = [2]

    def new() -> int:
        nxt[0] += 1
        return nxt[0]

    def build(num: int, parent: int | None, n: int) -> None:
        kids = []
        left = n
        while left:
            if left > 1 and rng.random() < 0.3:
                k = rng.randint(1, left)
                child = new()
                build(child, num, k)
                left -= k
            else:
                child = new()
                objects[child] = b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << >> >>" % num
                left -= 1
            kids.append(child)
        count = n + (count_delta if parent is None else 0)
        par = b" /Parent %d 0 R" % parent if parent else b""
        objects[num] = b"<< /Type /Pages /Kids [%s] /Count %d%s >>" % (b" ".join(b"%d 0 R" % k for k in kids), count, par)

    objects[1] = b"<< /Type /Catalog /Pages 2 0 R >>"
    build(2, None, leaves)
    return objects, 1


def samples(seed: int = 0) -> dict[str, bytes]:
    rng = random.Random(seed)
    out = {}
    for i in range(24):
        leaves = rng.choice([1, 1, 2, 3, 7])
        objs, root = tree_objects(rng, leaves, count_delta=rng.choice([0, 0, 1, -1]) if leaves > 1 else 0)
        xs = rng.random() < 0.6
        stm = {n for n in objs if rng.random() < 0.5} if xs else set()
        out[f"gen{i}_{leaves}{'_xs' if xs else ''}{'_os' if stm else ''}"] = _objects_to_pdf(
            objs, root, xref_stream=xs, objstm=stm, predictor=xs and rng.random() < 0.5
        )
    return out


def via_pypdf(data: bytes, *, incremental: bool = False) -> bytes:
    """`data` rewritten by pypdf's writer, or (incremental) with an update section appended."""
    from pypdf import PdfReader, PdfWriter

    buf = io.BytesIO()
    if incremental:
        w = PdfWriter(io.BytesIO(data), incremental=True)
        w.add_metadata({"/Title": "updated"})
    else:
        w = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    w.write(buf)
    return buf.getvalue()
