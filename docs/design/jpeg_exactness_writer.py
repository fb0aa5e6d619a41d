"""Minimal sequential Huffman JPEG writer for arbitrary int16 coefficients (research scratch)."""
import numpy as np

ZIGZAG = np.array([0,1,8,16,9,2,3,10,17,24,32,25,18,11,4,5,12,19,26,33,40,48,41,34,27,20,13,6,7,14,21,
                   28,35,42,49,56,57,50,43,36,29,22,15,23,30,37,44,51,58,59,52,45,38,31,39,46,53,60,61,54,47,55,62,63])

class Bits:
    def __init__(s): s.out = bytearray(); s.acc = 0; s.n = 0
    def put(s, v, n):
        for i in range(n - 1, -1, -1):
            s.acc = (s.acc << 1) | ((v >> i) & 1); s.n += 1
            if s.n == 8:
                s.out.append(s.acc)
                if s.acc == 0xFF: s.out.append(0)
                s.acc = 0; s.n = 0
    def flush(s):
        if s.n: s.put((1 << (8 - s.n)) - 1, 8 - s.n)

def cat(v):
    v = abs(int(v)); n = 0
    while v: n += 1; v >>= 1
    return n

def bitsof(v, s):
    v = int(v)
    return v if v >= 0 else v + (1 << s) - 1

def make_table(symbols):
    syms = sorted(set(symbols))
    L = 1
    while (1 << L) < len(syms) + 1: L += 1
    codes = {sym: (i, L) for i, sym in enumerate(syms)}
    counts = [0] * 16; counts[L - 1] = len(syms)
    return codes, bytes(counts) + bytes(syms)

def encode(comps, W, H, qts, path, restart=0):
    """comps: list of (id, h, v, qtno, blocks[BH,BW,8,8] natural order int). Block grids must cover the MCU grid."""
    hmax = max(c[1] for c in comps); vmax = max(c[2] for c in comps)
    mcux = -(-W // (8 * hmax)); mcuy = -(-H // (8 * vmax))
    if len(comps) == 1:
        c = comps[0]; order = [(0, by, bx) for by in range(-(-H // 8)) for bx in range(-(-W // 8))]
        mcus = [[o] for o in order]
    else:
        mcus = []
        for my in range(mcuy):
            for mx in range(mcux):
                m = []
                for ci, c in enumerate(comps):
                    for yy in range(c[2]):
                        for xx in range(c[1]):
                            m.append((ci, my * c[2] + yy, mx * c[1] + xx))
                mcus.append(m)
    # first pass: symbols
    def walk(emit):
        pred = [0] * len(comps)
        for mi, m in enumerate(mcus):
            if restart and mi and mi % restart == 0:
                pred = [0] * len(comps); emit('RST', mi // restart - 1)
            for ci, by, bx in m:
                zz = np.asarray(comps[ci][4][by, bx], np.int64).reshape(64)[ZIGZAG]
                dc = int(zz[0]); diff = ((dc - pred[ci] + 32768) & 0xFFFF) - 32768
                if diff == -32768:        # category 16 is not decodable: nudge this DC (in place)
                    dc = dc + 1 if dc < 32767 else dc - 1
                    comps[ci][4][by, bx, 0, 0] = dc
                    diff = ((dc - pred[ci] + 32768) & 0xFFFF) - 32768
                pred[ci] = dc
                s = cat(diff); emit('DC', ci, s, bitsof(diff, s) if s else 0)
                run = 0
                last = max([k for k in range(1, 64) if zz[k] != 0], default=0)
                for k in range(1, last + 1):
                    if zz[k] == 0: run += 1; continue
                    while run > 15: emit('AC', ci, 0xF0, 0, 0); run -= 16
                    s = cat(zz[k]); emit('AC', ci, (run << 4) | s, bitsof(zz[k], s), s); run = 0
                if last < 63: emit('AC', ci, 0x00, 0, 0)
    dcs, acs = [], []
    def col(kind, *a):
        if kind == 'DC': dcs.append(a[1])
        elif kind == 'AC': acs.append(a[1])
    walk(col)
    dct, dcspec = make_table(dcs); act, acspec = make_table(acs)
    bw = Bits(); out = bytearray()
    def emit(kind, *a):
        nonlocal bw
        if kind == 'RST':
            bw.flush(); out.extend(bw.out); out.extend(bytes([0xFF, 0xD0 + (a[0] & 7)])); bw = Bits(); return
        if kind == 'DC':
            code, L = dct[a[1]]; bw.put(code, L)
            if a[1]: bw.put(a[2], a[1])
        else:
            code, L = act[a[1]]; bw.put(code, L)
            if a[3]: bw.put(a[2], a[3])
    walk(emit); bw.flush(); out.extend(bw.out)
    f = bytearray(b'\xFF\xD8')
    for i, q in enumerate(qts):
        q = np.asarray(q, np.int64).reshape(64)[ZIGZAG]
        if q.max() > 255:
            body = bytes([0x10 | i]) + b''.join(int(v).to_bytes(2, 'big') for v in q)
        else:
            body = bytes([i]) + bytes(int(v) for v in q)
        f += b'\xFF\xDB' + (len(body) + 2).to_bytes(2, 'big') + body
    sof = bytes([8]) + H.to_bytes(2, 'big') + W.to_bytes(2, 'big') + bytes([len(comps)])
    for c in comps: sof += bytes([c[0], (c[1] << 4) | c[2], c[3]])
    f += b'\xFF\xC1' + (len(sof) + 2).to_bytes(2, 'big') + sof
    for cls, spec in ((0x00, dcspec), (0x10, acspec)):
        f += b'\xFF\xC4' + (len(spec) + 3).to_bytes(2, 'big') + bytes([cls]) + spec
    if restart:
        f += b'\xFF\xDD\x00\x04' + restart.to_bytes(2, 'big')
    sos = bytes([len(comps)]) + b''.join(bytes([c[0], 0x00]) for c in comps) + bytes([0, 63, 0])
    f += b'\xFF\xDA' + (len(sos) + 2).to_bytes(2, 'big') + sos + out + b'\xFF\xD9'
    open(path, 'wb').write(f)
