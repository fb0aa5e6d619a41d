"""Lane-exact numpy model of libjpeg-turbo 3.2.0's x86-64 SIMD IDCTs as Pillow 13.0.0 runs them
on an AVX2 machine:

  * 8x8 islow  -> simd/x86_64/jidctint-avx2.asm  jsimd_idct_islow_avx2
  * 4x4        -> simd/x86_64/jidctred-sse2.asm  jsimd_idct_4x4_sse2   (draft 1/2, 1/4 chroma)
  * 2x2        -> simd/x86_64/jidctred-sse2.asm  jsimd_idct_2x2_sse2   (draft 1/4, 1/8 chroma)
  * 1x1        -> src/jidctred.c _jpeg_idct_1x1 (no SIMD; C range-limit wrap)

Research scratch, written for /work/notes/jpeg-spec-2.md.  Arrays hold exact integers in int64;
every place where the asm wraps or saturates is made explicit with w16/w32/sat16/sat8.

Run as a script to repeat the checks against Pillow (needs /tmp/jpeg-research-venv):
    /tmp/jpeg-research-venv/bin/python /work/notes/jpeg_avx2_model.py
"""
import numpy as np


# ---------------------------------------------------------------- lane helpers
def w16(x):            # keep the low 16 bits, signed (vpaddw / vpmullw / vpsllw result)
    return ((np.asarray(x, np.int64) + 0x8000) & 0xFFFF) - 0x8000


