"""Pure-Python model of libjpeg-turbo 3.2.0's arithmetic entropy decoder (src/jdarith.c, src/jaricom.c)
plus just enough marker parsing (src/jdmarker.c) to decode whole files into DCT coefficients.

Research scratch for /work/notes/jpeg-spec-2.md.  Output: per component an int16 array
(rows_in_blocks, cols_in_blocks, 8, 8) in natural order, covering the padded MCU grid.

    decode_file(bytes) -> dict(comps=[...], coefs=[arrays], qt={..}, W, H, progressive, warnings)
"""
import numpy as np

# Table D.2 (index: Qe, Next_Index_LPS, Next_Index_MPS, Switch_MPS) + entry 113 (fixed 0.5)
_D2 = [
    (0x5a1d, 1, 1, 1), (0x2586, 14, 2, 0), (0x1114, 16, 3, 0), (0x080b, 18, 4, 0), (0x03d8, 20, 5, 0),
    (0x01da, 23, 6, 0), (0x00e5, 25, 7, 0), (0x006f, 28, 8, 0), (0x0036, 30, 9, 0), (0x001a, 33, 10, 0),
    (0x000d, 35, 11, 0), (0x0006, 9, 12, 0), (0x0003, 10, 13, 0), (0x0001, 12, 13, 0), (0x5a7f, 15, 15, 1),
    (0x3f25, 36, 16, 0), (0x2cf2, 38, 17, 0), (0x207c, 39, 18, 0), (0x17b9, 40, 19, 0), (0x1182, 42, 20, 0),
    (0x0cef, 43, 21, 0), (0x09a1, 45, 22, 0), (0x072f, 46, 23, 0), (0x055c, 48, 24, 0), (0x0406, 49, 25, 0),
    (0x0303, 51, 26, 0), (0x0240, 52, 27, 0), (0x01b1, 54, 28, 0), (0x0144, 56, 29, 0), (0x00f5, 57, 30, 0),
    (0x00b7, 59, 31, 0), (0x008a, 60, 32, 0), (0x0068, 62, 33, 0), (0x004e, 63, 34, 0), (0x003b, 32, 35, 0),
    (0x002c, 33, 9, 0), (0x5ae1, 37, 37, 1), (0x484c, 64, 38, 0), (0x3a0d, 65, 39, 0), (0x2ef1, 67, 40, 0),
    (0x261f, 68, 41, 0), (0x1f33, 69, 42, 0), (0x19a8, 70, 43, 0), (0x1518, 72, 44, 0), (0x1177, 73, 45, 0),
    (0x0e74, 74, 46, 0), (0x0bfb, 75, 47, 0), (0x09f8, 77, 48, 0), (0x0861, 78, 49, 0), (0x0706, 79, 50, 0),
    (0x05cd, 48, 51, 0), (0x04de, 50, 52, 0), (0x040f, 50, 53, 0), (0x0363, 51, 54, 0), (0x02d4, 52, 55, 0),
    (0x025c, 53, 56, 0), (0x01f8, 54, 57, 0), (0x01a4, 55, 58, 0), (0x0160, 56, 59, 0), (0x0125, 57, 60, 0),
    (0x00f6, 58, 61, 0), (0x00cb, 59, 62, 0), (0x00ab, 61, 63, 0), (0x008f, 61, 32, 0), (0x5b12, 65, 65, 1),
    (0x4d04, 80, 66, 0), (0x412c, 81, 67, 0), (0x37d8, 82, 68, 0), (0x2fe8, 83, 69, 0), (0x293c, 84, 70, 0),
    (0x2379, 86, 71, 0), (0x1edf, 87, 72, 0), (0x1aa9, 87, 73, 0), (0x174e, 72, 74, 0), (0x1424, 72, 75, 0),
    (0x119c, 74, 76, 0), (0x0f6b, 74, 77, 0), (0x0d51, 75, 78, 0), (0x0bb6, 77, 79, 0), (0x0a40, 77, 48, 0),
    (0x5832, 80, 81, 1), (0x4d1c, 88, 82, 0), (0x438e, 89, 83, 0), (0x3bdd, 90, 84, 0), (0x34ee, 91, 85, 0),
    (0x2eae, 92, 86, 0), (0x299a, 93, 87, 0), (0x2516, 86, 71, 0), (0x5570, 88, 89, 1), (0x4ca9, 95, 90, 0),
    (0x44d9, 96, 91, 0), (0x3e22, 97, 92, 0), (0x3824, 99, 93, 0), (0x32b4, 99, 94, 0), (0x2e17, 93, 86, 0),
    (0x56a8, 95, 96, 1), (0x4f46, 101, 97, 0), (0x47e5, 102, 98, 0), (0x41cf, 103, 99, 0), (0x3c3d, 104, 100, 0),
    (0x375e, 99, 93, 0), (0x5231, 105, 102, 0), (0x4c0f, 106, 103, 0), (0x4639, 107, 104, 0), (0x415e, 103, 99, 0),
    (0x5627, 105, 106, 1), (0x50e7, 108, 107, 0), (0x4b85, 109, 103, 0), (0x5597, 110, 109, 0), (0x504f, 111, 107, 0),
    (0x5a10, 110, 111, 1), (0x5522, 112, 109, 0), (0x59eb, 112, 111, 1), (0x5a1d, 113, 113, 0)]
