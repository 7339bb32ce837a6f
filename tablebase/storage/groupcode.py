"""Group-coded deflate: standard deflate blocks whose entries a probe decodes one group at a time.

A block of a part (:data:`~tablebase.storage.chunkio.BLOCK_BYTES` bytes) is written as one
zlib stream holding one dynamic-Huffman deflate block, so every HDF5 reader inflates it as
any other chunk; but the stream is made so that a reader who knows where a *group* of the
part's group size (a power of two, :func:`is_group_size`; the part's ``<part>_groups``
dataset says it, :data:`GROUP_ATTR`) begins can decode the group alone, without inflating
the block:

- the Huffman codes are those of the whole part (every block of a part carries the same
  header), so a prober builds the decoding table once per part;
- the only tokens are literals and repeats of the byte before (length codes with distance
  1), and no repeat crosses the start of a group; a group's first token is a literal;
- beside the chunks, ``<part>_groups`` (``uint16``, one row of ``1 + BLOCK_BYTES //
  group`` per block, :func:`row_length`) holds where each group's tokens begin:
  ``row[0]`` is the bit offset of group 0 in the chunk (after the zlib header and the
  deflate header), ``row[g]`` for ``g >= 1`` the length in bits of group ``g - 1``;
- ``<part>_zcrc32`` holds the CRC-32 of each chunk's stored (compressed) bytes, so that a
  group read straight from the file is checked without inflating its block.

Huffman codes are limited to :data:`MAX_BITS` bits (a decoding table of 2^12 entries per
part). Literals and repeats of one byte are what values and WDL codes mostly are: on the
slices measured (docs/FORMAT.md) this is within a few per cent of ISA-L's level 1 deflate,
smaller on some, and a probe decodes on average half a group instead of a 16 KiB block.
Format 5 writes values in groups of 128 bytes and WDL codes (four to a byte, and mostly
repeats) in groups of 256; format 4 wrote both in groups of 256, and its ``<part>_groups``
carries no group size (:data:`OLD_GROUP_BYTES`).
"""

from __future__ import annotations

import heapq
from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

OLD_GROUP_BYTES = 256  # the group size of a part whose rows do not say it (format 4)
GROUP_ATTR = "group_bytes"  # the attribute of ``<part>_groups`` giving the group size
MIN_GROUP, MAX_GROUP = 16, 4096  # group sizes read (a group's length in bits fits a uint16)
FILTER_LEVEL = 1  # the deflate level a group-coded dataset's filter records
MAX_BITS = 12  # longest Huffman code of the literal/length alphabet
WINDOW = 1 << MAX_BITS  # entries of a decoding table's half (the bits a look-up sees)
TABLE_SIZE = 2 * WINDOW  # a decoding table: symbols, then runs of literals
_MASK = np.uint64(WINDOW - 1)
LITLEN = 286  # literal/length symbols of deflate (0-255 literals, 256 end, 257-285 lengths)
_EOB = 256
_LEN_BASE = np.array(
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99,
     115, 131, 163, 195, 227, 258], dtype=np.int32)  # fmt: skip
_LEN_EXTRA = np.array(
    [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0],
    dtype=np.int32)  # fmt: skip
_CL_ORDER = (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)


def is_group_size(group: int) -> bool:
    """True if ``group`` is a group size this module writes and reads: a power of two from
    :data:`MIN_GROUP` to :data:`MAX_GROUP` bytes."""
    return MIN_GROUP <= group <= MAX_GROUP and group & (group - 1) == 0