def w32(x):            # keep the low 32 bits, signed (vpaddd / vpsubd / vpslld result)
    return ((np.asarray(x, np.int64) + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def sat16(x):          # vpackssdw
    return np.clip(x, -32768, 32767)


def out8(x):           # vpacksswb (signed saturation to int8) then vpaddb +128
    return (np.clip(x, -128, 127) + 128).astype(np.uint8)


def descale32(x, n):   # vpaddd (1<<(n-1)) then vpsrad n
    return w32(x + (1 << (n - 1))) >> n


# ---------------------------------------------------------------- 8x8 AVX2 islow
def _avx2_1d(v):
    """One DODCT pass on 8 vectors v[0..7] of int16 lanes.  Returns 8 int32 sums (before descale)."""
    v0, v1, v2, v3, v4, v5, v6, v7 = v
    # even part: in2/in6 paired in vpmaddwd with (F0541+F0765, F0541) and (F0541-F1847, F0541)
    tmp3 = v2 * 10703 + v6 * 4433
    tmp2 = v6 * -10704 + v2 * 4433
    # in0 +/- in4 are 16-bit adds (vpsignw + vpaddw), then placed in the high word and
    # arithmetic-shifted right by 3  ==  (int16 sum) << 13
    tmp0 = w16(v0 + v4) << 13
    tmp1 = w16(v0 - v4) << 13
    t10, t13 = tmp0 + tmp3, tmp0 - tmp3
    t11, t12 = tmp1 + tmp2, tmp1 - tmp2
    # odd part: z3 = in7+in3, z4 = in5+in1 are 16-bit adds
    z3 = w16(v7 + v3)
    z4 = w16(v5 + v1)
    z3p = z3 * -6436 + z4 * 9633        # (F1175-F1961, F1175)
    z4p = z4 * 6437 + z3 * 9633         # (F1175-F0390, F1175)
    o0 = v7 * -4927 + v1 * -7373 + z3p  # (F0298-F0899, -F0899)
    o1 = v5 * -4176 + v3 * -20995 + z4p  # (F2053-F2562, -F2562)
    o3 = v7 * -7373 + v1 * 4926 + z4p   # (-F0899, F1501-F0899)
    o2 = v5 * -20995 + v3 * 4177 + z3p  # (-F2562, F3072-F2562)
    return [t10 + o3, t11 + o2, t12 + o1, t13 + o0, t13 - o0, t12 - o1, t11 - o2, t10 - o3]


def idct_islow_avx2(coef, q):
    """coef: (..., 8, 8) int16 coefficients, natural order [row][col]; q: (8, 8) quant table.
    Returns (..., 8, 8) uint8 samples exactly as jsimd_idct_islow_avx2 writes them."""
    coef = np.asarray(coef, np.int64)
    dq = w16(coef * np.asarray(q, np.int64))                     # vpmullw
    # whole-block shortcut: coefficient rows 1..7 (all 56 entries) zero; row 0 may be anything
    short = np.all(coef[..., 1:, :] == 0, axis=(-2, -1))
    outs = _avx2_1d([dq[..., r, :] for r in range(8)])            # pass 1, lanes = columns
    ws = np.stack([sat16(descale32(o, 11)) for o in outs], axis=-2)
    ws_short = np.broadcast_to(w16(dq[..., 0:1, :] << 2), ws.shape)  # vpsllw by 2, 16-bit
    ws = np.where(short[..., None, None], ws_short, ws)
    outs = _avx2_1d([ws[..., :, c] for c in range(8)])            # pass 2, lanes = rows
    return np.stack([out8(sat16(descale32(o, 18))) for o in outs], axis=-1)


# ---------------------------------------------------------------- 4x4 SSE2
def _red4_1d(v0, v1, v2, v3, v5, v6, v7):
    tmp0 = v0 << 14                                     # word -> high half, psrad 2
    tmp2e = v2 * 15137 + v6 * -6270                     # (F1847, -F0765)
    t10, t12 = tmp0 + tmp2e, tmp0 - tmp2e
    B = (v1 * 20995 + v3 * 7373) + (v5 * -4926 + v7 * -4176)     # (F2562,F0899),(-F0601,-F0509)
    A = (v1 * 8697 + v3 * -17799) + (v5 * 11893 + v7 * -1730)    # (F1061,-F2172),(F1451,-F0211)
    return [t10 + B, t12 + A, t12 - A, t10 - B]


def idct_4x4_sse2(coef, q):
    coef = np.asarray(coef, np.int64)
    dq = w16(coef * np.asarray(q, np.int64))
    short = np.all(coef[..., [1, 2, 3, 5, 6, 7], :] == 0, axis=(-2, -1))   # row 4 not tested
    r = lambda i: dq[..., i, :]
    ws = np.stack([sat16(descale32(o, 12)) for o in _red4_1d(r(0), r(1), r(2), r(3), r(5), r(6), r(7))],
                  axis=-2)                                                  # (..., 4 rows, 8 cols)
    ws_short = np.broadcast_to(w16(dq[..., 0:1, :] << 2), ws.shape)
    ws = np.where(short[..., None, None], ws_short, ws)
    c = lambda i: ws[..., :, i]
    outs = _red4_1d(c(0), c(1), c(2), c(3), c(5), c(6), c(7))
    return np.stack([out8(sat16(descale32(o, 19))) for o in outs], axis=-1)


# ---------------------------------------------------------------- 2x2 SSE2
def _red2_odd(v1, v3, v5, v7):
    return (v1 * 29692 + v3 * -10426) + (v5 * 6967 + v7 * -5906)   # (F3624,-F1272),(F0850,-F0720)


def idct_2x2_sse2(coef, q):
    coef = np.asarray(coef, np.int64)
    dq = w16(coef * np.asarray(q, np.int64))            # no zero shortcut in the 2x2 asm
    r = lambda i: dq[..., i, :]
    t10 = r(0) << 15
    t0 = _red2_odd(r(1), r(3), r(5), r(7))
    A = descale32(t10 + t0, 13)                          # ws row 0, int32, all 8 columns
    B = descale32(t10 - t0, 13)                          # ws row 1
    ws = np.stack([A, B], axis=-2)                       # (..., 2, 8)
    # pass 2: column 0 stays 32-bit (pslld 15, wraps); columns 1,3,5,7 go through packssdw
    e = w32(ws[..., :, 0] << 15)
    s = sat16(ws)
    o = _red2_odd(s[..., :, 1], s[..., :, 3], s[..., :, 5], s[..., :, 7])
    c0 = out8(sat16(descale32(e + o, 20)))
    c1 = out8(sat16(descale32(e - o, 20)))
    return np.stack([c0, c1], axis=-1)


# ---------------------------------------------------------------- 1x1 (C code)
def _rl(x):
    s = np.asarray(x, np.int64) & 1023
    s = np.where(s >= 512, s - 1024, s)
    return np.clip(s + 128, 0, 255)


def idct_1x1_c(coef, q):
    d = np.asarray(coef, np.int64)[..., 0, 0] * int(q[0][0])
    return _rl((d + 4) >> 3).astype(np.uint8)[..., None, None]


# ---------------------------------------------------------------- checks against Pillow
if __name__ == '__main__':
    import glob, os, sys
    import jpeglib
    from PIL import Image
    sys.path.insert(0, '/work/main/docs/design')
    import jpeg_exactness_model as C        # the C-path model of the first note

    OUT = '/tmp/jpeg-avx2'
    os.makedirs(OUT, exist_ok=True)

    def assemble(blocks):
        by, bx, n, m = blocks.shape
        return blocks.transpose(0, 2, 1, 3).reshape(by * n, bx * m)

    def decode_gray(path, scale, simd=True):
        d = jpeglib.read_dct(path)
        q = d.qt[d.quant_tbl_no[0]].astype(np.int64)
        Y = d.Y.astype(np.int64)
        if simd:
            f = {1: idct_islow_avx2, 2: idct_4x4_sse2, 4: idct_2x2_sse2, 8: idct_1x1_c}[scale]
        else:
            f = {1: C.idct_islow, 2: C.idct_4x4, 4: C.idct_2x2, 8: C.idct_1x1}[scale]
        return assemble(f(Y, q))

    def pillow(path, scale):
        im = Image.open(path)
        if scale > 1:
            im.draft(im.mode, (im.size[0] // scale, im.size[1] // scale))
        return np.asarray(im.convert('L') if im.mode == 'L' else im)

    def check(path, label):
        res = []
        for s in (1, 2, 4, 8):
            p = pillow(path, s)
            H, W = p.shape[:2]
            a = decode_gray(path, s, True)[:H, :W]
            c = decode_gray(path, s, False)[:H, :W]
            res.append('1/%d avx2=%s(%d) c=%s(%d)' % (s, np.array_equal(a, p), int((a != p).sum()),
                                                      np.array_equal(c, p), int((c != p).sum())))
        print(label, '|', '; '.join(res))

    rng = np.random.default_rng(1234)
    base = '/work/main/tests/fixtures/sample_gray.jpg'

    check('/tmp/jpegcmp/path.jpg', 'path.jpg')

    def craft(name, fn, qfn=None):
        d = jpeglib.read_dct(base)
        Y = d.Y.copy()
        qt = d.qt.copy()
        if qfn is not None:
            qt = qfn(qt)
        d.qt = qt
        d.Y = fn(Y)
        p = os.path.join(OUT, name)
        d.write_dct(p)
        return p

    def rand_all(lo, hi):
        return lambda Y: rng.integers(lo, hi, Y.shape, endpoint=True).astype(Y.dtype)

    def dc_only(lo, hi):
        def f(Y):
            Y = np.zeros_like(Y)
            Y[:, :, 0, 0] = rng.integers(lo, hi, Y.shape[:2], endpoint=True)
            return Y
        return f

    def row0_only(lo, hi):
        def f(Y):
            Y = np.zeros_like(Y)
            Y[:, :, 0, :] = rng.integers(lo, hi, Y.shape[:2] + (8,), endpoint=True)
            return Y
        return f

    def sparse(lo, hi, p):
        def f(Y):
            m = rng.random(Y.shape) < p
            v = rng.integers(lo, hi, Y.shape, endpoint=True)
            return np.where(m, v, 0).astype(Y.dtype)
        return f

    def qconst(v):
        return lambda qt: np.full_like(qt, v)

    def qrand(lo, hi):
        return lambda qt: rng.integers(lo, hi, qt.shape, endpoint=True).astype(qt.dtype)

    # jpeglib's encoder limits |AC| <= 1023 and |DC diff| <= 2047; the full pathological suite (any int16, 16-bit DQT)
    # uses the small writer in /work/notes/jpeg-spec-2-tests/ (jpeg_avx2_test.py).
    cases = [
        ('qrand_sparse.jpg', sparse(-1023, 1023, 0.15), qrand(1, 255)),
        ('q16bit_sparse.jpg', sparse(-200, 200, 0.1), qrand(256, 32767)),
        ('q255_row0_small.jpg', row0_only(-40, 40), qconst(255)),
        ('q1_moderate.jpg', rand_all(-300, 300), qconst(1)),
    ]
    for name, fn, qfn in cases:
        check(craft(name, fn, qfn), name)

    for f in sorted(glob.glob('/work/main/tests/fixtures/*.jpg')):
        im = Image.open(f)
        if im.mode != 'L':
            continue
        check(f, os.path.basename(f))
