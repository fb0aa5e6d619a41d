//! Walking a JPEG's marker segments up to the first scan, with bounds checks:
//! the frame header (coding process, precision, size) and the APPn payloads.

/// The marker segments before the first scan: `(marker, payload)`.
pub(crate) struct Segments<'a> {
    jpeg: &'a [u8],
    at: usize,
}

/// The segments of `jpeg` before its first scan (nothing if it is no JPEG).
pub(crate) fn segments(jpeg: &[u8]) -> Segments<'_> {
    let at = if jpeg.starts_with(&[0xFF, 0xD8]) {
        2
    } else {
        usize::MAX
    };
    Segments { jpeg, at }
}

impl<'a> Iterator for Segments<'a> {
    type Item = (u8, &'a [u8]);

    fn next(&mut self) -> Option<(u8, &'a [u8])> {
        loop {
            let at = self.at;
            let [ff, marker] = *self.jpeg.get(at..at.checked_add(2)?)? else {
                return None;
            };
            if ff != 0xFF {
                return None;
            }
            if marker == 0xFF {
                self.at += 1; // a fill byte
                continue;
            }
            // Start of scan or end of image: the headers are over.
            if marker == 0xDA || marker == 0xD9 {
                return None;
            }
            let len = self.jpeg.get(at + 2..at + 4)?;
            let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
            let payload = self.jpeg.get(at + 4..(at + 2).checked_add(len)?)?;
            self.at = at.checked_add(2 + len)?;
            return Some((marker, payload));
        }
    }
}

/// What a JPEG's frame header (SOFn) says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    /// The SOF marker: 0xC0-0xC3, 0xC5-0xC7, 0xC9-0xCB, 0xCD-0xCF.
    pub(crate) marker: u8,
    /// Bits per sample.
    pub(crate) precision: u8,
    pub(crate) width: u16,
    pub(crate) height: u16,
    /// Colour components.
    pub(crate) components: u8,
    /// The components' 8x8 blocks per MCU, `sum(h_i * v_i)` over the
    /// components the header lists (1 when it is cut short).
    pub(crate) blocks_per_mcu: u32,
    /// The MCU's area in blocks, `max(h_i) * max(v_i)` (1 when the header is
    /// cut short): the image has about `blocks_per_mcu / mcu_blocks` blocks
    /// per 64 pixels.
    pub(crate) mcu_blocks: u32,
}

/// The colour transform of an Adobe APP14 segment (0: none, the samples are
/// RGB or CMYK; 1: YCbCr; 2: YCCK), if the file has one before its first scan.
pub(crate) fn adobe_transform(jpeg: &[u8]) -> Option<u8> {
    segments(jpeg).find_map(|(marker, p)| {
        (marker == 0xEE && p.len() >= 12 && p.starts_with(b"Adobe")).then(|| p[11])
    })
}

/// The frame header of `jpeg`, if it can be found before the first scan.
pub(crate) fn frame(jpeg: &[u8]) -> Option<Frame> {
    segments(jpeg).find_map(|(marker, p)| {
        let sof = matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
        (sof && p.len() >= 6).then(|| {
            let (blocks_per_mcu, mcu_blocks) = FrameComponents::parse(p)
                .and_then(|f| f.block_shares())
                .unwrap_or((1, 1));
            Frame {
                marker,
                precision: p[0],
                height: u16::from_be_bytes([p[1], p[2]]),
                width: u16::from_be_bytes([p[3], p[4]]),
                components: p[5],
                blocks_per_mcu,
                mcu_blocks,
            }
        })
    })
}

/// What a walk over a whole JPEG finds after its headers: the scans, whether
/// each has the restart markers its restart interval requires, and where the
/// coded data ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ScanLayout {
    /// The first scan (counting from 1) with fewer restart markers than its
    /// restart interval requires: `(scan, found, expected)`.
    pub(crate) missing_restarts: Option<(u32, u32, u32)>,
    /// The offset of the end-of-image marker that ends the last scan's coded
    /// data, when one does (a file cut inside a scan has none).
    pub(crate) final_eoi: Option<usize>,
}

/// One frame component: identifier and sampling factors.
#[derive(Clone, Copy, Default)]
pub(super) struct Component {
    pub(super) id: u8,
    pub(super) h: u8,
    pub(super) v: u8,
}

/// The frame's components (at most 4 in any file our decoders accept).
#[derive(Default)]
pub(super) struct FrameComponents {
    width: u32,
    height: u32,
    list: [Component; 4],
    count: usize,
}

impl FrameComponents {
    /// The components of a frame header's payload (`None` when it is cut short).
    pub(super) fn parse(p: &[u8]) -> Option<FrameComponents> {
        let (height, width, n) = (
            u32::from(u16::from_be_bytes([*p.get(1)?, *p.get(2)?])),
            u32::from(u16::from_be_bytes([*p.get(3)?, *p.get(4)?])),
            usize::from(*p.get(5)?),
        );
        let mut f = FrameComponents {
            width,
            height,
            count: n.min(4),
            ..FrameComponents::default()
        };
        for (i, c) in f.list.iter_mut().take(n.min(4)).enumerate() {
            let at = 6 + 3 * i;
            let s = *p.get(at + 1)?;
            *c = Component {
                id: *p.get(at)?,
                h: (s >> 4).max(1),
                v: (s & 15).max(1),
            };
        }
        Some(f)
    }