# libjpeg packing (jaricom.c macro V): Qe<<16 | NMPS<<8 | Switch<<7 | NLPS
ARITAB = [(qe << 16) | (nm << 8) | (sw << 7) | nl for (qe, nl, nm, sw) in _D2]

ZZ = [0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21,
      28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61,
      54, 47, 55, 62, 63] + [63] * 16   # jpeg_natural_order with the 16 guard entries


def i16(v):
    return ((v + 0x8000) & 0xFFFF) - 0x8000


class CantSuspend(Exception):
    pass


class Src:
    """Byte source + the marker helpers of jdmarker.c that the entropy decoder uses."""
    def __init__(self, data, pos=0):
        self.d, self.p, self.unread_marker, self.warnings = data, pos, 0, []

    def get_byte(self):
        if self.p >= len(self.d):
            raise CantSuspend()
        b = self.d[self.p]; self.p += 1
        return b

    def next_marker(self):
        discarded = 0
        while True:
            c = self.get_byte()
            while c != 0xFF:
                discarded += 1; c = self.get_byte()
            c = self.get_byte()
            while c == 0xFF:
                c = self.get_byte()
            if c != 0:
                break
            discarded += 2
        if discarded:
            self.warnings.append('EXTRANEOUS_DATA %d' % discarded)
        self.unread_marker = c

    def read_restart_marker(self, state):
        if self.unread_marker == 0:
            self.next_marker()
        want = state['next_restart_num']
        if self.unread_marker == 0xD0 + want:
            self.unread_marker = 0
        else:
            self.resync(want)
        state['next_restart_num'] = (want + 1) & 7

    def resync(self, desired):
        self.warnings.append('MUST_RESYNC %02x %d' % (self.unread_marker, desired))
        while True:
            m = self.unread_marker
            if m < 0xC0:
                action = 2
            elif m < 0xD0 or m > 0xD7:
                action = 3
            elif m in (0xD0 + ((desired + 1) & 7), 0xD0 + ((desired + 2) & 7)):
                action = 3
            elif m in (0xD0 + ((desired - 1) & 7), 0xD0 + ((desired - 2) & 7)):
                action = 2
            else:
                action = 1
            if action == 1:
                self.unread_marker = 0; return
            if action == 3:
                return
            self.next_marker()