def row_length(block_bytes: int, group: int) -> int:
    """``uint16`` entries of a block's row in ``<part>_groups`` (groups of ``group`` bytes)."""
    return 1 + -(-block_bytes // group)


# ---------------------------------------------------------------- tokens and frequencies


def _length_codes() -> np.ndarray:
    """Deflate's length symbol (257-285) of a repeat of ``n`` bytes, at ``n`` (3-258)."""
    out = np.zeros(259, dtype=np.int32)
    for n in range(3, 259):
        out[n] = 257 + int(np.searchsorted(_LEN_BASE, n, side="right")) - 1
    return out


_LEN_BASE_J = _LEN_BASE  # read by the compiled code as a global constant
_LEN_EXTRA_J = _LEN_EXTRA
_LEN_CODE_J = _length_codes()


@njit(cache=True, inline="always")
def _length_code(n):
    """Deflate's length symbol (257-285) of a repeat of ``n`` bytes (3-258)."""
    return _LEN_CODE_J[n]


@njit(cache=True, inline="always")
def _run_at(raw, i, end):
    """Bytes from ``i`` (before ``end``) equal to the byte before ``i``."""
    p = raw[i - 1]
    j = i
    while j < end and raw[j] == p:
        j += 1
    return j - i


STRIPES = 64  # runs of blocks counted apart (in parallel), then summed


@njit(cache=True, parallel=True)
def count_symbols(raw, block_bytes, group):
    """Frequencies of the literal/length symbols of the tokens of every block of ``raw``
    (whole blocks, in groups of ``group`` bytes), counted in :data:`STRIPES` runs of blocks
    in parallel, then summed."""
    nblocks = raw.shape[0] // block_bytes
    counts = np.zeros((STRIPES, LITLEN), dtype=np.int64)
    for t in prange(STRIPES):
        c = counts[t]
        for b in range(t * nblocks // STRIPES, (t + 1) * nblocks // STRIPES):
            _count_block(raw, b * block_bytes, block_bytes, group, c)
    return counts.sum(axis=0)


@njit(cache=True)
def _count_block(raw, base, block_bytes, group, c):
    """Add the symbols of the block at ``raw[base:]`` to the counts ``c``."""
    for g0 in range(base, base + block_bytes, group):
        end = min(g0 + group, base + block_bytes)
        c[raw[g0]] += 1
        i = g0 + 1
        while i < end:
            r = _run_at(raw, i, end)
            if r >= 3:
                n = min(r, 258)
                c[_length_code(n)] += 1
                i += n
            else:
                c[raw[i]] += 1
                i += 1
    c[_EOB] += 1


# ---------------------------------------------------------------- code lengths (Python: small)


def _huffman_lengths(freq: np.ndarray, limit: int) -> np.ndarray:
    """Code lengths of a Huffman code for ``freq`` (0 for unused symbols), no longer than
    ``limit`` bits (the frequencies are flattened until they fit)."""
    freq = np.asarray(freq, dtype=np.int64)
    used = np.flatnonzero(freq)
    lengths = np.zeros(freq.shape[0], dtype=np.int32)
    if used.size == 0:
        return lengths
    if used.size == 1:
        lengths[used[0]] = 1
        return lengths
    f = freq[used].copy()
    while True:
        # (weight, tie-break, the symbols of the subtree)
        heap: list[tuple[int, int, tuple[int, ...]]] = [(int(w), i, (i,)) for i, w in enumerate(f)]
        heapq.heapify(heap)
        depth = np.zeros(used.size, dtype=np.int32)
        tie = used.size
        while len(heap) > 1:
            w1, _, a = heapq.heappop(heap)
            w2, _, b = heapq.heappop(heap)
            for s in a + b:
                depth[s] += 1
            heapq.heappush(heap, (w1 + w2, tie, a + b))
            tie += 1
        if depth.max() <= limit:
            lengths[used] = depth
            return lengths
        f = np.maximum(1, f >> 1)


def _canonical(lengths: np.ndarray) -> np.ndarray:
    """The codes (as deflate assigns them, RFC 1951 3.2.2) of ``lengths``, bit-reversed for
    writing least significant bit first."""
    maxlen = int(lengths.max()) if lengths.size else 0
    bl_count = np.bincount(lengths, minlength=maxlen + 1)
    bl_count[0] = 0
    next_code = np.zeros(maxlen + 2, dtype=np.int64)
    code = 0
    for bits in range(1, maxlen + 1):
        code = (code + bl_count[bits - 1]) << 1
        next_code[bits] = code
    codes = np.zeros(lengths.shape[0], dtype=np.int64)
    for s, n in enumerate(lengths):
        if n:
            c = next_code[n]
            next_code[n] += 1
            codes[s] = int(f"{int(c):0{int(n)}b}"[::-1], 2)
    return codes


class _Bits:
    """A little-endian bit string (Python: for the header, written once per part)."""

    def __init__(self) -> None:
        self.value = 0
        self.n = 0

    def put(self, v: int, n: int) -> None:
        self.value |= (int(v) & ((1 << n) - 1)) << self.n
        self.n += n


def _rle_lengths(seq: list[int]) -> list[tuple[int, int, int]]:
    """Deflate's code-length symbols (symbol, extra value, extra bits) of ``seq``."""
    out: list[tuple[int, int, int]] = []
    i = 0
    while i < len(seq):
        v = seq[i]
        j = i
        while j < len(seq) and seq[j] == v:
            j += 1
        run = j - i
        if v == 0 and run >= 3:
            while run >= 11:
                k = min(run, 138)
                out.append((18, k - 11, 7))
                run -= k
            if run >= 3:
                out.append((17, run - 3, 3))
                run = 0
            out.extend((0, 0, 0) for _ in range(run))
        else:
            out.append((v, 0, 0))
            run -= 1
            while run >= 3:
                k = min(run, 6)
                out.append((16, k - 3, 2))
                run -= k
            out.extend((v, 0, 0) for _ in range(run))
        i = j
    return out


class PartCode:
    """The Huffman code of one part: what every block's header says and how its tokens are
    written (:func:`part_code`) and read (:attr:`table`)."""

    def __init__(self, lengths: np.ndarray) -> None:
        self.lengths = lengths.astype(np.int32)
        self.codes = _canonical(self.lengths)
        self.header, self.header_bits = self._header()
        self.table = decode_table(self.lengths)

    def encode(
        self,
        raw: np.ndarray,
        first: int,
        count: int,
        block_bytes: int,
        group: int,
        out: np.ndarray,
        sizes: np.ndarray,
        rows: np.ndarray,
    ) -> None:
        """Blocks ``first`` to ``first + count`` of ``raw`` (in groups of ``group`` bytes)
        into the rows of ``out``, their stream lengths into ``sizes`` and their group
        offsets into ``rows``."""
        coder = Coder(self.lengths, self.codes, self.header, self.header_bits)
        encode_blocks(raw, first, count, (block_bytes, group), coder, out, sizes, rows)

    def _header(self) -> tuple[np.ndarray, int]:
        lit = [int(x) for x in self.lengths]
        hlit = max(257, max(i for i, n in enumerate(lit) if n) + 1)
        seq = lit[:hlit] + [1]  # one distance code (distance 1), one bit long
        cl_syms = _rle_lengths(seq)
        cl_freq = np.bincount([s for s, _, _ in cl_syms], minlength=19)
        cl_len = _huffman_lengths(cl_freq, 7)
        if (cl_len > 0).sum() == 1:  # a lone code-length code: give it a partner
            cl_len[(int(np.flatnonzero(cl_len)[0]) + 1) % 19] = 1
        cl_code = _canonical(cl_len)
        hclen = max(4, max(i for i, s in enumerate(_CL_ORDER) if cl_len[s]) + 1)
        b = _Bits()
        b.put(0x78, 8)
        b.put(0x01, 8)  # zlib header: deflate, 32 KiB window, no dictionary, level "fastest"
        b.put(1, 1)  # the last block
        b.put(2, 2)  # dynamic Huffman codes
        b.put(hlit - 257, 5)
        b.put(0, 5)  # HDIST: one distance code
        b.put(hclen - 4, 4)
        for s in _CL_ORDER[:hclen]:
            b.put(int(cl_len[s]), 3)
        for s, extra, nbits in cl_syms:
            b.put(int(cl_code[s]), int(cl_len[s]))
            if nbits:
                b.put(extra, nbits)
        nbytes = (b.n + 7) // 8
        return np.frombuffer(b.value.to_bytes(nbytes + 8, "little"), dtype=np.uint8).copy(), b.n


def code_of(freq: np.ndarray) -> PartCode:
    """The code of a part whose symbol frequencies (:func:`count_symbols`) are ``freq``."""
    return PartCode(_huffman_lengths(freq, MAX_BITS))


def part_code(raw: np.ndarray, block_bytes: int, group: int) -> PartCode:
    """The code of a part whose bytes (whole blocks, the last padded; groups of ``group``
    bytes) are ``raw``."""
    return code_of(count_symbols(raw, block_bytes, group))


# ---------------------------------------------------------------- writing a block


@njit(cache=True)
def _adler32(raw, lo, hi):
    """Adler-32 of ``raw[lo:hi]``: over a span of ``n`` bytes ``a`` gains their sum and
    ``b`` gains ``n * a`` plus each byte times the bytes from it to the span's end, two
    sums the compiler vectorises (spans of at most 1 MiB, so that they fit 64 bits)."""
    a = np.int64(1)
    b = np.int64(0)
    i = lo
    while i < hi:
        stop = min(hi, i + (1 << 20))
        n = stop - i
        s = np.int64(0)
        t = np.int64(0)
        for j in range(n):
            x = np.int64(raw[i + j])
            s += x
            t += (n - j) * x
        b = (b + n * a + t) % 65521
        a = (a + s) % 65521
        i = stop
    return np.uint32((b << 16) | a)


@njit(cache=True, inline="always")
def _put(out, pos, acc, nacc, v, n):
    """Append the ``n`` low bits of ``v`` to the bit stream: ``acc`` holds the ``nacc`` bits
    not yet stored after ``out[:pos]``; four bytes are stored at a time (a code is at most
    :data:`MAX_BITS` bits and an extra field five, so ``acc`` never passes 44 bits)."""
    acc |= np.uint64(v) << np.uint64(nacc)
    nacc += n
    if nacc >= 32:
        out[pos] = np.uint8(acc & np.uint64(0xFF))
        out[pos + 1] = np.uint8((acc >> np.uint64(8)) & np.uint64(0xFF))
        out[pos + 2] = np.uint8((acc >> np.uint64(16)) & np.uint64(0xFF))
        out[pos + 3] = np.uint8((acc >> np.uint64(24)) & np.uint64(0xFF))
        pos += 4
        acc >>= np.uint64(32)
        nacc -= 32
    return pos, acc, nacc


@njit(cache=True, inline="always")
def _flush(out, pos, acc, nacc):
    """The bits left in ``acc`` stored, padded with zeros to a whole byte; returns the new
    ``pos``."""
    while nacc > 0:
        out[pos] = np.uint8(acc & np.uint64(0xFF))
        pos += 1
        acc >>= np.uint64(8)
        nacc -= 8
    return pos


class Coder(NamedTuple):
    """A part's Huffman code as the compiled encoder takes it (:class:`PartCode`)."""

    lengths: np.ndarray  # per literal/length symbol: its code's length in bits (int32)
    codes: np.ndarray  # ... its code
    header: np.ndarray  # the bytes of every block's stream header
    header_bits: int  # its length in bits


@njit(cache=True)
def encode_block(raw, lo, layout, coder, out, row):
    """Write block ``raw[lo : lo + block_bytes]`` (``layout`` = (block_bytes, group): groups
    of ``group`` bytes) as a zlib stream with the code ``coder`` (:class:`Coder`) into
    ``out`` (long enough: :func:`max_chunk_bytes`) and its group offsets into ``row``;
    returns the stream's length in bytes."""
    block_bytes, group = layout
    lengths, codes, header, header_bits = coder
    pos = 0
    acc = np.uint64(0)
    nacc = 0
    full = header_bits // 8
    for i in range(full):
        out[i] = header[i]
    pos = full
    rest = header_bits - 8 * full
    if rest:
        acc = np.uint64(header[full]) & np.uint64((1 << rest) - 1)
        nacc = rest
    last = header_bits
    row[0] = header_bits
    g = 0
    for g0 in range(lo, lo + block_bytes, group):
        here = pos * 8 + nacc
        if g > 0:
            row[g] = here - last
        last = here
        g += 1
        end = min(g0 + group, lo + block_bytes)
        s = raw[g0]
        pos, acc, nacc = _put(out, pos, acc, nacc, codes[s], lengths[s])
        i = g0 + 1
        while i < end:
            r = _run_at(raw, i, end)
            if r >= 3:
                n = min(r, 258)
                s = _length_code(n)
                pos, acc, nacc = _put(out, pos, acc, nacc, codes[s], lengths[s])
                e = _LEN_EXTRA_J[s - 257]
                if e:
                    pos, acc, nacc = _put(out, pos, acc, nacc, n - _LEN_BASE_J[s - 257], e)
                pos, acc, nacc = _put(out, pos, acc, nacc, 0, 1)  # distance code 0: distance 1
                i += n
            else:
                s = raw[i]
                pos, acc, nacc = _put(out, pos, acc, nacc, codes[s], lengths[s])
                i += 1
    pos, acc, nacc = _put(out, pos, acc, nacc, codes[_EOB], lengths[_EOB])
    pos = _flush(out, pos, acc, nacc)
    a = _adler32(raw, lo, lo + block_bytes)
    for k in range(4):
        out[pos] = np.uint8((a >> np.uint32(24 - 8 * k)) & np.uint32(0xFF))
        pos += 1
    return pos


def max_chunk_bytes(block_bytes: int, header_bits: int) -> int:
    """An upper bound of a block's stream length (every byte a 12-bit literal)."""
    return (header_bits + block_bytes * MAX_BITS + 64) // 8 + 16


@njit(cache=True, parallel=True)
def encode_blocks(raw, first, count, layout, coder, out, sizes, rows):
    """Blocks ``first`` to ``first + count`` of ``raw`` (``layout`` and ``coder`` as
    :func:`encode_block` takes them) into ``out`` (one row of :func:`max_chunk_bytes`
    each), their lengths into ``sizes`` and their rows into ``rows``."""
    block_bytes = layout[0]
    for j in prange(count):
        lo = (first + j) * block_bytes
        sizes[j] = encode_block(raw, lo, layout, coder, out[j], rows[j])


# ---------------------------------------------------------------- reading


def is_code(lengths: np.ndarray) -> bool:
    """True if ``lengths`` are those of a complete prefix code with the end-of-block symbol
    (what :func:`part_code` writes; a decoding table of anything else would have holes)."""
    used = lengths[lengths > 0]
    if lengths.shape[0] != LITLEN or lengths[_EOB] == 0 or used.size < 2:
        return False
    return sum(2.0 ** -int(n) for n in used) == 1.0


def decode_table(lengths: np.ndarray) -> np.ndarray:
    """The decoding table of a literal/length code, :data:`TABLE_SIZE` entries. Entry
    ``bits`` (the next :data:`MAX_BITS` bits of the stream, first bit lowest) is
    ``symbol << 4 | length``; entry ``WINDOW + bits`` is ``last << 12 | count << 4 |
    length``: the ``count`` literals (0 if the first symbol is not one) whose codes lie
    whole within those bits, the last of them, and their length in bits together (a
    reader skips them with one look-up)."""
    codes = _canonical(lengths)
    table = np.zeros(TABLE_SIZE, dtype=np.int32)
    for s in np.flatnonzero(lengths):
        n = int(lengths[s])
        step = 1 << n
        table[int(codes[s]) : WINDOW : step] = (int(s) << 4) | n
    _literal_runs(table)
    return table


@njit(cache=True)
def _literal_runs(table):
    """Fill the second half of a decoding table (:func:`decode_table`) from its first."""
    for w in range(WINDOW):
        used = 0
        count = 0
        last = 0
        while True:
            t = table[w >> used]
            n = t & 15
            if n == 0 or (t >> 4) > 255 or used + n > MAX_BITS:
                break
            used += n
            count += 1
            last = t >> 4
        table[WINDOW + w] = (last << 12) | (count << 4) | used


@intrinsic
def _load64(typingctx, chunk, at):
    """The 8 bytes of ``chunk`` (a contiguous ``uint8`` array) from byte ``at`` as one
    little-endian ``uint64``, loaded unaligned (the caller sees that ``at + 8`` is within
    the array)."""

    def codegen(context, builder, sig, args):
        arr = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(arr.data, [args[1]]), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)

    return types.uint64(chunk, types.intp), codegen


@njit(cache=True, inline="always")
def _fill(chunk, byte, acc, nacc):
    """Bytes of ``chunk`` from ``byte`` into the bit accumulator ``acc`` (``nacc`` bits in
    it, fewer than 64) until it holds more than 56 bits or the chunk ends (later bits read
    as zeros). Away from the chunk's end the next 8 bytes are loaded at once and as many
    of them counted in as fit whole (the accumulator may then hold the first bits of the
    next byte as well: loading it again writes the same bits)."""
    n = chunk.shape[0]
    if byte + 8 <= n:
        acc |= _load64(chunk, byte) << np.uint64(nacc)
        return byte + ((63 - nacc) >> 3), acc, nacc | 56
    while nacc <= 56 and byte < n:
        acc |= np.uint64(chunk[byte]) << np.uint64(nacc)
        byte += 1
        nacc += 8
    return byte, acc, nacc


@njit(cache=True, inline="always")
def _reader(chunk, bitpos):
    """A bit reader (next byte, accumulator, bits in it: at least 49 unless the chunk ends
    sooner) at bit ``bitpos`` of ``chunk``."""
    byte, acc, nacc = _fill(chunk, bitpos >> 3, np.uint64(0), 0)
    skip = bitpos & 7
    return byte, acc >> np.uint64(skip), nacc - skip


@njit(cache=True, inline="always")
def _extra(s, acc):
    """(bytes repeated, bits of the token after its symbol) of length symbol ``s`` whose
    extra bits (then the one-bit distance code) begin the accumulator ``acc``."""
    e = _LEN_EXTRA_J[s - 257]
    length = _LEN_BASE_J[s - 257]
    if e:
        length += np.int64(acc & np.uint64((1 << e) - 1))
    return length, e + 1  # the one-bit distance code (distance 1)


@njit(cache=True)
def group_byte(chunk, row, table, at, shift):
    """Byte ``at`` of the block whose stream is ``chunk`` and row ``row`` (groups of ``1 <<
    shift`` bytes); -1 if the stream does not decode there (a damaged chunk or row)."""
    g = at >> shift
    return byte_in_group(chunk, group_start(row, g), table, at - (g << shift))


@njit(cache=True, inline="always")
def group_start(row, g):
    """The bit of its chunk where group ``g`` begins, from the block's row."""
    bitpos = np.int64(row[0])
    for k in range(1, g + 1):
        bitpos += row[k]
    return bitpos


@njit(cache=True)
def byte_in_group(chunk, bitpos, table, want):
    """Byte ``want`` of the group whose tokens begin at bit ``bitpos`` of ``chunk``; -1 if
    the stream does not decode there."""
    have = 0
    prev = -1
    limit = chunk.shape[0] * 8
    byte, acc, nacc = _reader(chunk, bitpos)
    while bitpos < limit:
        w = np.int64(acc & _MASK)
        m = table[WINDOW + w]
        count = (m >> 4) & 15
        n = m & 15
        if count and have + count <= want and bitpos + n <= limit:  # literals before it
            have += count
            prev = m >> 12
        else:
            t = table[w]
            n = t & 15
            if n == 0:
                return -1
            s = t >> 4
            if s < 256:
                if have == want:
                    return s
                prev = s
                have += 1
            elif s == 256 or prev < 0:
                return -1
            else:
                length, more = _extra(s, acc >> np.uint64(n))
                n += more
                if want < have + length:
                    return prev
                have += length
        bitpos += n
        acc >>= np.uint64(n)
        byte, acc, nacc = _fill(chunk, byte, acc, nacc - n)  # a token is at most 18 bits
    return -1


@njit(cache=True)
def decode_groups(chunk, row, table, block_bytes, group, out):
    """Every group (of ``group`` bytes) of a block decoded from where ``row`` says it
    begins (as a probe reads them) into ``out``; False if a group does not decode to
    exactly its bytes."""
    bitpos = np.int64(row[0])
    limit = chunk.shape[0] * 8
    ngroups = (block_bytes + group - 1) // group
    for g in range(ngroups):
        if g > 0:
            bitpos += row[g]
        pos = bitpos
        have = g * group
        end = min(have + group, block_bytes)
        byte, acc, nacc = _reader(chunk, pos)
        while have < end:
            if pos >= limit:
                return False
            t = table[np.int64(acc & _MASK)]
            n = t & 15
            if n == 0:
                return False
            s = t >> 4
            if s < 256:
                out[have] = s
                have += 1
            elif s == 256 or have == g * group:
                return False
            else:
                length, more = _extra(s, acc >> np.uint64(n))
                n += more
                if have + length > end:
                    return False
                for _ in range(length):
                    out[have] = out[have - 1]
                    have += 1
            pos += n
            acc >>= np.uint64(n)
            byte, acc, nacc = _fill(chunk, byte, acc, nacc - n)
    return True
