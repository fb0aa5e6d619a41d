"""Research oracle (numpy) for the JPEG decode pipeline described in jpeg-exactness.md.

Independent re-implementation written for checking the notes: IDCTs (islow, 4x4, 2x2, 1x1),
upsamplers, YCbCr->RGB, and progressive block smoothing. Coefficients were obtained with the PyPI
package `jpeglib` (jpeglib.read_dct; its samp_factor rows are [v, h]), and results compared to Pillow 13.0.0.
Not project code; scratch reference only.
"""
import numpy as np

F = dict(
    F0298=2446, F0390=3196, F0541=4433, F0765=6270, F0899=7373, F1175=9633,
    F1501=12299, F1847=15137, F1961=16069, F2053=16819, F2562=20995, F3072=25172)
CB, P1 = 13, 2


def descale(x, n):
    return (x + (1 << (n - 1))) >> n


def rl_idct(x):
    # post-IDCT range limit: sign-extend low 10 bits, add 128, clamp
    s = x & 1023
    s = np.where(s >= 512, s - 1024, s)
    return np.clip(s + 128, 0, 255)


def idct1d(v0, v1, v2, v3, v4, v5, v6, v7):
    z2, z3 = v2, v6
    z1 = (z2 + z3) * F['F0541']
    tmp2 = z1 + z3 * (-F['F1847'])
    tmp3 = z1 + z2 * F['F0765']
    tmp0 = (v0 + v4) << CB
    tmp1 = (v0 - v4) << CB
    t10, t13, t11, t12 = tmp0 + tmp3, tmp0 - tmp3, tmp1 + tmp2, tmp1 - tmp2
    tmp0, tmp1, tmp2, tmp3 = v7, v5, v3, v1
    z1 = tmp0 + tmp3; z2 = tmp1 + tmp2; z3 = tmp0 + tmp2; z4 = tmp1 + tmp3
    z5 = (z3 + z4) * F['F1175']
    tmp0 = tmp0 * F['F0298']; tmp1 = tmp1 * F['F2053']
    tmp2 = tmp2 * F['F3072']; tmp3 = tmp3 * F['F1501']
    z1 = z1 * -F['F0899']; z2 = z2 * -F['F2562']
    z3 = z3 * -F['F1961'] + z5; z4 = z4 * -F['F0390'] + z5
    tmp0 += z1 + z3; tmp1 += z2 + z4; tmp2 += z2 + z3; tmp3 += z1 + z4
    return [t10 + tmp3, t11 + tmp2, t12 + tmp1, t13 + tmp0,
            t13 - tmp0, t12 - tmp1, t11 - tmp2, t10 - tmp3]


def idct_islow(coef, q):
    """coef: (..., 8, 8) int natural order [row][col]; q: (8,8)."""
    d = coef.astype(np.int64) * q.astype(np.int64)
    # pass 1: columns (index over rows)
    outs = idct1d(*[d[..., r, :] for r in range(8)])
    ws = np.stack([descale(o, CB - P1) for o in outs], axis=-2)  # (...,8 rows,8 cols)
    ws = ws.astype(np.int32).astype(np.int64)
    outs = idct1d(*[ws[..., :, c] for c in range(8)])
    res = np.stack([rl_idct(descale(o, CB + P1 + 3)) for o in outs], axis=-1)
    return res.astype(np.uint8)


def idct_4x4(coef, q):
    d = coef.astype(np.int64) * q.astype(np.int64)
    def p(v0, v1, v2, v3, v5, v6, v7, shift):
        tmp0 = v0 << (CB + 1)
        tmp2 = v2 * 15137 + v6 * -6270
        t10, t12 = tmp0 + tmp2, tmp0 - tmp2
        z1, z2, z3, z4 = v7, v5, v3, v1
        tmp0 = z1 * -1730 + z2 * 11893 + z3 * -17799 + z4 * 8697
        tmp2 = z1 * -4176 + z2 * -4926 + z3 * 7373 + z4 * 20995
        return [descale(t10 + tmp2, shift), descale(t12 + tmp0, shift),
                descale(t12 - tmp0, shift), descale(t10 - tmp2, shift)]
    r = lambda i: d[..., i, :]
    ws = np.stack(p(r(0), r(1), r(2), r(3), r(5), r(6), r(7), CB - P1 + 1), axis=-2)
    c = lambda i: ws[..., :, i]
    out = p(c(0), c(1), c(2), c(3), c(5), c(6), c(7), CB + P1 + 3 + 1)
    return np.stack([rl_idct(o) for o in out], axis=-1).astype(np.uint8)