class Arith:
    def __init__(self, src):
        self.src = src
        self.reset()

    def reset(self):
        self.c, self.a, self.ct = 0, 0, -16

    def fail(self):          # JWRN_ARITH_BAD_CODE: ct = -1 until the next restart / scan
        self.src.warnings.append('ARITH_BAD_CODE')
        self.ct = -1

    def decode(self, st, i):
        """st: bytearray of statistics bins, i: index.  Returns 0/1 (jdarith.c arith_decode)."""
        while self.a < 0x8000:
            self.ct -= 1
            if self.ct < 0:
                if self.src.unread_marker:
                    data = 0
                else:
                    data = self.src.get_byte()
                    if data == 0xFF:
                        data = self.src.get_byte()
                        while data == 0xFF:
                            data = self.src.get_byte()
                        if data == 0:
                            data = 0xFF
                        else:
                            self.src.unread_marker = data
                            data = 0
                self.c = (self.c << 8) | data
                self.ct += 8
                if self.ct < 0:
                    self.ct += 1
                    if self.ct == 0:
                        self.a = 0x8000
            self.a <<= 1
        sv = st[i]
        qe = ARITAB[sv & 0x7F]
        nl = qe & 0xFF; qe >>= 8
        nm = qe & 0xFF; qe >>= 8
        temp = self.a - qe
        self.a = temp
        temp <<= self.ct
        if self.c >= temp:
            self.c -= temp
            if self.a < qe:
                self.a = qe
                st[i] = (sv & 0x80) ^ nm
            else:
                self.a = qe
                st[i] = (sv & 0x80) ^ nl
                sv ^= 0x80
        elif self.a < 0x8000:
            if self.a < qe:
                st[i] = (sv & 0x80) ^ nl
                sv ^= 0x80
            else:
                st[i] = (sv & 0x80) ^ nm
        return sv >> 7


def _u16(d, p):
    return (d[p] << 8) | d[p + 1]