    /// The components, in frame order.
    #[cfg_attr(not(feature = "turbojpeg"), allow(dead_code))]
    pub(super) fn list(&self) -> &[Component] {
        &self.list[..self.count]
    }

    /// `(sum(h_i * v_i), max(h_i) * max(v_i))`: the blocks of every
    /// component in one MCU, and the MCU's area in blocks of the most
    /// sampled component (`None` without components).
    fn block_shares(&self) -> Option<(u32, u32)> {
        let list = &self.list[..self.count];
        let hmax = u32::from(list.iter().map(|c| c.h).max()?);
        let vmax = u32::from(list.iter().map(|c| c.v).max()?);
        let sum = list.iter().map(|c| u32::from(c.h) * u32::from(c.v)).sum();
        Some((sum, hmax * vmax))
    }

    /// MCUs in a scan of the components `ids` (JPEG spec A.2): one
    /// component's scan is non-interleaved (an MCU is one block), several
    /// are interleaved (an MCU covers the largest sampling factors).
    pub(super) fn mcus(&self, ids: &[u8]) -> Option<u64> {
        let list = &self.list[..self.count];
        let hmax = u32::from(list.iter().map(|c| c.h).max()?);
        let vmax = u32::from(list.iter().map(|c| c.v).max()?);
        let (w, h) = (self.width, self.height);
        if w == 0 || h == 0 {
            return None; // the height comes later (DNL): nothing to check against
        }
        if let [id] = ids {
            let c = list.iter().find(|c| c.id == *id)?;
            let cw = (w * u32::from(c.h)).div_ceil(hmax);
            let ch = (h * u32::from(c.v)).div_ceil(vmax);
            return Some(u64::from(cw.div_ceil(8)) * u64::from(ch.div_ceil(8)));
        }
        Some(u64::from(w.div_ceil(8 * hmax)) * u64::from(h.div_ceil(8 * vmax)))
    }
}

/// Walks every marker of `jpeg` up to the end-of-image marker (or the end of
/// the file), looking inside each scan's coded data only for markers (a
/// linear pass over the bytes, no decoding).
pub(crate) fn scan_layout(jpeg: &[u8]) -> ScanLayout {
    let mut layout = ScanLayout::default();
    if !jpeg.starts_with(&[0xFF, 0xD8]) {
        return layout;
    }
    let mut frame = FrameComponents::default();
    let (mut restart_interval, mut scans, mut at) = (0u32, 0u32, 2usize);
    loop {
        let Some([ff, marker]) = jpeg.get(at..at.saturating_add(2)).map(|m| [m[0], m[1]]) else {
            return layout;
        };
        if ff != 0xFF {
            return layout; // not a marker: the structure is broken; the decoder reports it
        }
        match marker {
            0xFF => {
                at += 1; // a fill byte
                continue;
            }
            0xD9 => {
                layout.final_eoi = (scans > 0).then_some(at);
                return layout;
            }
            0xD0..=0xD7 | 0x01 => {
                at += 2;
                continue;
            }
            _ => {}
        }
        let Some(len) = jpeg.get(at + 2..at + 4) else {
            return layout;
        };
        let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        let Some(payload) = jpeg.get(at + 4..(at + 2).saturating_add(len)) else {
            return layout;
        };
        at += 2 + len;
        match marker {
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                frame = FrameComponents::parse(payload).unwrap_or_default();
            }
            0xDD if payload.len() >= 2 => {
                restart_interval = u32::from(u16::from_be_bytes([payload[0], payload[1]]));
            }
            0xDA => {
                scans += 1;
                let n = usize::from(payload.first().copied().unwrap_or(0)).min(4);
                let mut ids = [0u8; 4];
                for (i, id) in ids.iter_mut().take(n).enumerate() {
                    *id = payload.get(1 + 2 * i).copied().unwrap_or(0);
                }
                // The coded data runs to the first marker that is not a restart.
                let (end, restarts) = coded_data_end(jpeg, at);
                at = end;
                if restart_interval == 0 || layout.missing_restarts.is_some() {
                    continue;
                }
                if let Some(mcus) = frame.mcus(&ids[..n]) {
                    let expected = mcus.div_ceil(u64::from(restart_interval)).saturating_sub(1);
                    let expected = u32::try_from(expected).unwrap_or(u32::MAX);
                    if restarts < expected {
                        layout.missing_restarts = Some((scans, restarts, expected));
                    }
                }
            }
            _ => {}
        }
    }
}

/// From `at` inside a scan's coded data: the offset of the first marker
/// that is not a restart marker (or the end of the data), and how many
/// restart markers came before it.
pub(super) fn coded_data_end(jpeg: &[u8], mut at: usize) -> (usize, u32) {
    let mut restarts = 0u32;
    while let Some(off) = jpeg
        .get(at..)
        .and_then(|rest| rest.iter().position(|&b| b == 0xFF))
    {
        at += off;
        match jpeg.get(at + 1) {
            // Stuffed zero, or fill bytes before a marker.
            Some(0x00) => at += 2,
            Some(0xFF) => at += 1,
            Some(0xD0..=0xD7) => {
                restarts = restarts.saturating_add(1);
                at += 2;
            }
            Some(_) => return (at, restarts),
            None => return (jpeg.len(), restarts),
        }
    }
    (jpeg.len(), restarts)
}