def idct_2x2(coef, q):
    d = coef.astype(np.int64) * q.astype(np.int64)
    def p(v0, v1, v3, v5, v7, shift):
        t10 = v0 << (CB + 2)
        t0 = v7 * -5906 + v5 * 6967 + v3 * -10426 + v1 * 29692
        return [descale(t10 + t0, shift), descale(t10 - t0, shift)]
    r = lambda i: d[..., i, :]
    ws = np.stack(p(r(0), r(1), r(3), r(5), r(7), CB - P1 + 2), axis=-2)
    c = lambda i: ws[..., :, i]
    out = p(c(0), c(1), c(3), c(5), c(7), CB + P1 + 3 + 2)
    return np.stack([rl_idct(o) for o in out], axis=-1).astype(np.uint8)


def idct_1x1(coef, q):
    d = coef[..., 0, 0].astype(np.int64) * int(q[0, 0])
    return rl_idct(descale(d, 3)).astype(np.uint8)[..., None, None]


def assemble(blocks):
    # (by, bx, n, n) -> (by*n, bx*n)
    by, bx, n, m = blocks.shape
    return blocks.transpose(0, 2, 1, 3).reshape(by * n, bx * m)


def h2v1_fancy(p, w):
    # p: (rows, >=w) plane, w downsampled width
    x = p[:, :w].astype(np.int32)
    left = np.concatenate([x[:, :1], x[:, :-1]], axis=1)
    right = np.concatenate([x[:, 1:], x[:, -1:]], axis=1)
    out = np.empty((x.shape[0], 2 * w), np.int32)
    out[:, 0::2] = (3 * x + left + 1) >> 2
    out[:, 1::2] = (3 * x + right + 2) >> 2
    return out


def h1v2_fancy(p, h):
    x = p[:h].astype(np.int32)
    up = np.concatenate([x[:1], x[:-1]], axis=0)
    dn = np.concatenate([x[1:], x[-1:]], axis=0)
    out = np.empty((2 * h, x.shape[1]), np.int32)
    out[0::2] = (3 * x + up + 1) >> 2
    out[1::2] = (3 * x + dn + 2) >> 2
    return out


def h2v2_fancy(p, w, h):
    x = p[:h, :w].astype(np.int32)
    up = np.concatenate([x[:1], x[:-1]], axis=0)
    dn = np.concatenate([x[1:], x[-1:]], axis=0)
    out = np.empty((2 * h, 2 * w), np.int32)
    for v, nb in ((0, up), (1, dn)):
        cs = 3 * x + nb
        l = np.concatenate([cs[:, :1], cs[:, :-1]], axis=1)
        r = np.concatenate([cs[:, 1:], cs[:, -1:]], axis=1)
        o = out[v::2]
        o[:, 0::2] = (3 * cs + l + 8) >> 4
        o[:, 1::2] = (3 * cs + r + 7) >> 4
    return out


def ycc_tables():
    x = np.arange(256) - 128
    half = 1 << 15
    cr_r = (91881 * x + half) >> 16      # FIX(1.40200)=91881
    cb_b = (116130 * x + half) >> 16     # FIX(1.77200)=116130
    cr_g = -46802 * x                    # FIX(0.71414)=46802
    cb_g = -22554 * x + half             # FIX(0.34414)=22554
    return cr_r, cb_b, cr_g, cb_g


def ycc_rgb(y, cb, cr):
    cr_r, cb_b, cr_g, cb_g = ycc_tables()
    y = y.astype(np.int64)
    r = np.clip(y + cr_r[cr], 0, 255)
    g = np.clip(y + ((cb_g[cb] + cr_g[cr]) >> 16), 0, 255)
    b = np.clip(y + cb_b[cb], 0, 255)
    return np.stack([r, g, b], -1).astype(np.uint8)

# ---- progressive block smoothing (jdcoefct.c decompress_smooth_data) ----
ZZ = [1, 8, 16, 9, 2, 3, 10, 17, 24]  # natural positions of zigzag 1..9
def scans(data):
    out=[]; i=2
    while i < len(data)-1:
        if data[i]!=0xFF: i+=1; continue
        m=data[i+1]
        if m in (0xD8,0x01) or 0xD0<=m<=0xD7 or m==0xFF or m==0: i+=2 if m!=0xFF else 1; continue
        if m==0xD9: break
        L=(data[i+2]<<8)|data[i+3]
        if m==0xDA:
            n=data[i+4]; cids=[data[i+5+2*j] for j in range(n)]
            p=i+5+2*n; Ss,Se,AhAl=data[p],data[p+1],data[p+2]
            out.append(dict(off=i, cids=cids, Ss=Ss, Se=Se, Ah=AhAl>>4, Al=AhAl&15))
            # skip entropy data
            j=i+2+L
            while j < len(data)-1 and not (data[j]==0xFF and data[j+1] not in (0,) and not (0xD0<=data[j+1]<=0xD7)): j+=1
            i=j; continue
        i+=2+L
    return out