def decode_file(data):
    src = Src(data)
    frame, comps, qt, coefs = None, [], {}, None
    dcL, dcU, acK = [0] * 16, [1] * 16, [5] * 16
    restart_interval = 0
    dc_stats = [None] * 16
    ac_stats = [None] * 16
    coef_bits = None
    scan_no = 0
    if data[0] != 0xFF or data[1] != 0xD8:
        raise ValueError('no SOI')
    src.p = 2
    while True:
        if src.unread_marker == 0:
            src.next_marker()
        m = src.unread_marker; src.unread_marker = 0
        if m == 0xD9:
            break
        if 0xD0 <= m <= 0xD7 or m == 0x01:
            continue
        L = _u16(data, src.p); seg = data[src.p + 2: src.p + L]; src.p += L
        if m == 0xDB:
            i = 0
            while i < len(seg):
                pq, tq = seg[i] >> 4, seg[i] & 15; i += 1
                vals = [(_u16(seg, i + 2 * k) if pq else seg[i + k]) for k in range(64)]
                i += 128 if pq else 64
                q = np.zeros(64, np.int64)
                for k in range(64):
                    q[ZZ[k]] = vals[k]
                qt[tq] = q.reshape(8, 8)
        elif m == 0xCC:
            for i in range(0, len(seg), 2):
                idx, val = seg[i], seg[i + 1]
                if idx >= 16:
                    acK[idx - 16] = val
                else:
                    dcL[idx], dcU[idx] = val & 15, val >> 4
        elif m == 0xDD:
            restart_interval = _u16(seg, 0)
        elif m in (0xC9, 0xCA):
            progressive = m == 0xCA
            H, W, nf = _u16(seg, 1), _u16(seg, 3), seg[5]
            for k in range(nf):
                cid, hv, tq = seg[6 + 3 * k: 9 + 3 * k]
                comps.append(dict(id=cid, h=hv >> 4, v=hv & 15, tq=tq))
            hmax = max(c['h'] for c in comps); vmax = max(c['v'] for c in comps)
            mcux = -(-W // (8 * hmax)); mcuy = -(-H // (8 * vmax))
            coefs = []
            for c in comps:
                c['wb'] = -(-(-(-W * c['h'] // hmax)) // 8)      # width_in_blocks
                c['hb'] = -(-(-(-H * c['v'] // vmax)) // 8)      # height_in_blocks
                coefs.append(np.zeros((mcuy * c['v'], mcux * c['h'], 8, 8), np.int64))
            coef_bits = [[-1] * 64 for _ in comps]
            frame = dict(W=W, H=H, hmax=hmax, vmax=vmax, mcux=mcux, mcuy=mcuy, progressive=progressive)
        elif m == 0xDA:
            scan_no += 1
            ns = seg[0]
            sc = []
            for k in range(ns):
                cid, tt = seg[1 + 2 * k], seg[2 + 2 * k]
                ci = [c['id'] for c in comps].index(cid)
                sc.append((ci, tt >> 4, tt & 15))
            Ss, Se, Ah, Al = seg[1 + 2 * ns], seg[2 + 2 * ns], seg[3 + 2 * ns] >> 4, seg[3 + 2 * ns] & 15
            _scan(src, frame, comps, coefs, sc, Ss, Se, Ah, Al, dcL, dcU, acK, dc_stats, ac_stats,
                  restart_interval, coef_bits, scan_no)
        else:
            pass   # APPn, COM, etc.
    for c in coefs:
        c[...] = ((c + 0x8000) & 0xFFFF) - 0x8000
    return dict(comps=comps, coefs=coefs, qt=qt, frame=frame, warnings=src.warnings)


def _scan(src, fr, comps, coefs, sc, Ss, Se, Ah, Al, dcL, dcU, acK, dc_stats, ac_stats, RI, coef_bits, scan_no):
    prog = fr['progressive']
    # progression bookkeeping (only the parts that influence decoding results)
    if prog:
        for ci, _, _ in sc:
            for k in range(Ss, Se + 1):
                coef_bits[ci][k] = Al
    for ci, td, ta in sc:
        if not prog or (Ss == 0 and Ah == 0):
            dc_stats[td] = bytearray(64)
        if not prog or Ss:
            ac_stats[ta] = bytearray(256)
    ar = Arith(src)
    fixed = bytearray([113])
    last_dc = [0] * len(sc)
    dc_ctx = [0] * len(sc)
    rst = dict(next_restart_num=0)
    # MCU geometry (jdinput.c per_scan_setup)
    if len(sc) == 1:
        c = comps[sc[0][0]]
        blocks = [[(0, by, bx)] for by in range(c['hb']) for bx in range(c['wb'])]
    else:
        blocks = []
        for my in range(fr['mcuy']):
            for mx in range(fr['mcux']):
                b = []
                for si, (ci, _, _) in enumerate(sc):
                    c = comps[ci]
                    for yy in range(c['v']):
                        for xx in range(c['h']):
                            b.append((si, my * c['v'] + yy, mx * c['h'] + xx))
                blocks.append(b)
    restarts_to_go = RI

    def dc_diff(si, td):
        st = dc_stats[td]
        s0 = dc_ctx[si]
        if ar.decode(st, s0) == 0:
            dc_ctx[si] = 0
            return 0, True
        sign = ar.decode(st, s0 + 1)
        i = s0 + 2 + sign
        m = ar.decode(st, i)
        if m:
            i = 20
            while ar.decode(st, i):
                m <<= 1
                if m == 0x8000:
                    return None, False          # JWRN_ARITH_BAD_CODE, ct = -1
                i += 1
        if m < ((1 << dcL[td]) >> 1):
            dc_ctx[si] = 0
        elif m > ((1 << dcU[td]) >> 1):
            dc_ctx[si] = 12 + sign * 4
        else:
            dc_ctx[si] = 4 + sign * 4
        v = m
        i += 14
        m >>= 1
        while m:
            if ar.decode(st, i):
                v |= m
            m >>= 1
        v += 1
        return (-v if sign else v), True

    def ac_value(st, i, k, ta):
        """i = 3*(k-1); returns v or None on magnitude overflow."""
        sign = ar.decode(fixed, 0)
        i += 2
        m = ar.decode(st, i)
        if m:
            if ar.decode(st, i):
                m <<= 1
                i = 189 if k <= acK[ta] else 217
                while ar.decode(st, i):
                    m <<= 1
                    if m == 0x8000:
                        return None
                    i += 1
        v = m
        i += 14
        m >>= 1
        while m:
            if ar.decode(st, i):
                v |= m
            m >>= 1
        v += 1
        return -v if sign else v

    for mcu in blocks:
        if RI:
            if restarts_to_go == 0:
                src.read_restart_marker(rst)
                for si, (ci, td, ta) in enumerate(sc):
                    if not prog or (Ss == 0 and Ah == 0):
                        dc_stats[td][:] = bytes(64); last_dc[si] = 0; dc_ctx[si] = 0
                    if not prog or Ss:
                        ac_stats[ta][:] = bytes(256)
                ar.reset()
                restarts_to_go = RI
            restarts_to_go -= 1
        if prog and Ss == 0 and Ah:                      # DC refine: no ct == -1 test in the C code
            for si, by, bx in mcu:
                ci = sc[si][0]
                if ar.decode(fixed, 0):
                    coefs[ci][by, bx, 0, 0] |= (1 << Al)
            continue
        if ar.ct == -1:
            continue
        if not prog or Ss == 0:                          # sequential MCU or DC first
            for si, by, bx in mcu:
                ci, td, ta = sc[si]
                blk = coefs[ci][by, bx].reshape(64)
                diff, ok = dc_diff(si, td)
                if not ok:
                    ar.fail(); break
                last_dc[si] = (last_dc[si] + diff) & 0xFFFF
                if prog:
                    blk[0] = i16((last_dc[si] << Al) & 0xFFFF)
                    continue
                blk[0] = i16(last_dc[si])
                st = ac_stats[ta]
                k = 1
                bad = False
                while k <= 63:
                    i = 3 * (k - 1)
                    if ar.decode(st, i):
                        break
                    while ar.decode(st, i + 1) == 0:
                        i += 3; k += 1
                        if k > 63:
                            bad = True; break
                    if bad:
                        break
                    v = ac_value(st, i, k, ta)
                    if v is None:
                        bad = True; break
                    blk[ZZ[k]] = i16(v)
                    k += 1
                if bad:
                    ar.fail(); break
            continue
        ci, td, ta = sc[0]
        si, by, bx = mcu[0]
        blk = coefs[ci][by, bx].reshape(64)
        st = ac_stats[ta]
        if Ah == 0:                                      # AC first
            k = Ss
            while k <= Se:
                i = 3 * (k - 1)
                if ar.decode(st, i):
                    break
                bad = False
                while ar.decode(st, i + 1) == 0:
                    i += 3; k += 1
                    if k > Se:
                        bad = True; break
                if bad:
                    ar.fail(); break
                v = ac_value(st, i, k, ta)
                if v is None:
                    ar.fail(); break
                blk[ZZ[k]] = i16((v << Al) & 0xFFFF)
                k += 1
        else:                                            # AC refine
            p1 = 1 << Al
            m1 = -(1 << Al)
            kex = Se
            while kex > 0 and blk[ZZ[kex]] == 0:
                kex -= 1
            k = Ss
            while k <= Se:
                i = 3 * (k - 1)
                if k > kex and ar.decode(st, i):
                    break
                bad = False
                while True:
                    pos = ZZ[k]
                    if blk[pos]:
                        if ar.decode(st, i + 2):
                            blk[pos] = i16(blk[pos] + (m1 if blk[pos] < 0 else p1))
                        break
                    if ar.decode(st, i + 1):
                        blk[pos] = m1 if ar.decode(fixed, 0) else p1
                        break
                    i += 3; k += 1
                    if k > Se:
                        bad = True; break
                if bad:
                    ar.fail(); break
                k += 1