def coef_state(scanlist, cid_index, ncomp):
    cb = np.full((ncomp,64), -1); prev = np.zeros((ncomp,64), int)
    for sn, s in enumerate(scanlist, 1):
        for cid in s['cids']:
            c = cid_index[cid]
            for k in range(min(s['Ss'],1), max(s['Se'],9)+1):
                prev[c][k] = cb[c][k] if sn > 1 else 0
            for k in range(s['Ss'], s['Se']+1): cb[c][k] = s['Al']
    return cb, prev
def pred(num, Q, Al):
    if num >= 0:
        p = ((Q << 7) + num) // (Q << 8)
        if Al > 0 and p >= (1 << Al): p = (1 << Al) - 1
    else:
        p = ((Q << 7) - num) // (Q << 8)
        if Al > 0 and p >= (1 << Al): p = (1 << Al) - 1
        p = -p
    return p
def smooth_component(coef, q, bits):
    """coef (BH,BW,8,8) natural; q (8,8); bits: coef_bits latch list len 10.
    Returns modified copy. Assumes no dummy rows needed (height multiple of iMCU)."""
    BH, BW = coef.shape[:2]
    out = coef.astype(np.int64).copy()
    dc = coef[:, :, 0, 0].astype(np.int64)
    change_dc = all(bits[k] == -1 for k in range(1, 10))
    qf = q.flatten().astype(np.int64)
    Q00 = qf[0]
    for by in range(BH):
        rows = [max(0, min(BH-1, by+d)) for d in (-2,-1,0,1,2)]
        for bx in range(BW):
            cols = [max(0, min(BW-1, bx+d)) for d in (-2,-1,0,1,2)]
            D = {}
            for ri, r in enumerate(rows):
                for ci, c in enumerate(cols):
                    D[ri*5+ci+1] = int(dc[r, c])
            w = out[by, bx].reshape(64)
            def ap(k, pos, numexpr_dc, numexpr):
                Al = bits[k]
                if Al != 0 and w[pos] == 0:
                    num = Q00 * (numexpr_dc if change_dc else numexpr)
                    w[pos] = pred(num, int(qf[pos]), Al)
            d=D
            ap(1, 1, (-d[1]-d[2]+d[4]+d[5]-3*d[6]+13*d[7]-13*d[9]+3*d[10]-3*d[11]+38*d[12]-38*d[14]+3*d[15]-3*d[16]+13*d[17]-13*d[19]+3*d[20]-d[21]-d[22]+d[24]+d[25]),
                     (-7*d[11]+50*d[12]-50*d[14]+7*d[15]))
            ap(2, 8, (-d[1]-3*d[2]-3*d[3]-3*d[4]-d[5]-d[6]+13*d[7]+38*d[8]+13*d[9]-d[10]+d[16]-13*d[17]-38*d[18]-13*d[19]+d[20]+d[21]+3*d[22]+3*d[23]+3*d[24]+d[25]),
                     (-7*d[3]+50*d[8]-50*d[18]+7*d[23]))
            ap(3, 16, (d[3]+2*d[7]+7*d[8]+2*d[9]-5*d[12]-14*d[13]-5*d[14]+2*d[17]+7*d[18]+2*d[19]+d[23]),
                      (-d[3]+13*d[8]-24*d[13]+13*d[18]-d[23]))
            ap(4, 9, (-d[1]+d[5]+9*d[7]-9*d[9]-9*d[17]+9*d[19]+d[21]-d[25]),
                     (d[10]+d[16]-10*d[17]+10*d[19]-d[2]-d[20]+d[22]-d[24]+d[4]-d[6]+10*d[7]-10*d[9]))
            ap(5, 2, (2*d[7]-5*d[8]+2*d[9]+d[11]+7*d[12]-14*d[13]+7*d[14]+d[15]+2*d[17]-5*d[18]+2*d[19]),
                     (-d[11]+13*d[12]-24*d[13]+13*d[14]-d[15]))
            if change_dc:
                ap(6, 3, d[7]-d[9]+2*d[12]-2*d[14]+d[17]-d[19], 0)
                ap(7, 10, d[7]-3*d[8]+d[9]-d[17]+3*d[18]-d[19], 0)
                ap(8, 17, d[7]-d[9]-3*d[12]+3*d[14]+d[17]-d[19], 0)
                ap(9, 24, d[7]+2*d[8]+d[9]-d[17]-2*d[18]-d[19], 0)
                num = Q00*(-2*d[1]-6*d[2]-8*d[3]-6*d[4]-2*d[5]-6*d[6]+6*d[7]+42*d[8]+6*d[9]-6*d[10]-8*d[11]+42*d[12]+152*d[13]+42*d[14]-8*d[15]-6*d[16]+6*d[17]+42*d[18]+6*d[19]-6*d[20]-2*d[21]-6*d[22]-8*d[23]-6*d[24]-2*d[25])
                w[0] = pred(num, int(Q00), 0)
            out[by, bx] = w.reshape(8, 8)
    return out
